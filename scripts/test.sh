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
# The tests that meet wizard's dependencies' APIs (the command line, the UI, analytics,
# schemas, proofs' parsers, the proxy's HTTP, the engine's Node, the MCP probe, Temporal)
# once more on the lowest release each range allows, as uv resolves it (pip installs the
# newest; a range's floor must hold too), with the test tools at their newest...
.venv/bin/uv venv --quiet --allow-existing .venv-lowest
VIRTUAL_ENV=.venv-lowest .venv/bin/uv pip install --quiet --resolution lowest-direct \
  -e '.[fleet,anthropic]'
VIRTUAL_ENV=.venv-lowest .venv/bin/uv pip install --quiet pytest pytest-asyncio pytest-timeout \
  hypothesis pyte anthropic openai
.venv-lowest/bin/python -m pytest -q -p no:cacheprovider -m "not live" tests/test_cli.py \
  tests/test_readme.py tests/ui tests/test_analytics.py tests/test_schemas.py \
  tests/runner/proofs tests/harness/test_proxy.py tests/engines tests/fleet/test_cli_fleet.py \
  tests/fleet/test_replay.py
.venv-lowest/bin/python -m pytest -q -p no:cacheprovider tests/live/test_proofs_live.py \
  -k "mcp or capture or weather"  # the MCP probe on mcp 1.x, the range's floor
# ...and the command line on the lowest Click beside the lowest Typer (Click comes with Typer,
# so uv's lowest resolution of wizard's own ranges leaves it at its newest).
lowest="$(mktemp -d)"; trap 'rm -rf "$lowest"' EXIT
.venv/bin/python -m pip install --quiet --no-deps --target "$lowest" "typer==0.16.0" "click==8.0.0"
PYTHONPATH="$lowest" .venv/bin/pytest -q -p no:cacheprovider tests/test_cli.py tests/test_readme.py
