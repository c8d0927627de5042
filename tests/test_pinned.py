"""wizard's programs pinned before anything starts (`wizard.pinned`): looked up outside the
project, first on `PATH` for every process wizard starts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from wizard.pinned import pin_tools, trusted_folders


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return program


def test_a_path_folder_in_the_project_or_relative_is_not_trusted(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / "linked").symlink_to(project / ".venv" / "bin")
    path = os.pathsep.join([
        str(project / ".venv" / "bin"), "node_modules/.bin", "", str(project),
        str(tmp_path / "linked"), "/usr/bin", str(tmp_path),
    ])  # fmt: skip
    assert trusted_folders(path, project) == ["/usr/bin", str(tmp_path)]


def test_wizard_s_programs_come_first_found_outside_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "app"
    planted = project / ".venv" / "bin"
    for name in ("git", "python"):  # a dependency's `git`; the project's own interpreter
        _program(planted, name)
    system = tmp_path / "system"
    real = _program(system, "git")
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    environ = {"PATH": os.pathsep.join([str(planted), str(system)])}
    folder = pin_tools(["run", "revenue-analytics", "--project", str(project)], environ)
    assert folder is not None and environ["PATH"].split(os.pathsep)[0] == str(folder)
    assert shutil.which("git", path=environ["PATH"]) == str(folder / "git")
    assert (folder / "git").resolve() == real.resolve()
    # Only wizard's own names: the agent's `python` is still the project's.
    assert shutil.which("python", path=environ["PATH"]) == str(planted / "python")
    # Made once: another run with the same programs finds the same folder.
    again = {"PATH": os.pathsep.join([str(planted), str(system)])}
    assert pin_tools(["run", "x", "--project", str(project)], again) == folder


def test_nothing_is_pinned_when_the_state_folder_is_in_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "app"
    project.mkdir()
    _program(tmp_path / "system", "git")
    monkeypatch.setenv("WIZARD_STATE_DIR", str(project / ".wizard"))
    environ = {"PATH": str(tmp_path / "system")}
    assert pin_tools(["run", "x", "--project", str(project)], environ) is None
    assert environ["PATH"] == str(tmp_path / "system")
