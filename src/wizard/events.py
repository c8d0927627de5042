"""Typed events the core emits while a run goes on; the UI and analytics subscribe.

Every event is a frozen dataclass with a `kind` literal. A sink is any callable taking an
`Event`; `EventBus` fans one event out to every sink and never lets a failing sink break a
run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from wizard.logs import logger

log = logger(__name__)


@dataclass(frozen=True)
class SpinnerStarted:
    """The long-running step began."""

    message: str
    kind: Literal["spinner_started"] = "spinner_started"


@dataclass(frozen=True)
class SpinnerMessage:
    """The spinner's text changed (usually from a `[STATUS]` line)."""

    message: str
    kind: Literal["spinner_message"] = "spinner_message"


@dataclass(frozen=True)
class SpinnerStopped:
    """The long-running step ended with this message."""

    message: str
    kind: Literal["spinner_stopped"] = "spinner_stopped"


@dataclass(frozen=True)
class TodoView:
    """One entry of the agent's todo list as the user sees it."""

    id: str
    content: str
    status: str


@dataclass(frozen=True)
class TodosChanged:
    """The agent's todo list changed."""

    todos: tuple[TodoView, ...]
    kind: Literal["tasks_changed"] = "tasks_changed"


@dataclass(frozen=True)
class QueueTaskChanged:
    """A task of the orchestrator's queue was added or changed status (times are epoch s)."""

    id: str
    type: str
    label: str
    status: str
    attempts: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    kind: Literal["queue_task"] = "queue_task"


@dataclass(frozen=True)
class LogLine:
    """A line for the run's log (and the verbose UI)."""

    message: str
    level: Literal["debug", "info", "warning", "error"] = "info"
    kind: Literal["log"] = "log"


@dataclass(frozen=True)
class ToolCalled:
    """The agent called a tool; long argument values are cut short."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class RunStarted:
    """What a run is about to use: said once, before the agent starts."""

    program: str
    project: str
    harness: str
    sequence: str
    model: str
    gateway: str
    sandbox: bool
    # A preview: the agent works on a copy, and the project is untouched until `wizard apply`.
    preview: bool = False
    kind: Literal["run_started"] = "run_started"

    def summary(self) -> str:
        """One line a user reads: what runs where, on which model and gateway."""
        sandbox = "sandbox on" if self.sandbox else "sandbox OFF"
        where = f"a preview copy of {self.project}" if self.preview else self.project
        return (
            f"{self.program} on {where} · {self.harness} · {self.sequence} · "
            f"{self.model} via {self.gateway} · {sandbox}"
        )


@dataclass(frozen=True)
class AnalyticsEvent:
    """A product-analytics event, named as the TypeScript wizard names it."""

    name: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    kind: Literal["analytics"] = "analytics"


Event = (
    SpinnerStarted
    | SpinnerMessage
    | SpinnerStopped
    | TodosChanged
    | QueueTaskChanged
    | LogLine
    | ToolCalled
    | RunStarted
    | AnalyticsEvent
)
EventSink = Callable[[Event], None]
# The version of what wizard writes for machines (`--ci` lines, the outcome): fields are only
# added within a major version (`wizard.schemas`).
SCHEMA_VERSION = "1.4"


def iso_now() -> str:
    """The current time as an ISO 8601 UTC timestamp, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def event_record(event: Event, run_id: str) -> dict[str, Any]:
    """One event as a JSON-ready record: its kind, an ISO timestamp, the run id, the schema
    version (`wizard.schemas`), its fields."""
    data = asdict(event)
    return {"event": data.pop("kind"), "ts": iso_now(), "run_id": run_id,
            "schema_version": SCHEMA_VERSION, **data}  # fmt: skip


class EventBus:
    """Fans events out to sinks; a sink that raises is logged and skipped."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks: list[EventSink] = list(sinks)

    def __call__(self, event: Event) -> None:
        for sink in list(self._sinks):
            try:
                sink(event)
            except OSError as exc:  # its terminal is gone (a closed window, a broken pipe)
                self._sinks.remove(sink)
                self(LogLine(f"an output went away ({exc}); the run goes on without it", "warning"))
            except Exception:  # a broken sink must never break a run
                log.exception("event sink failed on %s", event.kind)


class EventRecorder:
    """A sink that keeps every event, for tests and for the CI output."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def analytics(self, name: str | None = None) -> list[AnalyticsEvent]:
        """The analytics events seen, optionally only those named `name`."""
        return [
            e
            for e in self.events
            if isinstance(e, AnalyticsEvent) and (name is None or e.name == name)
        ]

    def spinner_stops(self) -> list[str]:
        """The messages the spinner stopped with."""
        return [e.message for e in self.events if isinstance(e, SpinnerStopped)]
