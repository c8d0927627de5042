"""The interactive view of a run: a spinner with the latest `[STATUS]`, and the todo list.

An orchestrator run shows its queue instead: one line a task, with its status and how long
it has run.

The spinner and the live todo list are a transient region: when the step ends it is erased,
and the final todo list and the stop message are printed once, so the finished screen holds
no spinner frame and no task twice.
"""

from __future__ import annotations

import asyncio
import json
import time

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from wizard.events import (
    Event,
    LogLine,
    QueueTaskChanged,
    RunStarted,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
    TodosChanged,
    TodoView,
    ToolCalled,
)

_TODO_ICONS = {"pending": "○", "in_progress": "◐", "completed": "●"}
_QUEUE_ICONS = {
    "pending": "○",
    "running": "◐",
    "done": "●",
    "failed": "✗",
    "not needed": "–",
    "skipped": "⊘",
    "stopped": "■",
}


def queue_line(task: QueueTaskChanged, now: float) -> str:
    """One queue task as a line: icon, label, status, and its elapsed time once started."""
    line = f"   {_QUEUE_ICONS.get(task.status, '○')} {task.label}"
    if task.status != "pending":
        line += f"  {task.status}"
    if task.started_at is not None:
        seconds = (task.finished_at or now) - task.started_at
        line += f"  {seconds:.0f}s"
    return line


class LiveView:
    """An event sink that draws the run in the terminal."""

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self._message = ""
        self._step: str | None = None  # the step the spinner shows, not yet in the history
        self._todos: tuple[TodoView, ...] = ()
        self._queue: dict[str, QueueTaskChanged] = {}
        self._live: Live | None = None
        # One spinner for the view's life: its frame follows the time since it first drew (a
        # new one on every render showed the first frame forever).
        self._spinner = Spinner("dots")

    def __call__(self, event: Event) -> None:
        if isinstance(event, SpinnerStarted):
            self._message = event.message
            self._start()
        elif isinstance(event, SpinnerMessage):
            # On a terminal the current step is the spinner's; it joins the history once the
            # next one starts. Without one, each step is printed as it comes.
            if self._live is None:
                self.console.print(Text(f"◇  {event.message}", style="cyan"))
            else:
                self._step_done()
                self._step = event.message
            self._message = event.message
        elif isinstance(event, SpinnerStopped):
            self._step_done()
            self._stop()
            self.console.print(Text(f"●  {event.message}", style="bold"))
        elif isinstance(event, TodosChanged):
            self._todos = event.todos
        elif isinstance(event, QueueTaskChanged):
            self._queue[event.id] = event
            if not self.console.is_terminal and event.status != "pending":
                self.console.print(Text(queue_line(event, time.time())))
        elif isinstance(event, RunStarted):
            self.console.print(Text(event.summary(), style="dim"), soft_wrap=True)
        elif isinstance(event, ToolCalled) and self.verbose:
            arguments = json.dumps(dict(event.arguments), ensure_ascii=False)
            self.console.print(Text(f"│  → {event.name} {arguments}", style="dim"))
        elif isinstance(event, LogLine) and (event.level != "debug" or self.verbose):
            style = {"error": "red", "warning": "yellow"}.get(event.level, "dim")
            self.console.print(Text(f"│  {event.message}", style=style))
        self._refresh()

    def _render(self) -> RenderableType:
        self._spinner.update(text=Text(self._message))
        rows: list[RenderableType] = [self._spinner]
        for todo in self._todos:
            icon = _TODO_ICONS.get(todo.status, "○")
            style = "dim" if todo.status == "completed" else ""
            rows.append(Text(f"   {icon} {todo.content}", style=style))
        now = time.time()
        for entry in self._queue.values():
            style = "dim" if entry.status in ("done", "not needed") else ""
            rows.append(Text(queue_line(entry, now), style=style))
        return Group(*rows)

    def _start(self) -> None:
        if self._live is None and self.console.is_terminal:
            # Rendered afresh on every refresh, so a running task's elapsed time ticks.
            self._live = Live(
                console=self.console,
                get_renderable=self._render,
                refresh_per_second=10,
                transient=True,
            )
            self._live.start()
        elif not self.console.is_terminal:
            self.console.print(Text(f"◌  {self._message}"))

    def _step_done(self) -> None:
        if self._step is not None:
            self.console.print(Text(f"◇  {self._step}", style="cyan"))
            self._step = None

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def _stop(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        for todo in self._todos:
            self.console.print(Text(f"   {_TODO_ICONS.get(todo.status, '○')} {todo.content}"))
        if live is not None:  # without a terminal, each change was printed as it came
            now = time.time()
            for entry in self._queue.values():
                self.console.print(Text(queue_line(entry, now)))
        # Printed once: a later step (the checks after the run) does not repeat them.
        self._todos, self._queue = (), {}

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
