"""The checks after a run are wizard's own commands on a tree the agent wrote: nothing it
planted may run in them, fool them or make them read past the project."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from wizard.programs.types import ProgramCheck
from wizard.runner.verification import check_runner, checks_for, verify
from wizard.tools.sandbox import build_policy, check_sandbox


def _runner(project: Path):  # type: ignore[no-untyped-def]
    try:
        check_sandbox()
    except Exception:  # no sandbox here: the same checks, run as they would be with it off
        return check_runner(None, Path(tempfile.mkdtemp()))
    policy = build_policy(project, Path(tempfile.mkdtemp(prefix="wizard-run-")))
    return check_runner(policy, Path(tempfile.mkdtemp()))


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
