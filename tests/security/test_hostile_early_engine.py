"""pi's early start runs wizard's own code in a second interpreter before anything else: a
`wizard` package planted in the project (where the user runs `wizard`, and where an agent
could write one) is never what it imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wizard.testing.cli import wizard_env


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
