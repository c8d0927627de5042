"""The task queue of one orchestrator run: a value with transitions, each written to disk.

A task moves `pending → running → done | failed | not needed`; a failed or unreported task
may go back to `pending` for its second attempt; a task whose dependency failed is
`skipped`. Every transition rewrites `queue.json` in the run's state folder (outside the
user's project) atomically, so a crash leaves a readable record of where the run was.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from wizard.atomic import write_atomically

TaskStatus = Literal["pending", "running", "done", "failed", "not needed", "skipped", "stopped"]
# `stopped`: running when the run was interrupted (or ended by another task); not a failure of
# its own, and `wizard resume` runs it again.
TERMINAL: tuple[TaskStatus, ...] = ("done", "failed", "not needed", "skipped", "stopped")
REPORTED: tuple[TaskStatus, ...] = ("done", "failed", "not needed")
MAX_ATTEMPTS = 2
MAX_TASKS = 30


class QueueError(ValueError):
    """A transition the queue refuses; its text goes back to the model as a tool error."""


@dataclass(frozen=True)
class TaskError:
    """Why a task failed: `self-reported`, `no-report`, `aborted`, `stopped`, or an agent error."""

    type: str
    message: str


@dataclass(frozen=True)
class QueuedTask:
    """One task of the plan."""

    id: str
    type: str
    label: str
    status: TaskStatus = "pending"
    depends_on: tuple[str, ...] = ()
    optional: bool = False
    inputs: Mapping[str, Any] = field(default_factory=dict)
    attempts: int = 0
    summary: str | None = None
    handoff: str | None = None
    error: TaskError | None = None
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def reported(self) -> bool:
        """Whether the task's agent has reported how it ended (`complete_task`)."""
        return self.status in REPORTED

    @property
    def retryable(self) -> bool:
        """Whether the task may get another attempt."""
        aborted = self.error is not None and self.error.type == "aborted"
        return self.attempts < MAX_ATTEMPTS and not aborted


Transition = Callable[[QueuedTask, QueuedTask | None], None]


class TaskQueue:
    """The tasks of one run, in the order they were enqueued."""

    def __init__(self, path: Path, run_id: str, on_transition: Transition | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self._tasks: dict[str, QueuedTask] = {}
        self._on_transition = on_transition
        # Whether the planner finished: a plan it did not finish is never carried out.
        self.planned = False
        self._write()

    def mark_planned(self) -> None:
        """The planner's run ended well: the queue holds its whole plan."""
        self.planned = True
        self._write()

    def carry_over(self, earlier: Path) -> list[str]:
        """Take the tasks of an interrupted run's queue (its `queue.json`): those that ended
        `done` or `not needed` keep that, with their summaries and handoffs, and do not run
        again. If its planner had finished, every other task is pending afresh (one that was
        running starts over) and the queue is planned; if not (or the queue predates the
        flag), only the finished ones are taken, and the plan is the planner's to finish. The
        ids carried over as finished are returned."""
        data = json.loads(earlier.read_text())
        self.planned = data.get("planned") is True
        finished = []
        for raw in data.get("tasks", []):
            done = raw.get("status") in ("done", "not needed")
            if not done and not self.planned:
                continue
            task = QueuedTask(
                id=str(raw["id"]), type=str(raw["type"]), label=str(raw["label"]),
                status=raw["status"] if done else "pending",
                depends_on=tuple(raw.get("depends_on") or ()),
                optional=bool(raw.get("optional")), inputs=raw.get("inputs") or {},
                attempts=int(raw.get("attempts") or 0) if done else 0,
                summary=raw.get("summary") if done else None,
                handoff=raw.get("handoff") if done else None,
            )  # fmt: skip
            self._set(task, None)
            if done:
                finished.append(task.id)
        return finished

    def tasks(self) -> list[QueuedTask]:
        """Every task, in enqueue order."""
        return list(self._tasks.values())

    def get(self, task_id: str) -> QueuedTask:
        """A task by id; `KeyError` if unknown."""
        return self._tasks[task_id]

    def enqueue(
        self,
        type: str,
        label: str,
        *,
        id: str | None = None,
        depends_on: Iterable[str] = (),
        optional: bool = False,
        inputs: Mapping[str, Any] | None = None,
    ) -> QueuedTask:
        """Add a pending task; a `QueueError` for a duplicate id, unknown dependency or cycle."""
        if len(self._tasks) >= MAX_TASKS:
            raise QueueError(f"the queue is full ({MAX_TASKS} tasks); plan fewer, larger tasks")
        task_id = id or self._fresh_id(type)
        if task_id in self._tasks:
            raise QueueError(f"a task with id '{task_id}' is already queued; pick another id")
        deps = tuple(dict.fromkeys(depends_on))
        if task_id in deps:
            raise QueueError(f"task '{task_id}' cannot depend on itself (a cycle)")
        unknown = [dep for dep in deps if dep not in self._tasks]
        if unknown:
            raise QueueError(
                f"unknown dependency {', '.join(repr(d) for d in unknown)}: enqueue a task "
                "before the tasks that depend on it"
            )
        task = QueuedTask(task_id, type, label, depends_on=deps, optional=optional)
        task = replace(task, inputs=dict(inputs or {}))
        return self._set(task, None)

    def start(self, task_id: str) -> QueuedTask:
        """Mark a task running: one more attempt."""
        task = self._tasks[task_id]
        return self._set(
            replace(
                task,
                status="running",
                attempts=task.attempts + 1,
                started_at=time.time(),
                finished_at=None,
                error=None,
            ),
            task,
        )

    def report(
        self, task_id: str, status: TaskStatus, summary: str, handoff: str | None = None
    ) -> QueuedTask:
        """The task's agent reports how it ended; a `QueueError` if it is not running."""
        task = self._tasks.get(task_id)
        if task is None or task.status != "running":
            state = task.status if task else "unknown"
            raise QueueError(f"task '{task_id}' is {state}; it has already reported")
        error = TaskError("self-reported", summary) if status == "failed" else None
        changed = replace(
            task,
            status=status,
            summary=summary,
            handoff=handoff,
            error=error,
            finished_at=time.time(),
        )
        return self._set(changed, task)

    def fail(self, task_id: str, error: TaskError) -> QueuedTask:
        """Mark a task failed for a reason its agent did not report."""
        task = self._tasks[task_id]
        return self._set(replace(task, status="failed", error=error, finished_at=time.time()), task)

    def stop(self, task_id: str) -> QueuedTask:
        """Mark a running task stopped with the run: interrupted, not failed."""
        task = self._tasks[task_id]
        error = TaskError("stopped", "stopped when the run ended")
        stopped = replace(task, status="stopped", error=error, finished_at=time.time())
        return self._set(stopped, task)

    def requeue(self, task_id: str) -> QueuedTask:
        """Put a task back to pending for another attempt."""
        task = self._tasks[task_id]
        return self._set(replace(task, status="pending", finished_at=None), task)

    def runnable(self) -> list[QueuedTask]:
        """Pending tasks whose dependencies have all ended well (or failed, being optional:
        an optional task that was skipped did not run, and its dependents cannot either)."""
        return [
            task
            for task in self._tasks.values()
            if task.status == "pending" and all(self._satisfied(dep) for dep in task.depends_on)
        ]

    def skip_blocked(self) -> list[QueuedTask]:
        """Skip each pending task that depends on one that failed for good; return them."""
        skipped: list[QueuedTask] = []
        changed = True
        while changed:
            changed = False
            for task in self.tasks():
                blocker = next((d for d in task.depends_on if self._blocks(d)), None)
                if task.status == "pending" and blocker is not None:
                    error = TaskError("blocked", f"it depends on '{blocker}', which did not finish")
                    skipped.append(self._set(replace(task, status="skipped", error=error), task))
                    changed = True
        return skipped

    def _satisfied(self, dep: str) -> bool:
        task = self._tasks[dep]
        return task.status in ("done", "not needed") or (task.optional and task.status == "failed")

    def _blocks(self, dep: str) -> bool:
        task = self._tasks[dep]
        return task.status == "skipped" or (not task.optional and task.status == "failed")

    def _fresh_id(self, type: str) -> str:
        number = sum(1 for task in self._tasks.values() if task.type == type) + 1
        while f"{type}-{number}" in self._tasks:
            number += 1
        return f"{type}-{number}"

    def _set(self, task: QueuedTask, before: QueuedTask | None) -> QueuedTask:
        self._tasks[task.id] = task
        self._write()
        if self._on_transition is not None:
            self._on_transition(task, before)
        return task

    def _write(self) -> None:
        data = {"version": 1, "run_id": self.run_id, "planned": self.planned,
                "tasks": [asdict(t) for t in self.tasks()]}  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(data, indent=2).encode() + b"\n", 0o600)
