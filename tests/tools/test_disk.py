"""The write cap of a run's commands (`tools.disk`): the disks they write may grow so much,
then what runs in the run's cgroups is killed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wizard.tools.disk import DiskGuard, used_bytes
from wizard.tools.sandbox import process_cap, remove_cgroup

# Writes 16 MiB at a time, up to 2 GiB, then says it finished.
WRITER = """import os, sys
with open(sys.argv[1], "wb") as out:
    for _ in range(128):
        out.write(b"x" * (16 << 20))
        out.flush()
print("WROTE-ALL")
"""


def test_the_growth_of_a_disk_is_seen_as_it_is_written(tmp_path: Path) -> None:
    before = used_bytes([tmp_path, tmp_path / "missing"])  # a path that is gone counts nothing
    (tmp_path / "data").write_bytes(b"x" * (32 << 20))
    assert used_bytes([tmp_path, tmp_path]) - before >= 24 << 20  # one disk, counted once


def _write_capped(
    tmp_path: Path, chunks: int, cap: int
) -> tuple[subprocess.CompletedProcess[str], DiskGuard, list[str], Path]:
    """Write `chunks` of 16 MiB in a command of the run's cgroups, with the guard at `cap`
    bytes: how the command ended, the guard, what it told, and the file written."""
    caps = process_cap(f"disk-test-{chunks}")
    if not caps.groups:
        pytest.skip("no cgroup may be made here: what commands write is capped per file only")
    told: list[str] = []
    guard = DiskGuard([tmp_path], caps.groups, cap, told.append)
    written = tmp_path / "written"
    try:
        script = tmp_path / "writer.py"
        script.write_text(WRITER.replace("range(128)", f"range({chunks})"))
        command = f"{caps.prefix}exec {sys.executable} {script} {written}"
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    finally:
        guard.close()
        for group in caps.groups:
            remove_cgroup(group)
    return done, guard, told, written


def test_a_command_past_the_write_cap_is_killed_and_the_run_is_told(tmp_path: Path) -> None:
    done, guard, told, written = _write_capped(tmp_path, 128, 64 << 20)
    assert done.returncode == -9 and "WROTE-ALL" not in done.stdout
    assert written.stat().st_size < 1 << 30
    assert len(told) == 1 and "past the 64 MiB they may write (WIZARD_COMMAND_WRITE)" in told[0]
    assert guard.stopped >= 1


def test_under_the_cap_nothing_is_killed(tmp_path: Path) -> None:
    done, _, told, _ = _write_capped(tmp_path, 4, 1 << 40)
    assert (done.returncode, done.stdout.strip(), told) == (0, "WROTE-ALL", [])
