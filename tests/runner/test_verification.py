"""Verification: the checks after the agent's work, what counts against a run, and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wizard.programs.types import ProgramCheck
from wizard.runner.checks import checks_for
from wizard.runner.verification import CheckRunner, verify

UNSANDBOXED = CheckRunner(None)  # the checks' own behaviour; the sandbox is tested live


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _before(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda folder: _tree(folder, files)


def test_the_checks_follow_what_changed_and_what_the_program_declares(tmp_path: Path) -> None:
    files = {"a.py": "x = 1\n", "web/b.js": "let b\n", "c.json": "{}", "d.yaml": "a: 1",
             "e.toml": "a = 1", ".claude/skills/s/x.py": "", "README.md": "# hi"}  # fmt: skip
    _tree(tmp_path, files)
    changed = ["a.py", "web/b.js", "c.json", "d.yaml", "e.toml", ".claude/skills/s/x.py",
               "README.md", "gone.py"]  # fmt: skip
    program = (ProgramCheck("file_exists", "report.md"), ProgramCheck("env_key", "API_KEY"))
    names = [check.name for check in checks_for(program, changed, tmp_path)]
    assert names == [
        "report.md exists", "API_KEY is in .env", "a.py compiles", "web/b.js parses",
        "c.json parses", "e.toml parses", "d.yaml parses",
    ]  # fmt: skip
    python = checks_for((), changed, tmp_path)[0].command
    assert "a.py" in python and "x.py" not in python and "gone.py" not in python


async def test_a_file_the_run_broke_fails_the_run(tmp_path: Path) -> None:
    _tree(tmp_path, {"app.py": "def f(:\n    pass\n"})
    checks = checks_for((), ["app.py"], tmp_path)
    result = await verify(checks, tmp_path, UNSANDBOXED, _before({"app.py": "x = 1\n"}), tmp_path)
    (check,) = result.checks
    assert (result.status, check.status, check.before) == ("failed", "failed", "passed")
    assert "SyntaxError" in check.output_tail and result.failures == (check,)


async def test_a_file_that_was_already_broken_is_not_blamed_on_the_run(tmp_path: Path) -> None:
    _tree(tmp_path, {"app.py": "def f(:\n    pass\n"})
    checks = checks_for((), ["app.py"], tmp_path)
    broken_before = _before({"app.py": "def f(:\n"})
    result = await verify(checks, tmp_path, UNSANDBOXED, broken_before, tmp_path)
    (check,) = result.checks
    assert (result.status, check.status, check.before) == ("passed", "failed", "failed")


async def test_a_broken_file_the_run_added_counts(tmp_path: Path) -> None:
    _tree(tmp_path, {"new.py": "if:\n", "old.py": "x = 1\n"})
    checks = checks_for((), ["new.py", "old.py"], tmp_path)
    result = await verify(checks, tmp_path, UNSANDBOXED, _before({"old.py": "x = 1\n"}), tmp_path)
    assert result.status == "failed" and result.checks[0].before == "passed"


async def test_data_files_are_parsed_and_compared_with_before(tmp_path: Path) -> None:
    _tree(tmp_path, {"settings.json": '{"a": 1,}', "ok.toml": "a = 1"})
    checks = checks_for((), ["settings.json", "ok.toml"], tmp_path)
    before = _before({"settings.json": '{"a": 1}', "ok.toml": "a = 1"})
    result = await verify(checks, tmp_path, UNSANDBOXED, before, tmp_path)
    assert [(c.name, c.status, c.before) for c in result.checks] == [
        ("settings.json parses", "failed", "passed"),
        ("ok.toml parses", "passed", None),
    ]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
async def test_javascript_is_checked_with_node(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.js": "function (\n"})
    checks = checks_for((), ["a.js"], tmp_path)
    result = await verify(checks, tmp_path, UNSANDBOXED, _before({}), tmp_path)
    assert result.status == "failed" and "SyntaxError" in result.checks[0].output_tail


async def test_what_a_program_says_its_run_leaves_is_not_compared_with_before(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, {".env": "export API_KEY=set\n"})
    program = (ProgramCheck("file_exists", "report.md"), ProgramCheck("env_key", "API_KEY"))
    result = await verify(checks_for(program, [], tmp_path), tmp_path, UNSANDBOXED,
                          _before({}), tmp_path)  # fmt: skip
    report, key = result.checks
    assert (report.status, report.before, report.output_tail) == (
        "failed", None, "report.md was not found",
    )  # fmt: skip
    assert key.status == "passed" and result.status == "failed"


async def test_commands_are_skipped_not_run_unsandboxed_without_the_runtime(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, {"app.py": "if:\n"})
    runner = CheckRunner(None, "the sandbox runtime is not installed")
    result = await verify(checks_for((), ["app.py"], tmp_path), tmp_path, runner,
                          _before({}), tmp_path)  # fmt: skip
    assert result.checks[0].status == "skipped" and result.status == "skipped"


def test_verify_full_adds_the_projects_own_build_and_tests(tmp_path: Path) -> None:
    _tree(tmp_path, {"package.json": '{"scripts": {"build": "tsc", "test": "jest"}}',
                     "tests/test_app.py": "def test_x(): pass\n"})  # fmt: skip
    assert checks_for((), [], tmp_path) == []  # never by default
    names = [check.name for check in checks_for((), [], tmp_path, full=True)]
    assert names == ["the project builds (npm run build)", "the project's tests pass (npm test)",
                     "the project's tests pass (pytest)"]  # fmt: skip
    placeholder = json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}})
    (tmp_path / "package.json").write_text(placeholder)
    assert "the project's tests pass (npm test)" not in [
        check.name for check in checks_for((), [], tmp_path, full=True)
    ]


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
async def test_a_build_the_run_broke_fails_it(tmp_path: Path) -> None:
    build = "node -e \"process.exit(require('fs').existsSync('broken') ? 1 : 0)\""
    package = json.dumps({"scripts": {"build": build}})
    _tree(tmp_path, {"package.json": package, "broken": ""})
    checks = checks_for((), [], tmp_path, full=True)
    result = await verify(checks, tmp_path, UNSANDBOXED, _before({"package.json": package}),
                          tmp_path)  # fmt: skip
    (check,) = result.checks
    assert (result.status, check.status, check.before) == ("failed", "failed", "passed")


async def test_a_file_that_was_already_broken_excuses_only_itself(tmp_path: Path) -> None:
    """Both files changed; `a.py` was broken before the run, `b.py` is broken by it. One
    command over both files used to fail before the run too, and excused `b.py`."""
    _tree(tmp_path, {"a.py": "def f(:\n", "b.py": "def f(:\n"})
    checks = checks_for((), ["a.py", "b.py"], tmp_path)
    before = _before({"a.py": "def f(:\n", "b.py": "x = 1\n"})
    result = await verify(checks, tmp_path, UNSANDBOXED, before, tmp_path)
    assert result.status == "failed"
    assert [(c.name, c.before) for c in result.failures] == [("b.py compiles", "passed")]


@pytest.mark.parametrize(
    "source", ["await f()\n", "def f(a, a):\n    pass\n", "return 1\n", "x = 1\nnonlocal x\n"]
)
async def test_python_that_parses_but_cannot_compile_fails(tmp_path: Path, source: str) -> None:
    _tree(tmp_path, {"app.py": source})
    result = await verify(checks_for((), ["app.py"], tmp_path), tmp_path, UNSANDBOXED,
                          _before({"app.py": "x = 1\n"}), tmp_path)  # fmt: skip
    assert result.status == "failed" and "SyntaxError" in result.checks[0].output_tail


async def test_a_program_check_that_fails_is_never_run_on_the_tree_before(tmp_path: Path) -> None:
    """A program's checks are of what its run must leave: before the run they fail, and that
    must never excuse them. Only a compared check's failure sends wizard to that tree."""
    exported: list[Path] = []

    def before(folder: Path) -> None:
        exported.append(folder)
        _tree(folder, {"app.py": "x = 1\n"})

    program = (ProgramCheck("file_exists", "report.md"), ProgramCheck("command", "exit 3"))
    result = await verify(checks_for(program, [], tmp_path), tmp_path, UNSANDBOXED, before,
                          tmp_path)  # fmt: skip
    assert exported == []  # nothing compared failed: the tree before was not even written
    assert [(c.status, c.before) for c in result.checks] == [("failed", None), ("failed", None)]
    _tree(tmp_path, {"app.py": "if:\n"})  # now a compared check fails too
    result = await verify(checks_for(program, ["app.py"], tmp_path), tmp_path, UNSANDBOXED,
                          before, tmp_path)  # fmt: skip
    assert len(exported) == 1
    assert [(c.name, c.before) for c in result.failures] == [
        ("report.md exists", None), ("exit 3", None), ("app.py compiles", "passed")
    ]  # fmt: skip


async def test_only_a_run_that_would_succeed_is_verified(tmp_path: Path) -> None:
    """An aborted run stays aborted (exit 3): checking it would make it 'unverified'."""
    from wizard.events import EventRecorder
    from wizard.outcome import Outcome
    from wizard.programs import get_program
    from wizard.runner.harness.types import GatewaySettings
    from wizard.runner.journaling import RunJournal
    from wizard.runner.sequence.context import RunContext
    from wizard.runner.switchboard import Binding
    from wizard.runner.verification import verified
    from wizard.skills.sources import BundledSkills

    program = get_program("self-driving")  # its check (a file its skill writes) would fail
    recorder = EventRecorder()
    context = RunContext(
        program=program, project_dir=tmp_path, binding=Binding("linear", "pi", "m"),
        gateway=GatewaySettings(url="http://127.0.0.1:9"), skills=BundledSkills(),
        sink=recorder, run_id="r1",
    )  # fmt: skip
    for status in ("aborted", "failed", "cancelled"):
        outcome = Outcome(status, program.id)  # type: ignore[arg-type]
        assert await verified(outcome, context, RunJournal(recorder), None, False) is outcome
    checked = await verified(Outcome("succeeded", program.id), context, RunJournal(recorder),
                             None, False)  # fmt: skip
    assert checked.status == "unverified"


def _project_with_a_compiler(root: Path) -> Path:
    """A TypeScript project with a local `tsc` that fails on a file saying BROKEN."""
    tsc = "#!/bin/sh\n! grep -q BROKEN a.ts\n"
    _tree(root, {"tsconfig.json": "{}", "a.ts": "const a: number = 1;\n",
                 "node_modules/typescript/bin/tsc": tsc})  # fmt: skip
    (root / "node_modules" / "typescript" / "bin" / "tsc").chmod(0o755)
    (root / "node_modules" / ".bin").mkdir()
    (root / "node_modules" / ".bin" / "tsc").symlink_to("../typescript/bin/tsc")
    return root


async def test_a_type_error_is_blamed_the_tree_before_gets_the_dependencies(
    tmp_path: Path,
) -> None:
    """The tree before the run had no `node_modules`, so `tsc` failed there too and every
    type error was excused."""
    from wizard.journal import Journal
    from wizard.runner.journaling import RunJournal

    project = _project_with_a_compiler(tmp_path / "project")
    journal = RunJournal(lambda event: None, Journal(project, tmp_path / "state"))
    journal.record = journal.journal.begin("r1", "prog")  # type: ignore[union-attr]
    (project / "a.ts").write_text("const a: number = 'BROKEN';\n")
    record = journal.finish("succeeded")
    checks = checks_for((), ["a.ts"], project)
    result = await verify(checks, project, UNSANDBOXED, journal.materialiser(record),
                          tmp_path)  # fmt: skip
    (check,) = result.checks
    assert (result.status, check.status, check.before) == ("failed", "failed", "passed")


async def test_a_check_on_dependencies_the_run_changed_is_not_compared_and_counts(
    tmp_path: Path,
) -> None:
    """Comparing with the run's own dependencies would let the agent break them on purpose
    and have its own error excused: such a check is not compared, and it counts."""
    project = _project_with_a_compiler(tmp_path / "project")
    (project / "a.ts").write_text("const a: number = 'BROKEN';\n")
    before_called: list[Path] = []
    result = await verify(checks_for((), ["a.ts"], project), project, UNSANDBOXED,
                          before_called.append, tmp_path, dependencies_changed=True)  # fmt: skip
    (check,) = result.checks
    assert (result.status, check.before) == ("failed", None) and before_called == []
    assert "the run changed its dependencies" in check.output_tail


@pytest.mark.parametrize(
    ("before_script", "before"),
    [
        ("exit 1\n", "failed"),  # broken before too: excused
        ("sleep 30\n", "skipped"),  # timed out before: could not compare
        ("", "skipped"),  # its command not found before: could not compare
    ],
)
async def test_a_check_that_could_not_run_before_the_run_excuses_nothing(
    tmp_path: Path, before_script: str, before: str
) -> None:
    """`./check.sh` fails after the run; on the tree before it, only a real failure there
    excuses it, never a check that timed out or whose command was not there."""
    from wizard.runner.checks import Check

    _tree(tmp_path, {"check.sh": "exit 1\n"})
    (tmp_path / "check.sh").chmod(0o755)
    files = {"check.sh": before_script} if before_script else {}

    def write_before(folder: Path) -> None:
        _tree(folder, files)
        if files:
            (folder / "check.sh").chmod(0o755)

    checks = [Check("the project's check passes", "./check.sh")]
    runner = CheckRunner(None, timeout=2.0)
    result = await verify(checks, tmp_path, runner, write_before, tmp_path)
    (check,) = result.checks
    assert (check.status, check.before) == ("failed", before)
    assert result.status == ("passed" if before == "failed" else "failed")
