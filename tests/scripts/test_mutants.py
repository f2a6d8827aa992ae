"""scripts/mutants.py, the mutation check: every guard it lists still applies to the tree
(its text found exactly once), and a guard is applied, or refused, exactly as listed."""

from __future__ import annotations

import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import mutants  # noqa: E402


def test_every_listed_guard_applies_to_the_tree():
    guards = mutants.load()
    assert len(guards) >= 10
    mutants.check_list(guards)  # raises ListError naming the guard whose text is gone


def guard(**fields) -> mutants.Guard:
    return mutants.Guard(**{"name": "g", "file": "f.cc", "find": "", "replace": "",
                            "ctest": "T", **fields})


def test_a_guard_is_replaced_once_and_after_its_anchor():
    text = "void A() { check(); }\nvoid B() { check(); }\n"
    assert mutants.mutate(text, guard(find="void A() { check", replace="void A() { skip")) == \
        "void A() { skip(); }\nvoid B() { check(); }\n"
    assert mutants.mutate(text, guard(after="void B()", find="check();", replace="skip();")) == \
        "void A() { check(); }\nvoid B() { skip(); }\n"


@pytest.mark.parametrize("fields, message", [
    ({"find": "check();"}, "'find' text found 2 times"),           # ambiguous
    ({"find": "verify();"}, "'find' text found 0 times"),          # gone
    ({"after": "void C()", "find": "check();"}, "'after' text found 0 times"),
    ({"after": "void B()", "find": "void A"}, "found 0 times in f.cc after its anchor"),
])
def test_a_guard_that_does_not_match_exactly_is_refused(fields, message):
    with pytest.raises(mutants.ListError, match=message):
        mutants.mutate("void A() { check(); }\nvoid B() { check(); }\n", guard(**fields))


def test_a_guard_without_a_test_is_refused(tmp_path):
    listing = tmp_path / "m.toml"
    listing.write_text('[[guard]]\nname = "x"\nfile = "f"\nfind = "a"\nreplace = "b"\n')
    with pytest.raises(mutants.ListError, match="names no test"):
        mutants.load(listing)
