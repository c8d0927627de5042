"""The Claude CLI's transport to the tool gate: host tools as an in-process MCP server, and
the gate's decision as a pre-tool hook and the permission callback.

A run offers none of Claude's built-in tools: wizard's own `read`/`write`/`edit`/`bash` reach
the CLI as `mcp__wizard__<name>`, and `fence_call` maps those (and, should the CLI ever offer
one, a built-in `Read {file_path}`) onto the names and arguments the fence knows, so both
engines get the same decisions. Every decision is the gate's (`runner.harness.gate`): the
hook asks it (which counts the call against the fence's cap once); the permission callback,
which the CLI asks only for tools that are not pre-approved, repeats the hook's answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from wizard.runner.harness.gate import ToolGate
from wizard.tools.base import Decision, HostTool

SERVER = "wizard"
# Claude's built-in tools a run may use: none. Its file tools are replaced by wizard's
# (`read`, `write`, `edit`, which check a path as they open it) and its shell by wizard's
# sandboxed `bash`, all served by the in-process MCP server.
BUILTIN_TOOLS: tuple[str, ...] = ()
_BUILTIN_NAMES = {"Read": "read", "Write": "write", "Edit": "edit"}


def fence_call(name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A Claude tool call as the fence knows it: pi's tool names and argument names."""
    prefix = f"mcp__{SERVER}__"
    if name.startswith(prefix):
        return name[len(prefix) :], dict(arguments)
    if name in _BUILTIN_NAMES:
        args = {k: v for k, v in arguments.items() if k != "file_path"}
        if "file_path" in arguments:
            args["path"] = arguments["file_path"]
        return _BUILTIN_NAMES[name], args
    return name, dict(arguments)


def mcp_server(sdk: ModuleType, gate: ToolGate) -> Any:
    """An in-process MCP server that serves the gate's tools (one definition, the SDK's
    adapter); each call runs through the gate."""

    def adapt(tool: HostTool) -> Any:
        async def handle(arguments: dict[str, Any]) -> dict[str, Any]:
            result = await gate.call(tool.name, arguments)
            return {"content": [{"type": "text", "text": result.text}], "is_error": result.is_error}

        return sdk.SdkMcpTool(tool.name, tool.description, dict(tool.parameters), handle)

    tools = [adapt(tool) for tool in gate.tools.values()]
    return sdk.create_sdk_mcp_server(SERVER, "1.0.0", tools=tools)


class GateHooks:
    """The gate's decisions for one run, as the SDK's PreToolUse hook and permission callback."""

    def __init__(self, sdk: ModuleType, gate: ToolGate) -> None:
        self._sdk = sdk
        self._gate = gate
        self._decisions: dict[str, Decision] = {}

    async def pre_tool_use(
        self, hook_input: Mapping[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        """Ask the gate; deny with its reason."""
        name, args = fence_call(
            str(hook_input.get("tool_name")), hook_input.get("tool_input") or {}
        )
        call_id = tool_use_id or hook_input.get("tool_use_id")
        decision = await self._gate.judge(name, args, str(call_id) if call_id else None)
        self._decisions[str(call_id)] = decision
        if decision.allow:
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": decision.reason,
            }
        }

    async def can_use_tool(self, name: str, arguments: dict[str, Any], context: Any) -> Any:
        """The hook's answer for this call; the fence itself for a call the hook did not see."""
        call_id = getattr(context, "tool_use_id", None)
        decision = self._decisions.get(str(call_id or ""))
        if decision is None:
            decision = await self._gate.judge(*fence_call(name, arguments), call_id or None)
        if decision.allow and not self._gate.halted():
            return self._sdk.PermissionResultAllow(updated_input=arguments)
        return self._sdk.PermissionResultDeny(message=decision.reason or "Blocked.")

    async def post_tool_use(
        self, hook_input: Mapping[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        """Once the run is ending (a marker, a violation, a task that reported), the CLI
        does not go on to ask the model again after this tool: `interrupt()` from the
        harness would come a moment too late."""
        if self._gate.halted():
            return {"continue_": False, "stopReason": "the run is ending"}
        return {}

    def hooks(self) -> dict[str, list[Any]]:
        """The hook configuration for `ClaudeAgentOptions`."""
        matcher = self._sdk.HookMatcher
        return {
            "PreToolUse": [matcher(matcher=None, hooks=[self.pre_tool_use])],
            "PostToolUse": [matcher(matcher=None, hooks=[self.post_tool_use])],
        }
