"""The agent's todo list: the tools `TaskCreate`, `TaskUpdate`, `TaskGet`, `TaskList`.

The list drives the completion guard: a run that ends with open todos did not finish. Every
change is published as a `TodosChanged` event, so the UI shows a live list.

In wizard's own words these are *todos*; a *task* is the orchestrator's (a planned unit of
work with its own conversation). The tool names, and the `tasks_changed` event the CI
output carries, keep the names Claude Code gives them, which skills are written against.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from wizard.events import EventSink, TodosChanged, TodoView
from wizard.tools.base import HostTool, ToolResult, schema

TodoStatus = Literal["pending", "in_progress", "completed"]
_STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "completed")


@dataclass(frozen=True)
class Todo:
    """One entry of the agent's todo list."""

    id: str
    content: str
    status: TodoStatus = "pending"
    active_form: str | None = None


class TodoList:
    """The todos of one run, in creation order."""

    def __init__(self, sink: EventSink | None = None) -> None:
        self._todos: dict[str, Todo] = {}
        self._sink = sink

    def create(self, content: str, active_form: str | None = None) -> Todo:
        """Add a pending task."""
        task = Todo(id=f"task-{len(self._todos) + 1}", content=content, active_form=active_form)
        self._todos[task.id] = task
        self._publish()
        return task

    def update(self, task_id: str, **changes: Any) -> Todo:
        """Change a task's status, content or active form; KeyError if unknown."""
        task = replace(self._todos[task_id], **{k: v for k, v in changes.items() if v is not None})
        self._todos[task_id] = task
        self._publish()
        return task

    def get(self, task_id: str) -> Todo | None:
        """A task by id."""
        return self._todos.get(task_id)

    def list(self) -> list[Todo]:
        """Every task, in creation order."""
        return list(self._todos.values())

    def has_open_todos(self) -> bool:
        """Whether any task is not completed."""
        return any(task.status != "completed" for task in self._todos.values())

    def _publish(self) -> None:
        if self._sink is not None:
            views = tuple(TodoView(t.id, t.content, t.status) for t in self._todos.values())
            self._sink(TodosChanged(views))


def _todo_json(task: Todo) -> str:
    return json.dumps(
        {
            "id": task.id,
            "content": task.content,
            "status": task.status,
            "activeForm": task.active_form,
        }
    )


def todo_tools(todos: TodoList) -> list[HostTool]:
    """The four todo tools over `todos`."""

    async def create(args: Mapping[str, Any]) -> ToolResult:
        task = todos.create(str(args["content"]), args.get("activeForm"))
        return ToolResult(_todo_json(task))

    async def update(args: Mapping[str, Any]) -> ToolResult:
        task_id = str(args["taskId"])
        status = args.get("status")
        if status is not None and status not in _STATUSES:
            return ToolResult(f"Error: status must be one of {', '.join(_STATUSES)}", is_error=True)
        if todos.get(task_id) is None:
            return ToolResult(f"Error: no task {task_id}; call TaskList to see ids.", is_error=True)
        task = todos.update(
            task_id, status=status, content=args.get("content"), active_form=args.get("activeForm")
        )
        return ToolResult(_todo_json(task))

    async def get(args: Mapping[str, Any]) -> ToolResult:
        task = todos.get(str(args["taskId"]))
        if task is None:
            return ToolResult(f"Error: no task {args['taskId']}", is_error=True)
        return ToolResult(_todo_json(task))

    async def list_todos(args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("[" + ",".join(_todo_json(t) for t in todos.list()) + "]")

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
        HostTool("TaskList", "List every task with its status.", schema({}), list_todos),
    ]
