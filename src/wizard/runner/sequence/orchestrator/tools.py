"""The queue's host tools: `enqueue_task` for the seed run, `complete_task` for a task run.

Both are ordinary `HostTool`s, so every harness offers them through its own adapter. A
refused call (unknown type, unknown dependency, a cycle, a second report) goes back to the
model as a tool error it can correct; it never ends the run.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from wizard.runner.sequence.orchestrator.queue import REPORTED, QueueError, TaskQueue
from wizard.tools.base import HostTool, ToolResult, schema

_TEXT = {"type": "string"}


def _error(message: str) -> ToolResult:
    return ToolResult(f"Error: {message}", is_error=True)


def enqueue_tool(
    queue: TaskQueue, task_types: Sequence[str], optional_types: Collection[str] = ()
) -> HostTool:
    """`enqueue_task(type, label, id?, depends_on?, optional?, inputs?)` over `queue`; only
    the `optional_types` may be enqueued as optional."""

    async def enqueue(args: Mapping[str, Any]) -> ToolResult:
        kind = str(args.get("type", ""))
        if kind not in task_types:
            return _error(f"unknown task type '{kind}'; use one of: {', '.join(task_types)}")
        if args.get("optional") and kind not in optional_types:
            allowed = ", ".join(sorted(optional_types)) or "none"
            return _error(
                f"a '{kind}' task cannot be optional: the program says which steps a setup can "
                f"do without (optional types: {allowed}). Enqueue it without `optional`."
            )
        depends_on = args.get("depends_on") or []
        if not isinstance(depends_on, list):
            return _error("depends_on must be a list of task ids")
        try:
            task = queue.enqueue(
                kind,
                str(args.get("label") or kind),
                id=str(args["id"]) if args.get("id") else None,
                depends_on=[str(dep) for dep in depends_on],
                optional=bool(args.get("optional", False)),
                inputs=args.get("inputs") if isinstance(args.get("inputs"), dict) else None,
            )
        except QueueError as exc:
            return _error(str(exc))
        return ToolResult(json.dumps({"id": task.id, "status": task.status}))

    return HostTool(
        "enqueue_task",
        "Add one task to the setup plan. Tasks run in dependency order, independent ones in "
        "parallel, each by its own agent that sees only its prompt, its inputs and the "
        "handoffs of the tasks it depends on. `id` is your name for the task (unique; made "
        "up when absent) and is returned; `depends_on` lists ids enqueued before.",
        schema(
            {
                "type": {"type": "string", "enum": list(task_types)},
                "label": _TEXT,
                "id": _TEXT,
                "depends_on": {"type": "array", "items": _TEXT},
                "optional": {
                    "type": "boolean",
                    "description": "only for the types the program allows to be optional",
                },
                "inputs": {"type": "object"},
            },
            ["type", "label"],
        ),
        enqueue,
    )


def complete_tool(queue: TaskQueue, task_id: str) -> HostTool:
    """`complete_task(status, summary, handoff?)` for the task `task_id`: its last call."""

    async def complete(args: Mapping[str, Any]) -> ToolResult:
        status = args.get("status")
        if status not in REPORTED:
            return _error(f"status must be one of: {', '.join(REPORTED)}")
        handoff = args.get("handoff")
        if handoff is not None and not isinstance(handoff, str):
            handoff = json.dumps(handoff)
        try:
            queue.report(task_id, status, str(args.get("summary") or ""), handoff)
        except QueueError as exc:
            return _error(str(exc))
        return ToolResult("ok", terminate=True)

    return HostTool(
        "complete_task",
        "Report how your task ended; this is your last call. status is 'done', 'failed' (say "
        "why in summary) or 'not needed'. handoff is what the tasks after yours need to know: "
        "files you changed, names you chose, what is left.",
        schema(
            {
                "status": {"type": "string", "enum": list(REPORTED)},
                "summary": _TEXT,
                "handoff": _TEXT,
            },
            ["status", "summary"],
        ),
        complete,
    )
