"""`StartedCLI`: a Claude CLI wizard started itself (`cli.start_cli`), as the SDK's transport.

It speaks to the SDK as the SDK's own subprocess transport does: one JSON message per line
each way (a line is bounded as the SDK bounds it; a line that is not JSON is skipped, one
that looks like JSON and does not parse is an error), the CLI's stderr line by line to the
session's log (read to its end, an over-long line dropped), a non-zero exit after its last
message a `ProcessError`. Closing ends its input and kills it: the CLI runs no tool of its
own (every tool is wizard's, served in this process) and keeps no session, so nothing it
would still do once its conversation is over is the run's, and its own teardown took a tenth
of a second of every session's close (the SDK's transport gives it five seconds).

This module imports the SDK: the session imports it once the SDK is loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from claude_agent_sdk import CLIConnectionError, CLIJSONDecodeError, ProcessError, Transport

_GRACE = 5.0  # seconds a killed CLI's end is waited for


class StartedCLI(Transport):
    """The running CLI process's pipes, as the SDK's `Transport`."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        log: Callable[[str], None],
        *,
        waits: bool = True,
    ) -> None:
        self._process = process
        self._log = log
        # Whether `close` waits for the end of the CLI it killed (False: its owner does).
        self._waits = waits
        self._ready = False
        self._writing = asyncio.Lock()
        self._stderr: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        """The process runs already: start passing on its diagnostics."""
        if self._process.returncode is not None:
            raise CLIConnectionError(
                f"Claude Code exited (code {self._process.returncode}) before the SDK connected"
            )
        self._stderr = asyncio.ensure_future(self._diagnostics())
        self._ready = True

    def is_ready(self) -> bool:
        """Whether the SDK may write."""
        return self._ready

    async def write(self, data: str) -> None:
        """One or more lines to the CLI's stdin."""
        stdin = self._process.stdin
        async with self._writing:
            if not self._ready or stdin is None or stdin.is_closing():
                raise CLIConnectionError("the Claude CLI's transport is not ready for writing")
            if self._process.returncode is not None:
                raise CLIConnectionError(
                    f"Cannot write to terminated process (exit code: {self._process.returncode})"
                )
            try:
                stdin.write(data.encode())
                await stdin.drain()
            except (OSError, RuntimeError) as exc:
                self._ready = False
                raise CLIConnectionError(f"Failed to write to process stdin: {exc}") from exc

    async def end_input(self) -> None:
        """Close the CLI's stdin."""
        async with self._writing:
            self._close_stdin()

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        """The CLI's messages, until its stdout ends."""
        return self._messages()

    async def close(self) -> None:
        """End its input and kill it (it runs nothing of the run's), then wait for its end,
        unless its owner does (`waits`): once killed it does nothing more, and a Node process
        of its size takes tens of milliseconds to go."""
        self._ready = False
        if self._stderr is not None:
            self._stderr.cancel()
            with contextlib.suppress(BaseException):
                await self._stderr
        self._close_stdin()  # a write under way fails, as on the SDK's own transport
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        if not self._waits:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait(), _GRACE)

    # --- the pipes ------------------------------------------------------------------------

    async def _messages(self) -> AsyncIterator[dict[str, Any]]:
        stdout = self._process.stdout
        assert stdout is not None
        while line := await _line(stdout):
            if (message := _message(line)) is not None:
                yield message
        code = await self._process.wait()
        if code != 0:
            raise ProcessError(
                f"Command failed with exit code {code}",
                exit_code=code,
                stderr="Check stderr output for details",
            )

    async def _diagnostics(self) -> None:
        """Its stderr, line by line, to the log, until it ends (read on, so that the CLI never
        blocks on a full pipe: a line past the bound is dropped)."""
        stderr = self._process.stderr
        assert stderr is not None
        while True:
            try:
                line = await stderr.readline()
            except ValueError:  # past the limit; the stream has dropped what it held
                continue
            if not line:
                return
            if text := line.decode(errors="replace").rstrip():
                self._log(text)

    def _close_stdin(self) -> None:
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()


async def _line(stream: asyncio.StreamReader) -> bytes:
    """The next line (empty at the end); a line past the SDK's bound is an error."""
    try:
        return await stream.readline()
    except ValueError as exc:  # longer than the stream's limit (`cli.LINE_LIMIT`)
        raise CLIJSONDecodeError("a line past the SDK's bound", exc) from exc


def _message(line: bytes) -> dict[str, Any] | None:
    """One line's message; None for a blank line or one that is not JSON (some builds
    print diagnostics to stdout)."""
    text = line.decode(errors="replace").strip()
    if not text.startswith("{"):
        return None
    try:
        message: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIJSONDecodeError(text, exc) from exc
    return message
