"""What verification checks: the program's own checks, and those a run's changes call for.

- **the program's own** (`ProgramConfig.checks`): a file the skill must write exists, a key
  the setup needs is in `.env` (read by name only, never its value), a command exits 0;
- **what changed** (the journal's list, the installed skill left out): every changed Python
  file compiles, every changed JavaScript file passes `node --check` (each file a check of its
  own), TypeScript type-checks
  when the project has a `tsconfig.json` and a local `typescript`, and changed JSON, TOML and
  YAML files still parse (a `tsc` the run replaced is not trusted with the verdict);
- **the project's own scripts** (`--verify full`): `npm run build`, `npm test`, pytest. npm
  runs them through the runners in `node_modules/.bin`: if the run changed one of those, or
  the package it points into, the check fails without running, since its verdict would be
  the agent's.

Data files are parsed in process; they are data, nothing in them runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from wizard.layout import SKILL_FILES
from wizard.names import shown
from wizard.programs.types import ProgramCheck
from wizard.tools.paths import ProjectRoot, Refusal

SCRIPT_TIMEOUT_S = 900.0  # the project's own test and build scripts (`--verify full`)
# A file missing from the tree a check runs on (one the run added, on the tree before it)
# has nothing to parse there.
# Compiled, not only parsed: `await` outside a function, a duplicate argument or `return` at
# module level parse, then fail on import.
_PYTHON_COMPILE = (
    "import os, sys\n"
    "f = sys.argv[1]\n"
    "if os.path.exists(f): compile(open(f, 'rb').read(), f, 'exec', dont_inherit=True)"
)
# The project's tests, by the real pytest: not the project's folder on `sys.path` (a root
# `pytest.py` is never what runs), and a session whose every test was skipped is no pass.
_PYTEST = (
    "import sys\n"
    "sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
    "import pytest\n"
    "class Passes:\n"
    "    count = 0\n"
    "    def pytest_runtest_logreport(self, report):\n"
    "        Passes.count += report.when == 'call' and report.passed\n"
    "code = int(pytest.main(['-q', '-x', '-p', 'no:cacheprovider'], plugins=[Passes()]))\n"
    "if code == 0 and not Passes.count:\n"
    "    print('wizard: no test passed (every test was skipped)')\n"
    "    code = 1\n"
    "sys.exit(code)\n"
)
# What steers pytest's verdict, from the project: plugins and hooks (`conftest.py`), its
# options (`pytest.ini`, `tox.ini`, `setup.cfg`, `[tool.pytest…]`), a module named pytest.
_PYTEST_CONFIG = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pytest.py")
_DATA_PARSERS: dict[str, Callable[[bytes], object]] = {
    ".json": json.loads,
    ".toml": lambda data: tomllib.loads(data.decode()),
    ".yaml": yaml.safe_load,
    ".yml": yaml.safe_load,
}


@dataclass(frozen=True)
class Check:
    """One check: a shell command run in a folder, or a test wizard makes itself there
    (`inline`: the failure's text, or None). A check of the project (`compare`) that fails is
    run again on the tree before the run; a program's check of what its run must leave (the
    report it writes) is not: before the run it could not pass."""

    name: str
    command: str = ""
    inline: Callable[[Path], str | None] | None = None
    compare: bool = True
    timeout: float | None = None  # the runner's when None
    # It runs the project's installed dependencies (tsc, npm scripts): on the tree before the
    # run it is compared only if the run left those as they were.
    needs_dependencies: bool = False


def checks_for(program_checks: Sequence[ProgramCheck], changed: Sequence[str], project: Path,
               *, full: bool = False, dependencies: Mapping[str, str] | None = None,
               before: Mapping[str, bytes | None] | None = None) -> list[Check]:  # fmt: skip
    """The checks a run must pass: the program's, those its changes call for, and with
    `full` the project's own test and build scripts (`dependencies`: the files the run
    changed in dependency folders, which may have replaced their runners; `before`: the
    changed files' content before the run, for the pytest options in `pyproject.toml`)."""
    checks = [_program_check(check) for check in program_checks]
    replaced = replaced_runners(project, dependencies or {})
    if full:
        steered = pytest_steered(project, changed, before)
        checks += _project_scripts(project, replaced, steered)
    present = [p for p in changed if not p.startswith(SKILL_FILES) and (project / p).is_file()]
    by_suffix: dict[str, list[str]] = {}
    for path in present:
        by_suffix.setdefault(Path(path).suffix.lower(), []).append(path)
    # Each file is checked, and compared with the tree before the run, on its own: a file that
    # was already broken excuses only itself.
    for path in by_suffix.get(".py", []):
        # Isolated (-I): not the project's folder on sys.path, so an `ast.py` the agent left
        # there is never what runs (nor PYTHON* variables, nor the user's site).
        command = f"python3 -I -c {shlex.quote(_PYTHON_COMPILE)} {shlex.quote(path)}"
        checks.append(Check(f"{path} compiles", command))
    for path in [p for s in (".js", ".mjs", ".cjs") for p in by_suffix.get(s, [])]:
        quoted = shlex.quote(path)
        checks.append(Check(f"{path} parses", f"[ ! -e {quoted} ] || node --check {quoted}"))
    typescript = by_suffix.get(".ts", []) + by_suffix.get(".tsx", [])
    local_tsc = project / "node_modules" / ".bin" / "tsc"
    if typescript and (project / "tsconfig.json").is_file() and local_tsc.exists():
        tsc = Check("TypeScript type-checks", "node_modules/.bin/tsc --noEmit",
                    needs_dependencies=True)  # fmt: skip
        # The project's own compiler: one the run replaced would judge the run's own work.
        trusted = "node_modules/.bin/tsc" not in replaced
        checks.append(tsc if trusted else _untrusted(tsc.name, replaced))
    for suffix, parse in _DATA_PARSERS.items():
        for path in by_suffix.get(suffix, []):
            checks.append(Check(f"{path} parses", inline=_parses(path, parse)))
    return checks


def replaced_runners(project: Path, dependencies: Mapping[str, str]) -> list[str]:
    """The runners in `node_modules/.bin` that the run added, changed or removed, itself or
    in the package it points into: npm puts that folder first on a script's PATH."""
    bin_folder = project / "node_modules" / ".bin"
    packages = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(bin_folder):
            if entry.is_symlink():
                target = os.path.normpath(os.path.join("node_modules/.bin", os.readlink(entry)))
                parts = target.split("/")
                depth = 3 if len(parts) > 2 and parts[1].startswith("@") else 2
                packages[f"node_modules/.bin/{entry.name}"] = "/".join(parts[:depth]) + "/"
    found = {path for path in dependencies if path.startswith("node_modules/.bin/")}
    found |= {
        runner
        for runner, package in packages.items()
        if package.startswith("node_modules/") and any(p.startswith(package) for p in dependencies)
    }
    return sorted(found)


def _untrusted(name: str, runners: Sequence[str]) -> Check:
    """A script check that fails without running: the run replaced what it would run."""
    named = ", ".join(shown(runner) for runner in runners[:3])
    reason = (
        f"{named} changed during the run: wizard does not run a runner the agent could have "
        "replaced to judge its work (reinstall the dependencies, then check again)"
    )
    return Check(name, inline=lambda _: reason, compare=False)


def pytest_steered(
    project: Path, changed: Sequence[str], before: Mapping[str, bytes | None] | None
) -> list[str]:
    """The files the run changed that steer pytest's verdict: any `conftest.py`, the root's
    options files and `pytest.py`, and a `pyproject.toml` whose pytest options changed (any
    change, when what it held before is not known)."""
    steered = [p for p in changed if p.rsplit("/", 1)[-1] == "conftest.py" or p in _PYTEST_CONFIG]
    if "pyproject.toml" in changed:
        now = None
        with contextlib.suppress(OSError):
            now = (project / "pyproject.toml").read_bytes()
        was = before.get("pyproject.toml") if before is not None else None
        if before is None or _pytest_options(was) != _pytest_options(now):
            steered.append("pyproject.toml")
    return steered


def _pytest_options(data: bytes | None) -> object:
    """The `[tool.pytest…]` tables of a `pyproject.toml`'s content (what cannot be read is
    a value of its own, never equal to a table)."""
    if data is None:
        return None
    try:
        tool = tomllib.loads(data.decode()).get("tool") or {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return object()
    if not isinstance(tool, dict):
        return {}
    return {key: value for key, value in tool.items() if key.startswith("pytest")}


def _project_scripts(
    project: Path, replaced: Sequence[str] = (), steered: Sequence[str] = ()
) -> list[Check]:
    """The project's own build and tests (`--verify full`): `npm run build` and `npm test`
    where package.json has them (failed unrun when the run `replaced` a runner), pytest where
    the project has tests for it (failed unrun when the run `steered` it)."""
    npm = [check for check in _npm_scripts(project)]
    checks = [_untrusted(check.name, replaced) for check in npm] if replaced else npm
    pyproject = project / "pyproject.toml"
    has_pytest = (project / "pytest.ini").is_file() or (
        pyproject.is_file() and "[tool.pytest" in pyproject.read_text(errors="replace")
    )
    if has_pytest or ((project / "tests").is_dir() and any((project / "tests").glob("test_*.py"))):
        name = "the project's tests pass (pytest)"
        command = f"PYTHONDONTWRITEBYTECODE=1 python3 -c {shlex.quote(_PYTEST)}"
        checks.append(_untrusted(name, steered) if steered else
                      Check(name, command, timeout=SCRIPT_TIMEOUT_S))  # fmt: skip
    return checks


def _npm_scripts(project: Path) -> list[Check]:
    """`npm run build` and `npm test`, where package.json has them."""
    checks = []
    try:
        scripts = json.loads((project / "package.json").read_text()).get("scripts") or {}
    except (OSError, ValueError, AttributeError):
        scripts = {}
    if isinstance(scripts, dict) and scripts.get("build"):
        checks.append(Check("the project builds (npm run build)", "npm run build --silent",
                            timeout=SCRIPT_TIMEOUT_S, needs_dependencies=True))  # fmt: skip
    test = str(scripts.get("test") or "") if isinstance(scripts, dict) else ""
    if test and "no test specified" not in test:  # npm's placeholder is not a test
        checks.append(Check("the project's tests pass (npm test)", "npm test --silent",
                            timeout=SCRIPT_TIMEOUT_S, needs_dependencies=True))  # fmt: skip
    return checks


def _program_check(check: ProgramCheck) -> Check:
    if check.kind == "command":
        return Check(check.name, check.value, compare=False)
    if check.kind == "file_exists":
        path = check.value

        def exists(folder: Path) -> str | None:
            located = ProjectRoot(folder).locate(path)
            if isinstance(located, Refusal):
                return f"{path} was not found" if located.kind == "missing" else located.reason
            with located:
                info = located.lstat()
            regular = info is not None and stat.S_ISREG(info.st_mode)
            return None if regular else f"{path} was not found"

        return Check(check.name, inline=exists, compare=False)
    key = check.value

    def has_key(folder: Path) -> str | None:
        data = ProjectRoot(folder).read_bytes(".env", env=True)
        if isinstance(data, Refusal):
            return ".env was not found" if data.kind == "missing" else data.reason
        lines = data.decode(errors="replace").splitlines()
        names = {line.split("=", 1)[0].strip().removeprefix("export ") for line in lines}
        return None if key in names else f"{key} is not set in .env"

    return Check(check.name, inline=has_key, compare=False)


def _parses(path: str, parse: Callable[[bytes], object]) -> Callable[[Path], str | None]:
    """A data file parses. It is read through the one resolver, as the agent's file tools
    read: a link out of the project, a pipe or a device is refused, never followed."""

    def check(folder: Path) -> str | None:
        data = ProjectRoot(folder).read_bytes(path)
        if isinstance(data, Refusal):
            return None if data.kind == "missing" else data.reason  # missing: nothing to parse
        try:
            parse(data)
        except Exception as exc:  # every parser's own error: the file does not parse
            return f"{path}: {exc}"
        return None

    return check
