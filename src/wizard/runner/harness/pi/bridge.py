"""The pi host's transport to the tool gate: a Unix-socket server wizard's pi host calls.

Each connection carries one JSON line from `host.mjs` and gets one JSON line back:

- `{"op": "tool", "name", "id", "input"}` runs a host tool → `{"text", "isError", "terminate"}`;
- `{"op": "permit", "name", "id", "input"}` asks the gate → `{"allow", "reason", "critical"}`;
- `{"op": "ready"}` → `{"ready"}` once the run is ready for tools (or could not be made so),
  false once it is ending: the host makes the first command's sandbox only then.

Every decision is the gate's (`runner.harness.gate`); this only translates. The host drops
the connection when pi aborts the call; the server tolerates that.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from wizard.httpserver import stop_serving
from wizard.layout import socket_temp_dir
from wizard.logs import logger
from wizard.runner.harness.gate import ToolGate
from wizard.tools.child_env import CHILD_ENV_ALLOW, CHILD_ENV_ALLOW_PREFIXES

log = logger(__name__)

CRITICAL_HOLD_SECONDS = 5.0


class HostBridge:
    """Serves one run's tool gate to one pi process, on a socket in a private folder."""

    def __init__(self, gate: ToolGate) -> None:
        self.gate = gate
        # Whether it told the host the run is ready for tools: the host makes a sandbox ahead
        # (placeholders in the project) only once told so.
        self.said_ready = False
        self._dir: Path | None = None
        self._server: asyncio.AbstractServer | None = None

    @property
    def socket_path(self) -> Path:
        """The socket the host connects to (while the bridge is open)."""
        assert self._dir is not None, "the bridge is not open"
        return self._dir / "host.sock"

    def spec(self) -> dict[str, Any]:
        """What the pi host needs to serve these tools: the socket, tool specs, env allowlist."""
        return {
            "socket": str(self.socket_path),
            "hostTools": [tool.spec() for tool in self.gate.tools.values()],
            "envAllow": list(CHILD_ENV_ALLOW),
            "envAllowPrefixes": list(CHILD_ENV_ALLOW_PREFIXES),
        }

    async def __aenter__(self) -> HostBridge:
        self._dir = Path(tempfile.mkdtemp(prefix="wizard-bridge-", dir=socket_temp_dir()))
        try:
            self._server = await asyncio.start_unix_server(
                self._serve, path=str(self.socket_path), limit=64 << 20
            )
            self.socket_path.chmod(0o600)
        except BaseException:  # a Ctrl-C here too leaves no folder behind
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await stop_serving(self._server)
        if self._dir is not None:
            self.socket_path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self._dir.rmdir()
            self._dir = None

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
        if request.get("op") == "ready":
            ready = await self.gate.ready() and not self.gate.halted()
            self.said_ready = self.said_ready or ready
            return {"ready": ready}
        if request.get("op") == "permit":
            call_id = request.get("id")
            call_id = call_id if isinstance(call_id, str) else None
            decision = await self.gate.judge(name, args, call_id)
            return {
                "allow": decision.allow,
                "reason": decision.reason,
                "critical": decision.critical,
            }
        result = await self.gate.call(name, args)
        return {"text": result.text, "isError": result.is_error, "terminate": result.terminate}
