"""The live view on a real pseudo-terminal, read back through a terminal emulator (pyte)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys

import pyte

SCRIPT = """
import time
from rich.console import Console
from wizard.events import SpinnerMessage, SpinnerStarted, SpinnerStopped, TodosChanged, TodoView
from wizard.ui.live import LiveView

view = LiveView(Console(width=80))
view(SpinnerStarted("Setting up transactional email..."))
first, second = "Add the client", "Write the report"
view(TodosChanged((TodoView("1", first, "in_progress"), TodoView("2", second, "pending"))))
time.sleep(0.4)
view(SpinnerMessage("Editing the mailer"))
view(TodosChanged((TodoView("1", first, "completed"), TodoView("2", second, "completed"))))
time.sleep(0.4)
view(SpinnerStopped("Setup complete"))
view.close()
"""
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


QUEUE_SCRIPT = """
import time
from rich.console import Console
from wizard.events import QueueTaskChanged, SpinnerStarted, SpinnerStopped
from wizard.ui.live import LiveView

view = LiveView(Console(width=80))
view(SpinnerStarted("Setting up revenue analytics..."))
now = time.time()
view(QueueTaskChanged("a", "tag-customers", "Tag customers", "running", 1, now - 65))
view(QueueTaskChanged("b", "report", "Write the report", "pending"))
time.sleep(0.4)
view(QueueTaskChanged("a", "tag-customers", "Tag customers", "done", 1, now - 65, now - 2))
view(QueueTaskChanged("b", "report", "Write the report", "skipped", 0, None, None, "blocked"))
time.sleep(0.4)
view(SpinnerStopped("Revenue analytics set up"))
view.close()
"""


WAIT_SCRIPT = """
import time
from rich.console import Console
from wizard.events import SpinnerStarted, SpinnerStopped
from wizard.ui.live import LiveView

view = LiveView(Console(width=80))
view(SpinnerStarted("Waiting for the model..."))
time.sleep(1.0)
view(SpinnerStopped("Done"))
view.close()
"""


MID_STEP_SCRIPT = """
import os, time
from rich.console import Console
from wizard.events import SpinnerMessage, SpinnerStarted
from wizard.ui.live import LiveView

view = LiveView(Console(width=80))
view(SpinnerStarted("Setting up transactional email..."))
view(SpinnerMessage("Reading the project"))
view(SpinnerMessage("Editing the mailer"))
time.sleep(0.5)
os._exit(0)  # the screen as it is mid-run
"""


def _run_on_a_pty(script: str = SCRIPT) -> list[str]:
    return _screen(_raw_pty_output(script))


def _raw_pty_output(script: str) -> bytes:
    primary, secondary = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdin=secondary, stdout=secondary, stderr=secondary,
        env=env, close_fds=True,
    )  # fmt: skip
    os.close(secondary)
    output = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(primary)
    assert process.wait(30) == 0, output.decode(errors="replace")
    return output


def _screen(output: bytes) -> list[str]:
    screen = pyte.Screen(80, 24)
    pyte.ByteStream(screen).feed(output)
    return [line.rstrip() for line in screen.display]


def test_the_finished_screen_has_no_spinner_frame_and_each_task_once() -> None:
    lines = _run_on_a_pty()
    shown = "\n".join(lines)
    assert not any(frame in shown for frame in SPINNER_FRAMES), shown
    assert sum("Add the client" in line for line in lines) == 1, shown
    assert sum("Write the report" in line for line in lines) == 1, shown
    assert "●  Setup complete" in shown
    assert "◇  Editing the mailer" in shown


def test_the_queue_shows_one_line_a_task_with_status_and_elapsed_time() -> None:
    lines = _run_on_a_pty(QUEUE_SCRIPT)
    shown = "\n".join(lines)
    assert not any(frame in shown for frame in SPINNER_FRAMES), shown
    (customers,) = [line for line in lines if "Tag customers" in line]
    assert customers.split() == ["●", "Tag", "customers", "done", "63s"]
    (report,) = [line for line in lines if "Write the report" in line]
    assert report.split() == ["⊘", "Write", "the", "report", "skipped"]


def test_the_spinner_turns_while_nothing_else_happens() -> None:
    """Every redraw showed the same first frame (a new spinner each render): a slow model
    reply looked hung. During a one-second wait it must show several frames."""
    drawn = _raw_pty_output(WAIT_SCRIPT).decode(errors="replace")
    assert len({frame for frame in SPINNER_FRAMES if frame in drawn}) >= 3, drawn


def test_the_current_step_shows_once_in_the_spinner_and_joins_the_history_when_done() -> None:
    lines = _run_on_a_pty(MID_STEP_SCRIPT)
    shown = "\n".join(lines)
    assert sum("Editing the mailer" in line for line in lines) == 1, shown
    assert "◇  Reading the project" in shown
