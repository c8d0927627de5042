"""Reads an engine session's event stream for a run: stop markers, turns, tool calls, status.

Every session emits the same compact events (`AgentSession`), so one reader serves all.

Markers count only in the text blocks of assistant messages: streamed text is scanned per
block as it arrives (`text_delta`, keyed by the block's `index`), and each complete assistant
message is scanned block by block at `message_end`. Thinking, tool-call arguments, tool
results and user messages never reach this listener.

In the remark turn (after `enter_remark()`) the latch decides whether a marker still counts
(the engine's policy); nothing else in it, text or tool call, changes how the run is
classified.
"""

from __future__ import annotations

from typing import Any

from wizard.events import LogLine, ToolCalled
from wizard.runner.harness.latch import BlockScanner, StopLatch
from wizard.runner.harness.state import RunOutput


class RunListener:
    """A session's subscriber for one run: feeds the latch and the run's output."""

    def __init__(self, latch: StopLatch, output: RunOutput) -> None:
        self.latch = latch
        self.output = output
        self.sink = output.sink
        self._scanners: dict[int, BlockScanner] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        index = int(event.get("index", 0))
        if kind in ("text_start", "text_delta", "text_end") and not self.latch.armed:
            return
        if kind == "text_start":
            self._scanners[index] = self.latch.scanner()
        elif kind == "text_delta":
            self._scanner(index).feed(str(event.get("delta", "")))
        elif kind == "text_end":
            if (scanner := self._scanners.pop(index, None)) is not None:
                scanner.finish()
        elif kind == "message_end":
            self._on_assistant_message(event)
        elif kind == "tool_start":
            self.output.tool_called()
            arguments = event.get("args")
            self.sink(
                ToolCalled(str(event.get("name")), arguments if isinstance(arguments, dict) else {})
            )
        elif kind == "tool_end" and event.get("isError"):
            self.sink(LogLine(f"✗ {event.get('name')}: {event.get('result')}", "debug"))

    def _scanner(self, index: int) -> BlockScanner:
        scanner = self._scanners.get(index)
        if scanner is None:
            scanner = self._scanners[index] = self.latch.scanner()
        return scanner

    def _on_assistant_message(self, message: dict[str, Any]) -> None:
        self._scanners.clear()
        blocks = [str(block) for block in message.get("text") or []]
        for block in blocks:
            self.latch.offer(block)
        self.output.assistant_text("".join(blocks))
