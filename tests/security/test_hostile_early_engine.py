"""pi's early start, before anything else: a `wizard` package planted in the project (where
the user runs `wizard`, and where an agent could write one) is never what it imports, and a
changed engine is never loaded by the host started before its check."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.engines.bundle import check_unchanged, pi_prefix
from wizard.testing.cli import run_wizard, wizard_env


@pytest.mark.parametrize("folder", ["wizard", "wizard/runner/harness/pi"])
def test_a_planted_wizard_package_in_the_current_folder_never_runs(
    outside_temp: Path, tmp_path: Path, folder: str
) -> None:
    project = outside_temp / "project"
    canary = outside_temp / "planted-code-ran"
    planted = project / folder
    planted.mkdir(parents=True)
    code = f"open({str(canary)!r}, 'w').write('ran')\n"
    for package in [project / "wizard", *(p for p in planted.parents if p != project), planted]:
        if package.is_relative_to(project / "wizard"):
            (package / "__init__.py").write_text(code)
    (planted / "early.py").write_text(code)
    (project / "app.py").write_text("print('hi')\n")
    script = Path(sys.executable).with_name("wizard")  # the console script, as users run it
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9")
    command = [str(script), "run", "transactional-email", "--project", "."]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode in (1, 2, 3), done.stderr
    assert not canary.exists()
    # What the user does next, from the same folder: wizard's journal commands.
    for command in (["runs"], ["diff"], ["undo"]):
        subprocess.run([str(script), *command, "--project", "."], cwd=project, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
        assert not canary.exists(), command


def test_a_changed_engine_is_never_loaded_by_the_host_started_early(
    outside_temp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node starts on wizard's host before the engine's check has finished; the host loads
    nothing of the engine until wizard says the check passed. An engine whose pi entry was
    rewritten (code that runs on load) fails the run, and that code never runs."""
    engines, state = outside_temp / "engines", outside_temp / "state"
    copy = engines / pi_prefix().name
    shutil.copytree(pi_prefix(), copy, symlinks=True)
    monkeypatch.setenv("WIZARD_STATE_DIR", str(state))
    check_unchanged(copy)  # recorded, as `wizard engines install pi` does
    canary = outside_temp / "engine-code-ran"
    entry = copy / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "index.js"
    entry.chmod(0o644)
    # Code that runs the moment it is loaded (pi's own entry runs only once its whole module
    # graph has loaded, a second later).
    entry.write_text(
        f'import {{ writeFileSync }} from "node:fs";\nwriteFileSync({str(canary)!r}, "ran");\n'
    )
    project = outside_temp / "project"
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n")
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9",
                     WIZARD_ENGINES_DIR=str(engines), WIZARD_STATE_DIR=str(state))  # fmt: skip
    done = run_wizard("run", "transactional-email", "--project", str(project), "--ci", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pi-coding-agent/dist/index.js" in done.stdout
    assert not canary.exists(), "the host loaded a changed engine"
