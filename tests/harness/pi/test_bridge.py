"""The host-tool bridge over the tool gate, and the gate's two halt checks: once the run is
ending, neither the fence's answer nor a host tool lets anything run (each check alone is
what a test here needs); nor before the run is ready for tools."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.runner.harness.gate import ToolGate
from wizard.runner.harness.pi.bridge import HostBridge
from wizard.tools.base import HostTool, ToolResult, schema
from wizard.tools.fence import Fence


def _bridge(tmp_path: Path, halted: bool, ran: list[str]) -> HostBridge:
    async def handler(args: Mapping[str, Any]) -> ToolResult:
        ran.append("ran")
        return ToolResult("done")

    tool = HostTool("note", "Take a note.", schema({}), handler)
    return HostBridge(ToolGate([tool], Fence(tmp_path), halted=lambda: halted))


async def test_the_fence_answer_is_a_refusal_once_the_run_is_ending(tmp_path: Path) -> None:
    ran: list[str] = []
    permit = {"op": "permit", "name": "note", "id": "1", "input": {}}
    assert (await _bridge(tmp_path, False, ran).handle(permit))["allow"] is True
    answer = await _bridge(tmp_path, True, ran).handle(permit)
    assert answer["allow"] is False and "the run is ending" in answer["reason"]


async def test_a_host_tool_does_not_run_once_the_run_is_ending(tmp_path: Path) -> None:
    ran: list[str] = []
    call = {"op": "tool", "name": "note", "id": "1", "input": {}}
    assert (await _bridge(tmp_path, False, ran).handle(call))["text"] == "done"
    answer = await _bridge(tmp_path, True, ran).handle(call)
    assert answer["isError"] and "the run is ending" in answer["text"]
    assert ran == ["ran"]  # only the call made before the run was ending


async def test_a_host_tool_that_raises_is_a_tool_error_and_is_logged(
    tmp_path: Path, caplog: Any
) -> None:
    """A tool bug goes back to the model, and into the run's log with its traceback."""

    async def handler(args: Mapping[str, Any]) -> ToolResult:
        raise RuntimeError("tool bug")

    gate = ToolGate([HostTool("note", "Take a note.", schema({}), handler)], Fence(tmp_path))
    with caplog.at_level("ERROR", logger="wizard.runner.harness.gate"):
        result = await gate.call("note", {})
    assert result.is_error and "note failed: tool bug" in result.text
    assert [r.exc_info is not None for r in caplog.records if "note" in r.getMessage()] == [True]


async def test_nothing_runs_before_the_run_is_ready_and_nothing_after_it_could_not_be(
    tmp_path: Path,
) -> None:
    """A permit waits for what the run makes ready while its engine starts (the skill's
    install); a host tool asked before it runs nothing; a failed preparation refuses all."""
    ran: list[str] = []

    async def handler(args: Mapping[str, Any]) -> ToolResult:
        ran.append("ran")
        return ToolResult("done")

    tool = HostTool("note", "Take a note.", schema({}), handler)
    for made in (True, False):
        ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        bridge = HostBridge(ToolGate([tool], Fence(tmp_path), ready=ready))
        permit = asyncio.ensure_future(
            bridge.handle({"op": "permit", "name": "note", "id": "1", "input": {}})
        )
        early = await bridge.handle({"op": "tool", "name": "note", "id": "1", "input": {}})
        assert early["isError"] and "not ready for tools" in early["text"]
        await asyncio.sleep(0.05)
        assert not permit.done()
        ready.set_result(made)
        assert (await permit)["allow"] is made
        late = await bridge.handle({"op": "tool", "name": "note", "id": "2", "input": {}})
        assert late["isError"] is not made
    assert ran == ["ran"]


async def test_the_host_hears_the_run_is_ready_for_tools_once_it_is_and_not_while_it_ends(
    tmp_path: Path,
) -> None:
    """The host makes the first command's sandbox only once the run is ready for tools (the
    first snapshot taken, the skill installed): the answer waits for that, says no if the
    run could not be made ready, and no once the run is ending. The bridge remembers a yes
    (`said_ready`): a host told so may have a sandbox standing, and its session's close
    waits for it to leave."""
    for made in (True, False):
        ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        bridge = HostBridge(ToolGate([], Fence(tmp_path), ready=ready))
        asked = asyncio.ensure_future(bridge.handle({"op": "ready"}))
        await asyncio.sleep(0.05)
        assert not asked.done() and not bridge.said_ready
        ready.set_result(made)
        assert await asked == {"ready": made}
        assert bridge.said_ready is made
    ending = HostBridge(ToolGate([], Fence(tmp_path), halted=lambda: True))
    assert await ending.handle({"op": "ready"}) == {"ready": False}
    assert not ending.said_ready
