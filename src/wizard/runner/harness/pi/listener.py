"""Reads pi's event stream for a run: stop markers, turns, tool calls, status, signals.

Markers count only in the text blocks of assistant messages: streamed text is scanned per
block as it arrives (`message_update` text deltas, keyed by `contentIndex`), and each
complete assistant message is scanned block by block at `message_end`. Thinking, tool-call
arguments, tool results and user messages are never scanned.
"""

from __future__ import annotations

from typing import Any

from wizard.events import EventSink, LogLine, SpinnerMessage
from wizard.runner.harness.latch import BlockScanner, StopLatch
from wizard.signals import OutputSignals, dashboard_url, last_status_line, notebook_url


def _text_blocks(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [
        block["text"]
        for block in content or []
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


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

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_update":
            self._on_update(event.get("assistantMessageEvent") or {})
        elif kind == "message_end":
            message = event.get("message") or {}
            if message.get("role") == "assistant":
                self._on_assistant_message(message)
        elif kind == "tool_execution_start":
            self.tool_calls += 1
            self.sink(LogLine(f"→ {event.get('toolName')} {str(event.get('args'))[:200]}", "debug"))
        elif kind == "tool_execution_end" and event.get("isError"):
            self.sink(
                LogLine(f"✗ {event.get('toolName')}: {str(event.get('result'))[:300]}", "debug")
            )

    def _on_update(self, update: dict[str, Any]) -> None:
        kind = update.get("type")
        index = int(update.get("contentIndex", 0))
        if kind == "text_start":
            self._scanners[index] = self.latch.scanner()
        elif kind == "text_delta":
            self._scanners.setdefault(index, self.latch.scanner()).feed(
                str(update.get("delta", ""))
            )
        elif kind == "text_end":
            scanner = self._scanners.pop(index, None) or self.latch.scanner()
            content = update.get("content")
            scanner.finish(content if isinstance(content, str) else None)

    def _on_assistant_message(self, message: dict[str, Any]) -> None:
        self._scanners.clear()
        self.assistant_turns += 1
        blocks = _text_blocks(message)
        for block in blocks:
            self.latch.offer(block)
        text = "".join(blocks).strip()
        if not text:
            return
        self.sink(LogLine(text[:1000], "debug"))
        self.dashboard_url = dashboard_url(text) or self.dashboard_url
        self.notebook_url = notebook_url(text) or self.notebook_url
        if status := last_status_line(text):
            self.sink(SpinnerMessage(status))
        self.signals.push(text)
