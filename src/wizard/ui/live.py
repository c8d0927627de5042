"""The interactive view of a run: a spinner with the latest `[STATUS]`, and the task list.

The spinner and the live task list are a transient region: when the step ends it is erased,
and the final task list and the stop message are printed once, so the finished screen holds
no spinner frame and no task twice.
"""

from __future__ import annotations

import asyncio
import json

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from wizard.events import (
    Event,
    LogLine,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
    TasksChanged,
    TaskView,
    ToolCalled,
)

_TASK_ICONS = {"pending": "○", "in_progress": "◐", "completed": "●"}


class LiveView:
    """An event sink that draws the run in the terminal."""

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self._message = ""
        self._tasks: tuple[TaskView, ...] = ()
        self._live: Live | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, SpinnerStarted):
            self._message = event.message
            self._start()
        elif isinstance(event, SpinnerMessage):
            self._message = event.message
            self.console.print(Text(f"◇  {event.message}", style="cyan"))
        elif isinstance(event, SpinnerStopped):
            self._stop()
            self.console.print(Text(f"●  {event.message}", style="bold"))
        elif isinstance(event, TasksChanged):
            self._tasks = event.tasks
        elif isinstance(event, ToolCalled) and self.verbose:
            arguments = json.dumps(dict(event.arguments), ensure_ascii=False)
            self.console.print(Text(f"│  → {event.name} {arguments}", style="dim"))
        elif isinstance(event, LogLine) and (event.level != "debug" or self.verbose):
            style = {"error": "red", "warning": "yellow"}.get(event.level, "dim")
            self.console.print(Text(f"│  {event.message}", style=style))
        self._refresh()

    def _render(self) -> RenderableType:
        rows: list[RenderableType] = [Spinner("dots", text=Text(self._message))]
        for task in self._tasks:
            icon = _TASK_ICONS.get(task.status, "○")
            style = "dim" if task.status == "completed" else ""
            rows.append(Text(f"   {icon} {task.content}", style=style))
        return Group(*rows)

    def _start(self) -> None:
        if self._live is None and self.console.is_terminal:
            self._live = Live(
                self._render(), console=self.console, refresh_per_second=10, transient=True
            )
            self._live.start()
        elif not self.console.is_terminal:
            self.console.print(Text(f"◌  {self._message}"))

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._render())

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        for task in self._tasks:
            self.console.print(Text(f"   {_TASK_ICONS.get(task.status, '○')} {task.content}"))

    def close(self) -> None:
        """Stop drawing."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    async def ask(self, questions: list[str]) -> list[str] | None:
        """Ask the user each question in the terminal (the spinner pauses meanwhile)."""
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        try:
            answers = []
            for question in questions:
                answers.append(await asyncio.to_thread(self.console.input, f"? {question} "))
            return answers
        except EOFError:
            return None
        finally:
            if live is not None:
                self._start()
