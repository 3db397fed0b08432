#!/usr/bin/env bash
# The checks that run before the tests (.ci/run): lint and import order (ruff), types (mypy), and the project's
# own rules (tests/test_layers.py: imports run downhill, every command module registered), and the query headers'
# contract (scripts/check_headers.py: strict parse; columns change only with the version, against queries/headers.lock). Settings are in
# pyproject.toml. Needs the check and test extras: pip install -e '.[check,test]'.
# `ruff check --fix .` repairs the import order (and the other fixable findings) in place.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in ruff mypy; do
  command -v "$tool" >/dev/null || { echo "check: $tool not found; pip install -e '.[check,test]'" >&2; exit 1; }
done
echo "check: ruff $(ruff --version | cut -d' ' -f2)"
ruff check .
echo "check: $(mypy --version | cut -d' ' -f1-2)"
mypy
echo "check: query headers"
python scripts/check_headers.py
echo "check: project rules"
python -m pytest -q -p no:cacheprovider tests/test_layers.py
