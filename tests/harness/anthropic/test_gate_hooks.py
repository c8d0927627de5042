"""The anthropic harness's gate around wizard's own shell (`_ShellAheadGate`): the next
command's sandbox, made ahead, is thrown away before the fence judges a call of another tool
(its placeholders would make the fence judge a name that is not there, `.husky` as an empty
file), and made again once such a call has run. The gate itself only decides."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any, cast

from wizard.runner.harness.anthropic.adapter import GateHooks
from wizard.runner.harness.anthropic.session import _ShellAheadGate
from wizard.runner.harness.gate import ToolGate
from wizard.tools.fence import Fence
from wizard.tools.shell import SandboxedShell


class _Shell:
    """A stand-in for wizard's started shell: what the gate asks of it, noted."""

    def __init__(self, before: Any = None) -> None:
        self.wrapper = self
        self.thrown_away: list[str] = []
        self.made: list[Path] = []
        self._before = before

    async def before_call(self, name: str) -> None:
        if name != "bash":
            self.thrown_away.append(name)
            if self._before is not None:
                self._before()

    def make_ahead(self, folder: Path, *, after_tool: bool = False) -> None:
        assert after_tool
        self.made.append(folder)


def _around(gate: ToolGate, shell: _Shell, folder: Path) -> ToolGate:
    return _ShellAheadGate(gate, cast(SandboxedShell, shell), folder)


def _deny_reason(answer: dict[str, object]) -> str:
    said = answer.get("hookSpecificOutput")
    assert isinstance(said, dict)
    return str(said["permissionDecisionReason"])


def test_the_fence_judges_a_file_tool_after_the_sandbox_made_ahead_is_gone(
    tmp_path: Path,
) -> None:
    placeholder = tmp_path / ".husky"
    placeholder.touch()  # as a sandbox standing ready leaves it, an empty file
    shell = _Shell(before=lambda: placeholder.unlink(missing_ok=True))
    gate = _around(ToolGate([], Fence(tmp_path)), shell, tmp_path)
    hooks = GateHooks(types.ModuleType("sdk"), gate)
    call = {"tool_name": "mcp__wizard__write",
            "tool_input": {"path": ".husky/pre-commit", "content": "x"}}  # fmt: skip
    blind = GateHooks(types.ModuleType("sdk"), ToolGate([], Fence(tmp_path)))
    assert "is not a folder" in _deny_reason(asyncio.run(blind.pre_tool_use(call, "a", None)))
    answer = asyncio.run(hooks.pre_tool_use(call, "toolu_1", None))
    assert shell.thrown_away == ["write"]
    assert answer == {}  # the fence lets it through; the write tool refuses the name itself


async def test_the_next_sandbox_is_made_once_a_host_tool_ran_and_only_then(
    tmp_path: Path,
) -> None:
    """The next command's sandbox is made once a host tool's handler has run, a failing one
    too; not for a call that ran nothing (the run ending, an unknown tool), nor once the run
    is ending (its call ran as the run halted), nor for the shell's own calls (they make
    theirs as they end)."""
    from collections.abc import Mapping

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
             HostTool("bash", "Run.", schema({}), note),
             HostTool("halting", "Halt.", schema({}), halting)]  # fmt: skip
    ending = False
    shell = _Shell()
    gate = _around(ToolGate(tools, Fence(tmp_path), halted=lambda: ending), shell, tmp_path)
    assert (await gate.call("note", {})).text == "noted"
    assert len(shell.made) == 1
    assert (await gate.call("broken", {})).is_error
    assert (await gate.call("bash", {})).text == "noted"
    assert (await gate.call("missing", {})).is_error
    assert len(shell.made) == 2
    assert (await gate.call("halting", {})).text == "done"
    assert (await gate.call("note", {})).is_error
    assert shell.made == [tmp_path, tmp_path]


async def test_a_run_not_ready_for_tools_throws_away_and_makes_nothing(tmp_path: Path) -> None:
    """Before the run is ready for tools (its first snapshot), or once it could not be made
    ready, nothing is thrown away or made: the sandbox stands placeholders in the project."""
    ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    shell = _Shell()
    gate = _around(ToolGate([], Fence(tmp_path), ready=ready), shell, tmp_path)
    ready.set_result(False)
    assert not (await gate.judge("write", {"path": "a", "content": "x"}, "c1")).allow
    assert (await gate.call("write", {})).is_error
    assert (shell.thrown_away, shell.made) == ([], [])
