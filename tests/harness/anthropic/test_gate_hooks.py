"""The anthropic harness's PreToolUse hook: what must come before a call is done before the
fence judges it (the next command's sandbox thrown away before a file tool: its placeholders
would make the fence judge a name that is not there, `.husky` as an empty file)."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path

from wizard.runner.harness.anthropic.adapter import GateHooks
from wizard.runner.harness.gate import ToolGate
from wizard.tools.fence import Fence


def _deny_reason(answer: dict[str, object]) -> str:
    said = answer.get("hookSpecificOutput")
    assert isinstance(said, dict)
    return str(said["permissionDecisionReason"])


def test_the_fence_judges_a_file_tool_after_the_sandbox_made_ahead_is_gone(
    tmp_path: Path,
) -> None:
    placeholder = tmp_path / ".husky"
    placeholder.touch()  # as a sandbox standing ready leaves it, an empty file
    thrown_away: list[str] = []

    async def discard(name: str) -> None:
        thrown_away.append(name)
        placeholder.unlink(missing_ok=True)

    gate = ToolGate([], Fence(tmp_path)).serving(before=discard)
    hooks = GateHooks(types.ModuleType("sdk"), gate)
    call = {"tool_name": "mcp__wizard__write",
            "tool_input": {"path": ".husky/pre-commit", "content": "x"}}  # fmt: skip
    blind = GateHooks(types.ModuleType("sdk"), ToolGate([], Fence(tmp_path)))
    assert "is not a folder" in _deny_reason(asyncio.run(blind.pre_tool_use(call, "a", None)))
    answer = asyncio.run(hooks.pre_tool_use(call, "toolu_1", None))
    assert thrown_away == ["write"]
    assert answer == {}  # the fence lets it through; the write tool refuses the name itself


async def test_what_comes_after_a_host_tool_is_done_once_it_ran_and_only_then(
    tmp_path: Path,
) -> None:
    """`after(name)` (wizard's shell making the next command's sandbox) once a host tool's
    handler has run, a failing one too; not for a call that ran nothing (the run ending, an
    unknown tool), nor once the run is ending (its call ran as the run halted)."""
    from collections.abc import Mapping
    from typing import Any

    from wizard.tools.base import HostTool, ToolResult, schema

    async def note(args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("noted")

    async def broken(args: Mapping[str, Any]) -> ToolResult:
        raise RuntimeError("tool bug")

    async def halting(args: Mapping[str, Any]) -> ToolResult:
        nonlocal ending
        ending = True  # the run halts while the call runs
        return ToolResult("done")

    tools = [HostTool("note", "Note.", schema({}), note),
             HostTool("broken", "Break.", schema({}), broken),
             HostTool("halting", "Halt.", schema({}), halting)]  # fmt: skip
    after: list[str] = []
    ending = False
    gate = ToolGate(tools, Fence(tmp_path), halted=lambda: ending).serving(after=after.append)
    assert (await gate.call("note", {})).text == "noted"
    assert (await gate.call("broken", {})).is_error
    assert (await gate.call("missing", {})).is_error
    assert (await gate.call("halting", {})).text == "done"
    assert (await gate.call("note", {})).is_error
    assert after == ["note", "broken"]
