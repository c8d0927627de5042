#!/usr/bin/env bash
# Installs everything the tests need into .venv (Python packages and the pinned pi engine),
# then runs lint, format check, type check and the whole test suite, live engine tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
.venv/bin/wizard engines install pi
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
.venv/bin/mypy
.venv/bin/pytest "$@"
