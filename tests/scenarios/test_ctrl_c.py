"""Ctrl-C at many moments of a real `wizard demo` on a real pseudo-terminal.

The terminal turns `^C` into SIGINT for the whole foreground process group, as a user's
would. Whenever it comes (while the sandbox is probed, pi starts, the model streams, a tool
runs, the journal records), the run ends the same way: exit 130, the cancelled panel, no
traceback, and nothing of the run left in the temp folder (the demo's own project, which it
keeps for the user to look at, aside).
"""

from __future__ import annotations

import os
import pty
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scenarios.conftest import wizard_env

pytestmark = pytest.mark.live

# Moments after the start, seeded: one in each of TRIALS equal slices of the whole run (the
# demo takes about 2 s here: start-up, the sandbox probe, pi starting, the model streaming,
# tools, the journal), so they are distinct and cover it. More for a stress run:
# WIZARD_CTRL_C_TRIALS=40.
TRIALS = int(os.environ.get("WIZARD_CTRL_C_TRIALS", "12"))
_RANDOM = random.Random(20261130)
MOMENTS = [0.05 + 1.85 * (i + _RANDOM.random()) / TRIALS for i in range(TRIALS)]
# And a few beside a busy loop on every core, where each stage takes longer.
UNDER_LOAD = [0.05 + 2.5 * (i + _RANDOM.random()) / 4 for i in range(4)]


def _demo_on_a_pty(env: dict[str, str], interrupt_after: float) -> tuple[int, str]:
    """Run `wizard demo` on a pty, press Ctrl-C after `interrupt_after` s; (exit code, output)."""
    pid, master = pty.fork()
    if pid == 0:  # the child: a session leader with the pty as its terminal
        os.execve(sys.executable, [sys.executable, "-m", "wizard", "demo"], env)
    output = bytearray()
    started, pressed = time.monotonic(), False
    deadline = started + 90
    while time.monotonic() < deadline:
        if not pressed and time.monotonic() - started >= interrupt_after:
            os.write(master, b"\x03")
            pressed = True
        ready, _, _ = select.select([master], [], [], 0.02)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            output += chunk
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(master)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


@pytest.fixture
def busy_cores(request: pytest.FixtureRequest) -> Iterator[None]:
    """A busy loop on every core while the test runs, when the test asks for load."""
    if not request.node.get_closest_marker("under_load"):
        yield
        return
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 1)]  # fmt: skip
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


CASES = [pytest.param(m, id=f"{m:.2f}s") for m in MOMENTS] + [
    pytest.param(m, id=f"{m:.2f}s-under-load", marks=pytest.mark.under_load) for m in UNDER_LOAD
]


@pytest.mark.parametrize("moment", CASES)
@pytest.mark.usefixtures("busy_cores")
def test_ctrl_c_at_any_moment_is_a_clean_cancel(tmp_path: Path, moment: float) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = wizard_env(
        tmp_path, TMPDIR=str(temp), WIZARD_STATE_DIR=str(tmp_path / "state"), COLUMNS="80"
    )
    env.pop("NO_COLOR")  # a user's terminal
    code, output = _demo_on_a_pty(env, moment)
    if code == 0:  # the run was over before the key was pressed: nothing to cancel
        assert moment > 1.0, f"the demo finished in under {moment:.2f} s?\n{output}"
        pytest.skip(f"the demo had finished by {moment:.2f} s")
    assert code == 130, output
    assert "cancelled" in output, output
    for noise in ("Traceback", "Exception in callback", "Task exception was never retrieved"):
        assert noise not in output, output
    left = sorted(p.name for p in temp.iterdir() if not p.name.startswith("wizard-demo-"))
    assert left == [], left
