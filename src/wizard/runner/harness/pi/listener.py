"""Reads the pi host's event stream for a run: stop markers, turns, tool calls, status, signals.

Markers count only in the text blocks of assistant messages: streamed text is scanned per
block as it arrives (`text_delta`, keyed by the block's `index`), and each complete assistant
message is scanned block by block at `message_end`. Thinking, tool-call arguments, tool
results and user messages never reach this listener.

The remark turn (after `enter_remark()`) is read only for the remark itself: nothing in it,
text or tool call, changes how the run is classified.
"""

from __future__ import annotations

from typing import Any

from wizard.events import EventSink, LogLine, SpinnerMessage, ToolCalled
from wizard.runner.harness.latch import BlockScanner, StopLatch
from wizard.signals import OutputSignals, dashboard_url, last_status_line, notebook_url


class RunListener:
    """The pi harness's subscriber for one run."""

    def __init__(self, latch: StopLatch, sink: EventSink) -> None:
        self.latch = latch
        self.sink = sink
        self.signals = OutputSignals()
        self.assistant_turns = 0
        self.tool_calls = 0
        self.dashboard_url: str | None = None
        self.notebook_url: str | None = None
        self._scanners: dict[int, BlockScanner] = {}
        self._remarks = OutputSignals(max_lines=8)
        self._in_remark = False

    def enter_remark(self) -> None:
        """What follows is the remark reply: it can neither end nor reclassify the run."""
        self.latch.disarm()
        self._in_remark = True

    def remark(self) -> str | None:
        """The agent's remark: from the remark reply, else from a work turn."""
        return self._remarks.remark() or self.signals.remark()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        index = int(event.get("index", 0))
        if self._in_remark and kind in ("text_start", "text_delta", "text_end"):
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
            if not self._in_remark:
                self.tool_calls += 1
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
        self.assistant_turns += 1
        blocks = [str(block) for block in message.get("text") or []]
        for block in blocks:
            self.latch.offer(block)
        text = "".join(blocks).strip()
        if not text:
            return
        self.sink(LogLine(text[:1000], "debug"))
        if self._in_remark:
            self._remarks.push(text)
            return
        self.dashboard_url = dashboard_url(text) or self.dashboard_url
        self.notebook_url = notebook_url(text) or self.notebook_url
        if status := last_status_line(text):
            self.sink(SpinnerMessage(status))
        self.signals.push(text)
