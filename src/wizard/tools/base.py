"""What a host tool is: a name, a description for the model, a JSON Schema, and a handler.

Tool failures are values (`ToolResult(is_error=True)`) that go back to the model; they never
end a run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gives back to the model."""

    text: str
    is_error: bool = False
    # The last call of the agent's turn: the engine ends the turn once this batch of calls
    # has run, without asking the model again (`complete_task`).
    terminate: bool = False


@dataclass(frozen=True)
class Decision:
    """The fence's answer for one tool call; a critical refusal ends the run."""

    allow: bool
    reason: str = ""
    critical: bool = False


ToolHandler = Callable[[Mapping[str, Any]], Awaitable[ToolResult]]


@dataclass(frozen=True)
class HostTool:
    """A tool the host offers the agent, whichever engine runs it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: ToolHandler = field(repr=False)

    def spec(self) -> dict[str, Any]:
        """The engine-neutral description of this tool (no handler)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def schema(properties: Mapping[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """A JSON Schema object with these properties."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": required or [],
        "additionalProperties": False,
    }
