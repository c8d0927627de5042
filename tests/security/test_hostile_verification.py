"""The checks after a run are wizard's own commands on a tree the agent wrote: nothing it
planted may run in them, fool them or make them read past the project."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from wizard.programs.types import ProgramCheck
from wizard.runner.checks import checks_for, replaced_runners
from wizard.runner.verification import check_runner, verify
from wizard.tools.sandbox import build_policy, check_sandbox

# The folders `_runner` made in the system temp folder, as a run makes them: removed after
# each test.
_MADE: list[Path] = []


@pytest.fixture(autouse=True)
def _remove_made() -> Iterator[None]:
    yield
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)


def _made(prefix: str) -> Path:
    _MADE.append(Path(tempfile.mkdtemp(prefix=prefix)))
    return _MADE[-1]


def _runner(project: Path, temp: Path | None = None):  # type: ignore[no-untyped-def]
    try:
        check_sandbox()
    except Exception:  # no sandbox here: the same checks, run as they would be with it off
        return check_runner(None, _made("wizard-verify-"))
    policy = build_policy(project, temp or _made("wizard-run-"))
    return check_runner(policy, _made("wizard-verify-"))


async def test_a_planted_module_does_not_run_in_a_check_nor_fool_it(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    canary = project / "planted-code-ran"
    (project / "app.py").write_text("def f(:\n")  # the run broke it
    # ...and left a module named like the one the check imports, to make it "pass".
    (project / "ast.py").write_text(
        f"import sys\nopen({str(canary)!r}, 'w').write('x')\nsys.exit(0)\n"
    )
    checks = checks_for((), ["app.py", "ast.py"], project)
    result = await verify(checks, project, _runner(project), lambda d: None, tmp_path)
    assert result.status == "failed" and "SyntaxError" in result.checks[0].output_tail
    assert not canary.exists()


async def test_a_planted_pipe_or_link_out_is_refused_not_read(tmp_path: Path) -> None:
    project, secret = tmp_path / "app", tmp_path / "secret.json"
    project.mkdir()
    secret.write_text('{"token": "canary-8d1f"}')
    os.mkfifo(project / ".env")  # reading it would block wizard for ever
    (project / "config.json").symlink_to(secret)  # out of the project
    program = (ProgramCheck("env_key", "API_KEY"),)
    checks = checks_for(program, ["config.json"], project)
    result = await verify(checks, project, _runner(project), lambda d: None, tmp_path)
    env, config = result.checks
    assert env.status == "failed" and config.status == "failed"
    assert all("canary-8d1f" not in check.output_tail for check in result.checks)


def _planted_jest(folder: Path, payload: str) -> None:
    """A fake `jest` in `folder/node_modules/.bin`, where npm looks in every ancestor."""
    runner = folder / "node_modules" / ".bin" / "jest"
    runner.parent.mkdir(parents=True)
    runner.write_text(f"#!/bin/sh\n{payload}\nexit 0\n")
    runner.chmod(0o755)


def _npm_project(project: Path) -> None:
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    (project / ".env").write_text("API_KEY=canary-env-51c2\n")
    (project / "config").mkdir()
    (project / "config" / ".env.local").write_text("TOKEN=canary-local-51c2\n")


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
async def test_the_tree_before_the_run_is_no_place_a_command_of_the_agent_can_reach(
    outside_temp: Path, tmp_path: Path
) -> None:
    """The agent plants `node_modules/.bin/jest` in the run's temp folder, above where the
    tree before the run used to be written; `npm test` fails in the project, so wizard runs
    it again on that tree. The planted runner must not run, and no `.env` reaches that tree."""
    project, temp = outside_temp / "project", outside_temp / "run-temp"
    _npm_project(project)
    temp.mkdir()
    stolen = project / "stolen.txt"
    _planted_jest(temp, f"cat ../*/.env ../*/config/.env.local .env > {stolen} 2>&1")
    runner = _runner(project, temp)
    checks = checks_for((), [], project, full=True)
    seen: list[list[str]] = []

    def before(folder: Path) -> None:
        (folder / "package.json").write_text((project / "package.json").read_text())
        seen.append(sorted(str(p.relative_to(folder)) for p in folder.rglob("*")))

    # Written where the run's commands could write: nothing runs there, the failure counts.
    result = await verify(checks, project, runner, before, temp)
    assert [c.before for c in result.checks] == [None] and result.status == "failed"
    assert not stolen.exists() and seen == []
    # Written where wizard writes it: the re-run finds no planted runner above it.
    result = await verify(checks, project, runner, before, tmp_path)
    assert not stolen.exists() and seen == [["package.json"]]


def test_the_tree_before_the_run_is_written_without_env_files(tmp_path: Path) -> None:
    from wizard.journal import Journal
    from wizard.tools.paths import is_env_name

    project = tmp_path / "project"
    _npm_project(project)
    (project / "app.js").write_text("x\n")
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "prog")
    dest = tmp_path / "before"
    dest.mkdir()
    journal.materialise(record.before, dest, is_env_name)
    assert sorted(p.name for p in dest.rglob("*")) == ["app.js", "config", "package.json"]


def test_a_runner_the_run_replaced_is_never_trusted_with_the_verdict(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _npm_project(project)
    (project / "node_modules" / "jest" / "bin").mkdir(parents=True)
    (project / "node_modules" / ".bin").mkdir()
    (project / "node_modules" / ".bin" / "jest").symlink_to("../jest/bin/jest.js")
    (project / "node_modules" / "@s" / "t").mkdir(parents=True)
    (project / "node_modules" / ".bin" / "t").symlink_to("../@s/t/cli.js")
    assert replaced_runners(project, {"node_modules/leftpad/index.js": "changed"}) == []
    assert replaced_runners(project, {"node_modules/jest/bin/jest.js": "changed"}) == [
        "node_modules/.bin/jest"
    ]
    assert replaced_runners(project, {"node_modules/@s/t/lib.js": "added"}) == [
        "node_modules/.bin/t"
    ]
    assert replaced_runners(project, {"node_modules/.bin/vitest": "added"}) == [
        "node_modules/.bin/vitest"
    ]
    (check,) = checks_for((), [], project, full=True,
                          dependencies={"node_modules/jest/bin/jest.js": "changed"})  # fmt: skip
    assert check.inline is not None and "node_modules/.bin/jest changed" in str(
        check.inline(project)
    )


def test_a_typescript_compiler_the_run_replaced_is_never_trusted(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "node_modules" / "typescript" / "bin").mkdir(parents=True)
    (project / "node_modules" / "typescript" / "bin" / "tsc").write_text("#!/usr/bin/env node\n")
    (project / "node_modules" / ".bin").mkdir()
    (project / "node_modules" / ".bin" / "tsc").symlink_to("../typescript/bin/tsc")
    (project / "tsconfig.json").write_text("{}")
    (project / "a.ts").write_text("const a: number = 'x';\n")
    (check,) = checks_for((), ["a.ts"], project)
    assert check.command == "node_modules/.bin/tsc --noEmit"
    replaced = {"node_modules/typescript/bin/tsc": "changed"}
    (check,) = checks_for((), ["a.ts"], project, dependencies=replaced)
    assert check.inline is not None and "node_modules/.bin/tsc changed" in str(
        check.inline(project)
    )


def _python_project(project: Path, test: str, **files: str) -> None:
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_app.py").write_text(test)
    for name, text in files.items():
        (project / name).write_text(text)


async def test_pytest_is_the_real_one_and_a_session_of_skips_is_no_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root `pytest.py` the project holds (`python -m pytest` would run it) is never what
    runs; tests that all skip do not pass the check; tests that pass do."""
    import sys

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    canary = tmp_path / "fake-pytest-ran"
    fake = f"open({str(canary)!r}, 'w').write('x')\nraise SystemExit(0)\n"
    failing = tmp_path / "failing"
    _python_project(failing, "def test_x():\n    assert False\n", **{"pytest.py": fake})
    skipping = tmp_path / "skipping"
    _python_project(skipping, "import pytest\n\n@pytest.mark.skip\ndef test_x():\n    pass\n")
    passing = tmp_path / "passing"
    _python_project(passing, "def test_x():\n    assert True\n")
    ended = {}
    for project in (failing, skipping, passing):
        checks = checks_for((), [], project, full=True)
        result = await verify(checks, project, _runner(project), lambda d: None, tmp_path)
        ended[project.name] = (result.checks[0].status, result.checks[0].output_tail)
    assert ended["failing"][0] == "failed" and "1 failed" in ended["failing"][1]
    assert not canary.exists()
    assert ended["skipping"][0] == "failed"
    assert "no test passed (every test was skipped)" in ended["skipping"][1]
    assert ended["passing"][0] == "passed", ended["passing"]


@pytest.mark.parametrize(
    ("changed", "files"),
    [
        (["conftest.py"], {"conftest.py": "collect_ignore_glob = ['*']\n"}),
        (["tests/conftest.py"], {}),
        (["pytest.ini"], {"pytest.ini": "[pytest]\naddopts = -p no:python\n"}),
        (["setup.cfg"], {"setup.cfg": "[tool:pytest]\naddopts = --co\n"}),
        (["tox.ini"], {"tox.ini": "[pytest]\naddopts = -k nothing\n"}),
        (["pytest.py"], {"pytest.py": "raise SystemExit(0)\n"}),
        (["pyproject.toml"], {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-k x'\n"}),
    ],
)
def test_a_run_that_steered_pytest_fails_the_check_unrun(
    tmp_path: Path, changed: list[str], files: dict[str, str]
) -> None:
    _python_project(tmp_path, "def test_x():\n    assert False\n", **files)
    before = {path: b"" for path in changed}
    checks = checks_for((), changed, tmp_path, full=True, before=before)
    (check,) = [check for check in checks if check.name.endswith("(pytest)")]
    assert check.inline is not None and f"{changed[0]} changed" in str(check.inline(tmp_path))


def test_a_pyproject_whose_pytest_options_stayed_runs_pytest(tmp_path: Path) -> None:
    """A setup adds its dependency to `pyproject.toml`: pytest's options are as they were,
    so the tests run (by default: its options unknown, they count as changed)."""
    options = "[tool.pytest.ini_options]\ntestpaths = ['tests']\n"
    now = f"[project]\nname = 'app'\ndependencies = ['posthog']\n\n{options}"
    _python_project(tmp_path, "def test_x():\n    pass\n", **{"pyproject.toml": now})
    was = f"[project]\nname = 'app'\ndependencies = []\n\n{options}".encode()
    check, parses = checks_for((), ["pyproject.toml"], tmp_path, full=True,
                               before={"pyproject.toml": was})  # fmt: skip
    assert check.inline is None and "pytest.main" in check.command
    assert parses.name == "pyproject.toml parses"
    unknown, _ = checks_for((), ["pyproject.toml"], tmp_path, full=True)
    assert unknown.inline is not None
