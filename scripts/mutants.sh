#!/usr/bin/env bash
# The mutation check (scripts/mutants.py): disables each guard of scripts/mutants.toml in
# turn on a scratch copy, rebuilds, runs the tests that must catch it, reports survivors.
#   scripts/mutants.sh [--list] [--scratch DIR] [NAME-SUBSTRING...]
set -euo pipefail
exec python3 "$(dirname "$0")/mutants.py" "$@"
