"""A child that must not outlive its parent (a fleet worker's `wizard run`): started through
`with_parent_death`, with no Python between fork and exec in the parent."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from wizard import processes
from wizard.processes import with_parent_death

# A parent with threads busy beside it (as a fleet worker's are) that starts the child and
# then dies at once, without any clean-up.
PARENT = """
import os, subprocess, sys, threading
from wizard.processes import with_parent_death
for _ in range(4):
    threading.Thread(target=lambda: [bytes(4096) for _ in iter(int, 1)], daemon=True).start()
child = subprocess.Popen(with_parent_death([sys.executable, "-c", sys.argv[1], sys.argv[2]]))
while not os.path.exists(sys.argv[2] + ".started"):  # its handler is set
    pass
print(child.pid, flush=True)
os._exit(0)
"""
CHILD = """
import signal, sys, time
from pathlib import Path
def stopped(signum, frame):
    Path(sys.argv[1]).write_text("SIGTERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, stopped)
Path(sys.argv[1] + ".started").write_text("")
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_the_child_gets_sigterm_when_its_parent_dies(tmp_path: Path) -> None:
    marker = tmp_path / "child"
    parent = subprocess.run([sys.executable, "-c", PARENT, CHILD, str(marker)],
                            capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert parent.stdout.strip().isdigit()
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.05)
    assert marker.read_text() == "SIGTERM"


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_a_child_whose_parent_died_before_it_could_be_told_does_not_run(tmp_path: Path) -> None:
    """Its parent is not the one that started it (here, as if it died between the fork and
    the signal's setting, and the child was adopted): the command never runs."""
    ran = tmp_path / "ran"
    command = with_parent_death(["touch", str(ran)])
    assert command[-2:] == ["touch", str(ran)]
    started_by = command.index(str(processes.os.getpid()))
    command[started_by] = "1"  # another parent than this process
    done = subprocess.run(command, timeout=30, check=False)
    assert done.returncode == 143 and not ran.exists()


def test_elsewhere_the_command_is_started_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes.sys, "platform", "darwin")
    assert with_parent_death(["wizard", "run"]) == ["wizard", "run"]
