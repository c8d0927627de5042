"""The Python end of the host-tool bridge: a Unix-socket server wizard's pi host calls.

Each connection carries one JSON line from `host.mjs` and gets one JSON line back:

- `{"op": "tool", "name", "id", "input"}` runs a host tool → `{"text", "isError", "terminate"}`;
- `{"op": "permit", "name", "id", "input"}` asks the fence → `{"allow", "reason"}`.

The host drops the connection when pi aborts the call; the server tolerates that.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from wizard.tools.base import Decision, HostTool, ToolResult
from wizard.tools.fence import CHILD_ENV_ALLOW, CHILD_ENV_ALLOW_PREFIXES, Fence

log = logging.getLogger(__name__)

CRITICAL_HOLD_SECONDS = 5.0
_ENDING = "Blocked: the run is ending; no more tools run."


class HostBridge:
    """Serves host tools and fence checks to one pi process."""

    def __init__(
        self,
        tools: Sequence[HostTool],
        fence: Fence,
        on_decision: Callable[[str, Decision], None] | None = None,
        halted: Callable[[], bool] = lambda: False,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.fence = fence
        self._on_decision = on_decision
        # Once the run is ending (a stop marker, a critical violation), no tool runs: not even
        # one the model called in the same message as its marker.
        self._halted = halted
        self._dir = Path(tempfile.mkdtemp(prefix="wizard-bridge-"))
        self.socket_path = self._dir / "host.sock"
        self._server: asyncio.AbstractServer | None = None

    def spec(self) -> dict[str, Any]:
        """What the pi host needs to serve these tools: the socket, tool specs, env allowlist."""
        return {
            "socket": str(self.socket_path),
            "hostTools": [tool.spec() for tool in self.tools.values()],
            "envAllow": list(CHILD_ENV_ALLOW),
            "envAllowPrefixes": list(CHILD_ENV_ALLOW_PREFIXES),
        }

    async def __aenter__(self) -> HostBridge:
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=64 << 20
        )
        self.socket_path.chmod(0o600)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        self.socket_path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._dir.rmdir()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await reader.readline())
            answer = await self.handle(request)
            if answer.get("critical"):
                # The harness is aborting the run now. Hold the refusal until pi drops this
                # call (its abort signal closes the socket), so pi does not move on to
                # another model request in between.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reader.read(), CRITICAL_HOLD_SECONDS)
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, json.JSONDecodeError, asyncio.IncompleteReadError) as exc:
            log.debug("bridge connection dropped: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one bridge request."""
        name = str(request.get("name", ""))
        args = request.get("input") or {}
        if request.get("op") == "permit":
            # The fence still judges the call, so a critical violation is on record.
            decision = self.fence.check(name, args)
            if self._on_decision is not None:
                self._on_decision(name, decision)
            if decision.allow and self._halted():
                decision = Decision(False, _ENDING)
            return {
                "allow": decision.allow,
                "reason": decision.reason,
                "critical": decision.critical,
            }
        if self._halted():
            return {"text": _ENDING, "isError": True, "terminate": False}
        tool = self.tools.get(name)
        if tool is None:
            return {"text": f"Error: unknown host tool {name}", "isError": True}
        try:
            result = await tool.handler(args)
        except Exception as exc:  # a tool bug goes back to the model, not up the stack
            log.exception("host tool %s failed", name)
            result = ToolResult(f"Error: {name} failed: {exc}", is_error=True)
        return {"text": result.text, "isError": result.is_error, "terminate": result.terminate}
