"""Builders for scripted replies: the shape the scripted gateway serves and the fake pi
session plays (`{"blocks": [...]}` with `{"text"}`, `{"thinking"}` and `{"tool_call"}`
blocks), written once for every test and benchmark.

    reply(text("Looking."), call("read", path="app.py"))   # one assistant message
    said("Done.")                                           # a message of one text block
"""

from __future__ import annotations

from typing import Any

Block = dict[str, Any]


def text(value: str) -> Block:
    """A text block."""
    return {"text": value}


def call(name: str, **arguments: Any) -> Block:
    """A tool-call block."""
    return {"tool_call": {"name": name, "arguments": arguments}}


def reply(*blocks: Block, **options: Any) -> dict[str, Any]:
    """One scripted assistant message; `options` are the response's own (`chunk_chars`,
    `delay_ms`, `fault`…, or the fake session's `stop_reason`, `error`, `raise`, `hang`)."""
    return {"blocks": list(blocks), **options}


def said(value: str, **options: Any) -> dict[str, Any]:
    """A message that is one text block."""
    return reply(text(value), **options)
