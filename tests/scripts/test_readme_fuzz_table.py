"""README.md's fuzzing table names every fuzz target in tests/fuzz/, and only those: a
target added without its row (what it parses, what it checks) fails here."""

from __future__ import annotations

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]


def table_targets(readme: str) -> list[str]:
    """The first column of the table under README's **Fuzzing.** paragraph."""
    section = readme.split("**Fuzzing.**", 1)[1]
    rows = re.findall(r"^\| `([a-z_]+)` \|", section.split("\n\n", 2)[1], flags=re.M)
    return rows


def test_the_fuzz_table_lists_every_target():
    targets = sorted(p.name.removesuffix("_fuzzer.cc")
                     for p in (REPO / "tests" / "fuzz").glob("*_fuzzer.cc"))
    listed = table_targets((REPO / "README.md").read_text())
    assert len(listed) == len(set(listed)), "a target has two rows"
    assert sorted(listed) == targets


def test_the_parser_finds_the_rows_of_a_table():
    readme = "x\n**Fuzzing.** about\nmore\n\n| target | parser |\n| --- | --- |\n| `a_b` | p |\n| `c` | q |\n\nafter\n| `d` | r |\n"
    assert table_targets(readme) == ["a_b", "c"]
