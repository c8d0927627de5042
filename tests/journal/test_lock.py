"""One run per project: the lock refuses a second holder and outlives no process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.journal.lock import ProjectLocked, lock_path, project_lock


def test_a_second_holder_is_refused_naming_the_first(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with project_lock(project, "run-one", root=tmp_path):
        with pytest.raises(ProjectLocked) as raised, project_lock(project, "two", root=tmp_path):
            pass
        assert "run-one" in raised.value.message and str(os.getpid()) in raised.value.message
        assert "Nothing was changed" in (raised.value.hint or "")
    with project_lock(project, "run-three", root=tmp_path):  # released: free again
        holder = json.loads(lock_path(project, tmp_path).read_text())
        assert holder["run_id"] == "run-three" and holder["pid"] == os.getpid()


def test_another_process_holding_it_is_seen_and_a_dead_ones_lock_is_taken_over(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    holder = (
        "import sys, time\nfrom pathlib import Path\nfrom wizard.journal.lock import project_lock\n"
        f"with project_lock(Path({str(project)!r}), 'other-run', root=Path({str(tmp_path)!r})):\n"
        "    print('held', flush=True)\n    time.sleep(60)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        with pytest.raises(ProjectLocked) as raised, project_lock(project, "me", root=tmp_path):
            pass
        assert "other-run" in raised.value.message and str(process.pid) in raised.value.message
    finally:
        process.kill()
        process.wait()
    notes: list[str] = []
    with project_lock(project, "me", root=tmp_path, note=notes.append):
        pass
    assert notes == [
        f"took over the lock of run other-run (pid {process.pid}), whose process is gone"
    ]


def test_resuming_a_project_another_run_works_on_names_that_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "No interrupted orchestrator run" instead."""
    from wizard.runner.resume import resumable_run

    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    project = tmp_path / "p"
    project.mkdir()
    with project_lock(project, "busy-run"), pytest.raises(ProjectLocked, match="busy-run"):
        resumable_run(project, None)
