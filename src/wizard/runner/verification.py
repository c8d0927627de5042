"""Verification: before wizard says a run succeeded, it checks the project still works.

The checks come from two places:

- **the program's own** (`ProgramConfig.checks`): a file the skill must write exists, a key
  the setup needs is in `.env` (read by name only, never its value), a command exits 0;
- **what changed** (the journal's list, the installed skill left out): every changed Python
  file parses, every changed JavaScript file passes `node --check`, TypeScript type-checks
  when the project has a `tsconfig.json` and a local `typescript`, and changed JSON, TOML and
  YAML files still parse.

Commands run in the project, in the run's OS sandbox (as the agent's do), each with a time
limit. A failing check counts against the run only if it passed on the project as it was
before the run: the journal writes that tree into the run's temp folder and the check runs
there too, so a project that was already broken is not blamed (the outcome says so). Data
files are parsed in process; they are data, nothing in them runs.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import stat
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from wizard.engines.bundle import installed_pi
from wizard.events import SpinnerStarted, SpinnerStopped
from wizard.journal import RunRecord
from wizard.outcome import CheckResult, CheckStatus, Outcome, Outro, Verification
from wizard.programs.types import ProgramCheck
from wizard.runner.journaling import RunJournal
from wizard.runner.sequence.context import RunContext
from wizard.skills.install import SKILL_FILES
from wizard.tools.paths import ProjectRoot, Refusal
from wizard.tools.sandbox import SandboxPolicy
from wizard.tools.shell import run_command

CHECK_TIMEOUT_S = 120.0
SCRIPT_TIMEOUT_S = 900.0  # the project's own test and build scripts (`--verify full`)
TAIL_LINES = 12
# A file missing from the tree a check runs on (one the run added, on the tree before it)
# has nothing to parse there.
_PYTHON_PARSE = (
    "import ast, os, sys\n"
    "for f in sys.argv[1:]:\n"
    "    if os.path.exists(f): ast.parse(open(f, 'rb').read(), f)"
)
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


def checks_for(program_checks: Sequence[ProgramCheck], changed: Sequence[str], project: Path,
               *, full: bool = False) -> list[Check]:  # fmt: skip
    """The checks a run must pass: the program's, those its changes call for, and with
    `full` the project's own test and build scripts."""
    checks = [_program_check(check) for check in program_checks]
    if full:
        checks += _project_scripts(project)
    present = [p for p in changed if not p.startswith(SKILL_FILES) and (project / p).is_file()]
    by_suffix: dict[str, list[str]] = {}
    for path in present:
        by_suffix.setdefault(Path(path).suffix.lower(), []).append(path)
    if python := by_suffix.get(".py"):
        # Isolated (-I): not the project's folder on sys.path, so an `ast.py` the agent left
        # there is never what runs (nor PYTHON* variables, nor the user's site).
        command = f"python3 -I -c {shlex.quote(_PYTHON_PARSE)} {_quoted(python)}"
        checks.append(Check("changed Python files parse", command))
    if javascript := [p for s in (".js", ".mjs", ".cjs") for p in by_suffix.get(s, [])]:
        quoted = [shlex.quote(path) for path in javascript]
        command = " && ".join(f"{{ [ ! -e {p} ] || node --check {p}; }}" for p in quoted)
        checks.append(Check("changed JavaScript files parse", command))
    typescript = by_suffix.get(".ts", []) + by_suffix.get(".tsx", [])
    local_tsc = project / "node_modules" / ".bin" / "tsc"
    if typescript and (project / "tsconfig.json").is_file() and local_tsc.exists():
        checks.append(Check("TypeScript type-checks", "node_modules/.bin/tsc --noEmit"))
    for suffix, parse in _DATA_PARSERS.items():
        for path in by_suffix.get(suffix, []):
            checks.append(Check(f"{path} parses", inline=_parses(path, parse)))
    return checks


def _project_scripts(project: Path) -> list[Check]:
    """The project's own build and tests (`--verify full`): `npm run build` and `npm test`
    where package.json has them, pytest where the project has tests for it."""
    checks = []
    try:
        scripts = json.loads((project / "package.json").read_text()).get("scripts") or {}
    except (OSError, ValueError, AttributeError):
        scripts = {}
    if isinstance(scripts, dict) and scripts.get("build"):
        checks.append(Check("the project builds (npm run build)", "npm run build --silent",
                            timeout=SCRIPT_TIMEOUT_S))  # fmt: skip
    test = str(scripts.get("test") or "") if isinstance(scripts, dict) else ""
    if test and "no test specified" not in test:  # npm's placeholder is not a test
        checks.append(Check("the project's tests pass (npm test)", "npm test --silent",
                            timeout=SCRIPT_TIMEOUT_S))  # fmt: skip
    pyproject = project / "pyproject.toml"
    has_pytest = (project / "pytest.ini").is_file() or (
        pyproject.is_file() and "[tool.pytest" in pyproject.read_text(errors="replace")
    )
    if has_pytest or ((project / "tests").is_dir() and any((project / "tests").glob("test_*.py"))):
        command = "PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -x -p no:cacheprovider"
        checks.append(Check("the project's tests pass (pytest)", command,
                            timeout=SCRIPT_TIMEOUT_S))  # fmt: skip
    return checks


def _quoted(paths: Sequence[str]) -> str:
    return " ".join(shlex.quote(path) for path in paths)


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


@dataclass(frozen=True)
class CheckRunner:
    """Runs checks in a folder: commands in the OS sandbox when the run has one. When the
    run is sandboxed but the sandbox's runtime is not there, commands are skipped, not run
    outside it (`unsandboxable` says why)."""

    sandbox: tuple[SandboxPolicy, Path, Path] | None
    unsandboxable: str | None = None
    timeout: float = CHECK_TIMEOUT_S

    async def run(self, check: Check, folder: Path) -> tuple[CheckStatus, str]:
        """The check's status in `folder`, and the end of its output."""
        if check.inline is not None:
            problem = await asyncio.to_thread(check.inline, folder)
            return ("failed", problem) if problem is not None else ("passed", "")
        if self.unsandboxable is not None:
            return "skipped", self.unsandboxable
        limit = check.timeout or self.timeout
        code, output = await run_command(check.command, self.sandbox, folder, limit)
        if code is None:
            return "failed", f"timed out after {limit:g} s"
        text = "\n".join(output.splitlines()[-TAIL_LINES:])
        return ("passed" if code == 0 else "failed"), text


async def verify(
    checks: Sequence[Check],
    project: Path,
    runner: CheckRunner,
    before: Callable[[Path], None],
    scratch: Path,
) -> Verification:
    """Run `checks` in `project`; re-run each failing one on the tree before the run, which
    `before` writes into an empty folder under `scratch`."""
    results = []
    for check in checks:
        started = time.monotonic()
        result, tail = await runner.run(check, project)
        command = check.command or "(checked by wizard)"
        results.append(CheckResult(check.name, command, result, None,
                                   round(time.monotonic() - started, 3), tail))  # fmt: skip
    if any(r.status == "failed" and c.compare for c, r in zip(checks, results, strict=True)):
        results = await _before_the_run(checks, results, runner, before, scratch)
    status: CheckStatus = "passed"
    if any(result.counts for result in results):
        status = "failed"
    elif all(result.status == "skipped" for result in results):
        status = "skipped"  # nothing could be checked
    return Verification(status, tuple(results))


async def _before_the_run(
    checks: Sequence[Check],
    results: list[CheckResult],
    runner: CheckRunner,
    before: Callable[[Path], None],
    scratch: Path,
) -> list[CheckResult]:
    folder = Path(tempfile.mkdtemp(prefix="before-", dir=scratch))
    try:
        await asyncio.to_thread(before, folder)
    except Exception:  # no tree to compare with: the failure counts
        return results
    redone = []
    for check, result in zip(checks, results, strict=True):
        if result.status == "failed" and check.compare:
            status, _ = await runner.run(check, folder)
            result = replace(result, before=status)
        redone.append(result)
    return redone


def check_runner(policy: SandboxPolicy | None, workspace: Path) -> CheckRunner:
    """The runner for a run's checks: its sandbox policy, through the runtime's CLI."""
    if policy is None:
        return CheckRunner(None)
    engine = installed_pi()
    if engine is None:
        return CheckRunner(None, "the sandbox runtime is not installed")
    policy = policy.reading(engine.prefix).with_settings_file(workspace)
    return CheckRunner((policy, engine.node, engine.sandbox_entry.with_name("cli.js")))


NOT_VERIFIED = "Not verified (--no-verify): nothing checked that the project still works."


async def verified(
    outcome: Outcome,
    context: RunContext,
    journal: RunJournal,
    record: RunRecord | None,
    temp_dir: Path | None,
    skip: bool,
    full: bool = False,
) -> Outcome:
    """A run that would succeed, checked: succeeded, or unverified with the check that failed
    (the journal's record says so too). Any other ending is returned as it is."""
    if outcome.status != "succeeded":
        return outcome
    if skip:
        skipped = Verification("skipped")
        return replace(outcome, verification=skipped, warnings=(*outcome.warnings, NOT_VERIFIED))
    changed = record.changed if record is not None else []
    checks = checks_for(context.program.checks, changed, context.project_dir, full=full)
    if not checks:
        return replace(outcome, verification=Verification("skipped"))
    context.sink(SpinnerStarted("Checking that the project still works..."))
    workspace = Path(tempfile.mkdtemp(prefix="wizard-verify-"))
    try:
        runner = check_runner(context.sandbox, workspace)
        scratch = temp_dir if temp_dir is not None else workspace
        result = await verify(checks, context.project_dir, runner,
                              journal.materialiser(record), scratch)  # fmt: skip
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if not result.failures:
        done = "Checks passed: the preview is ready to apply" if context.preview else None
        context.sink(SpinnerStopped(done or context.program.success_message))
        return replace(outcome, verification=result)
    context.sink(SpinnerStopped("A check failed"))
    return replace(
        context.outcome("unverified", _unverified_outro(context, result), reason=_reason(result)),
        verification=result,
        warnings=outcome.warnings,
        usage=outcome.usage,
    )


def _reason(result: Verification) -> str:
    return "; ".join(f"{check.name} failed" for check in result.failures)


def _unverified_outro(context: RunContext, result: Verification) -> Outro:
    failed = result.failures[0]
    tail = f"\n\n{failed.output_tail}" if failed.output_tail else ""
    more = len(result.failures) - 1
    others = f" ({more} more check{'s' if more != 1 else ''} failed too)" if more else ""
    back = (
        "discard them with `wizard discard`"
        if context.preview
        else "take them back with `wizard undo`"
    )
    body = (
        f"The agent said it was done, but the check “{failed.name}” fails after its changes "
        f"and passed before them{others}.{tail}\n\nNothing is reported as set up: review "
        f"the changes with `wizard diff`, or {back}."
    )
    return Outro("error", f"{context.program.label}: a check failed after the run", body)
