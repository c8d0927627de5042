"""The agent's task list (TaskCreate, TaskUpdate, TaskGet, TaskList) over one store.

The store drives the completion guard: a run that ends with open tasks did not finish.
Every change is published as a `TasksChanged` event, so the UI shows a live list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from wizard.events import EventSink, TasksChanged, TaskView
from wizard.tools.base import HostTool, ToolResult, schema

TaskStatus = Literal["pending", "in_progress", "completed"]
_STATUSES: tuple[TaskStatus, ...] = ("pending", "in_progress", "completed")


@dataclass(frozen=True)
class Task:
    """One entry of the agent's task list."""

    id: str
    content: str
    status: TaskStatus = "pending"
    active_form: str | None = None


class TaskStore:
    """The tasks of one run, in creation order."""

    def __init__(self, sink: EventSink | None = None) -> None:
        self._tasks: dict[str, Task] = {}
        self._sink = sink

    def create(self, content: str, active_form: str | None = None) -> Task:
        """Add a pending task."""
        task = Task(id=f"task-{len(self._tasks) + 1}", content=content, active_form=active_form)
        self._tasks[task.id] = task
        self._publish()
        return task

    def update(self, task_id: str, **changes: Any) -> Task:
        """Change a task's status, content or active form; KeyError if unknown."""
        task = replace(self._tasks[task_id], **{k: v for k, v in changes.items() if v is not None})
        self._tasks[task_id] = task
        self._publish()
        return task

    def get(self, task_id: str) -> Task | None:
        """A task by id."""
        return self._tasks.get(task_id)

    def list(self) -> list[Task]:
        """Every task, in creation order."""
        return list(self._tasks.values())

    def has_open_tasks(self) -> bool:
        """Whether any task is not completed."""
        return any(task.status != "completed" for task in self._tasks.values())

    def _publish(self) -> None:
        if self._sink is not None:
            views = tuple(TaskView(t.id, t.content, t.status) for t in self._tasks.values())
            self._sink(TasksChanged(views))


def _task_json(task: Task) -> str:
    return json.dumps(
        {
            "id": task.id,
            "content": task.content,
            "status": task.status,
            "activeForm": task.active_form,
        }
    )


def task_tools(store: TaskStore) -> list[HostTool]:
    """The four task tools over `store`."""

    async def create(args: Mapping[str, Any]) -> ToolResult:
        task = store.create(str(args["content"]), args.get("activeForm"))
        return ToolResult(_task_json(task))

    async def update(args: Mapping[str, Any]) -> ToolResult:
        task_id = str(args["taskId"])
        status = args.get("status")
        if status is not None and status not in _STATUSES:
            return ToolResult(f"Error: status must be one of {', '.join(_STATUSES)}", is_error=True)
        if store.get(task_id) is None:
            return ToolResult(f"Error: no task {task_id}; call TaskList to see ids.", is_error=True)
        task = store.update(
            task_id, status=status, content=args.get("content"), active_form=args.get("activeForm")
        )
        return ToolResult(_task_json(task))

    async def get(args: Mapping[str, Any]) -> ToolResult:
        task = store.get(str(args["taskId"]))
        if task is None:
            return ToolResult(f"Error: no task {args['taskId']}", is_error=True)
        return ToolResult(_task_json(task))

    async def list_tasks(args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("[" + ",".join(_task_json(t) for t in store.list()) + "]")

    text = {"type": "string"}
    status = {"type": "string", "enum": list(_STATUSES)}
    return [
        HostTool(
            "TaskCreate",
            "Add a task to your task list. Plan the setup as tasks first; every task must be "
            "completed before you finish.",
            schema({"content": text, "activeForm": text}, ["content"]),
            create,
        ),
        HostTool(
            "TaskUpdate",
            "Change a task's status (pending, in_progress, completed), content or activeForm.",
            schema(
                {"taskId": text, "status": status, "content": text, "activeForm": text}, ["taskId"]
            ),
            update,
        ),
        HostTool("TaskGet", "Read one task by id.", schema({"taskId": text}, ["taskId"]), get),
        HostTool("TaskList", "List every task with its status.", schema({}), list_tasks),
    ]
