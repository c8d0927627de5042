"""The live view on a plain (non-terminal) console: what a log-style terminal shows."""

from __future__ import annotations

import io
import time

from rich.console import Console

from wizard.events import (
    LogLine,
    QueueTaskChanged,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
    TodosChanged,
    TodoView,
)
from wizard.ui.live import LiveView


def test_spinner_status_tasks_and_stop() -> None:
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, width=100, no_color=True))
    view(SpinnerStarted("Setting up transactional email..."))
    view(SpinnerMessage("Checking the stop conditions"))
    view(
        TodosChanged(
            (
                TodoView("task-1", "Add the client", "completed"),
                TodoView("task-2", "Write the report", "pending"),
            )
        )
    )
    view(LogLine("a tool call", "debug"))
    view(LogLine("fence denied bash", "warning"))
    view(SpinnerStopped("Wizard aborted"))
    text = buffer.getvalue()
    assert "◌  Setting up transactional email..." in text
    assert "◇  Checking the stop conditions" in text
    assert "● Add the client" in text and "○ Write the report" in text
    assert "a tool call" not in text  # debug lines only with --verbose
    assert "fence denied bash" in text
    assert text.rstrip().endswith("●  Wizard aborted")


async def test_ask_without_a_terminal_answers_nobody(monkeypatch: object) -> None:
    view = LiveView(Console(file=io.StringIO(), no_color=True))

    def no_input(*args: object, **kwargs: object) -> str:
        raise EOFError

    view.console.input = no_input  # type: ignore[method-assign]
    assert await view.ask(["Which region?"]) is None


def test_a_plain_console_prints_each_queue_change_as_it_comes() -> None:
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, width=100, no_color=True))
    view(SpinnerStarted("Setting up revenue analytics..."))
    view(QueueTaskChanged("a", "check", "Check Stripe", "pending"))
    started = time.time() - 5
    view(QueueTaskChanged("a", "check", "Check Stripe", "running", 1, started))
    view(QueueTaskChanged("a", "check", "Check Stripe", "failed", 1, started, started + 12.4))
    view(SpinnerStopped("Revenue analytics failed"))
    lines = [line.strip() for line in buffer.getvalue().splitlines()]
    assert [line for line in lines if "Check Stripe" in line] == [
        "◐ Check Stripe  running  5s",  # a pending task is not news; each change once
        "✗ Check Stripe  failed  12s",
    ]
