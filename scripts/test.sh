#!/usr/bin/env bash
# Installs everything the tests need (the sandbox's Debian packages; Python packages and the
# pinned pi engine into .venv), then runs lint, format check, type check and the whole test
# suite, live engine tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
# The OS sandbox needs bubblewrap, socat and ripgrep on Linux (the live tests run inside it).
if [ "$(uname -s)" = Linux ] && ! { command -v bwrap && command -v socat && command -v rg; } >/dev/null; then
  as_root=""; [ "$(id -u)" = 0 ] || as_root="sudo"
  install="$as_root apt-get install -y -q bubblewrap socat ripgrep"
  $install >/dev/null || { $as_root apt-get update -q >/dev/null && $install >/dev/null; }
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test,anthropic,fleet]'
# wizard's bytecode, as an install from a wheel has it: an editable install has none where
# writing it is turned off (PYTHONDONTWRITEBYTECODE), and every start compiled every module.
.venv/bin/python -m compileall -q src
.venv/bin/wizard engines install pi
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
.venv/bin/mypy
.venv/bin/pytest "$@"
# The command line on the lowest Typer and Click the dependency range allows (pip picks the
# newest above; the range's floor must hold too).
lowest="$(mktemp -d)"; trap 'rm -rf "$lowest"' EXIT
.venv/bin/python -m pip install --quiet --no-deps --target "$lowest" \
  "typer==0.12.5" "typer-slim==0.12.5" "click==8.0.0"
PYTHONPATH="$lowest" .venv/bin/pytest -q -p no:cacheprovider tests/test_cli.py tests/test_readme.py
