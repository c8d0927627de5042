"""The two wire formats the scripted gateway speaks: Anthropic Messages and OpenAI Chat.

Each `render_*` function turns a list of blocks into either a list of server-sent-event
frames (streamed) or one JSON body (not streamed). A frame records how many characters of
model content it carries, so the server can cut a stream after a given amount of content.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from wizard.testing.gateway.scenario import Block, TextBlock, ThinkingBlock, ToolCallBlock

Endpoint = str  # "anthropic" | "openai"


@dataclass(frozen=True)
class Frame:
    """One server-sent event and the amount of model content in it."""

    data: bytes
    content_chars: int = 0


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse(payload: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n".encode()


def _estimate_tokens(chars: int) -> int:
    return max(1, chars // 4)


def _content_chars(blocks: list[Block]) -> int:
    total = 0
    for block in blocks:
        if isinstance(block, TextBlock):
            total += len(block.text)
        elif isinstance(block, ThinkingBlock):
            total += len(block.thinking)
        else:
            total += len(json.dumps(block.tool_call.arguments))
    return total


def _has_tool_call(blocks: list[Block]) -> bool:
    return any(isinstance(b, ToolCallBlock) for b in blocks)


# --- Anthropic Messages -------------------------------------------------------------------


def anthropic_stream(blocks: list[Block], model: str, chunk: int, input_tokens: int) -> list[Frame]:
    """The SSE frames of an Anthropic Messages stream."""
    message: dict[str, Any] = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
    }
    frames = [Frame(_sse({"type": "message_start", "message": message}, "message_start"))]
    for index, block in enumerate(blocks):
        frames.extend(_anthropic_block_frames(index, block, chunk))
    stop = "tool_use" if _has_tool_call(blocks) else "end_turn"
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": _estimate_tokens(_content_chars(blocks))},
    }
    frames.append(Frame(_sse(delta, "message_delta")))
    frames.append(Frame(_sse({"type": "message_stop"}, "message_stop")))
    return frames


def _anthropic_block_frames(index: int, block: Block, chunk: int) -> list[Frame]:
    def start(content_block: dict[str, Any]) -> Frame:
        payload = {"type": "content_block_start", "index": index, "content_block": content_block}
        return Frame(_sse(payload, "content_block_start"))

    def delta(body: dict[str, Any], chars: int) -> Frame:
        payload = {"type": "content_block_delta", "index": index, "delta": body}
        return Frame(_sse(payload, "content_block_delta"), chars)

    if isinstance(block, TextBlock):
        frames = [start({"type": "text", "text": ""})]
        frames += [
            delta({"type": "text_delta", "text": c}, len(c)) for c in _chunks(block.text, chunk)
        ]
    elif isinstance(block, ThinkingBlock):
        frames = [start({"type": "thinking", "thinking": "", "signature": ""})]
        frames += [
            delta({"type": "thinking_delta", "thinking": c}, len(c))
            for c in _chunks(block.thinking, chunk)
        ]
        frames.append(delta({"type": "signature_delta", "signature": "scripted-signature"}, 0))
    else:
        call = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}"}
        frames = [start({**call, "name": block.tool_call.name, "input": {}})]
        arguments = json.dumps(block.tool_call.arguments)
        frames += [
            delta({"type": "input_json_delta", "partial_json": c}, len(c))
            for c in _chunks(arguments, chunk)
        ]
    stop = {"type": "content_block_stop", "index": index}
    return [*frames, Frame(_sse(stop, "content_block_stop"))]


def anthropic_body(blocks: list[Block], model: str, input_tokens: int) -> dict[str, Any]:
    """The JSON body of a non-streamed Anthropic Messages answer."""
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingBlock):
            content.append(
                {"type": "thinking", "thinking": block.thinking, "signature": "scripted-signature"}
            )
        else:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:20]}",
                    "name": block.tool_call.name,
                    "input": block.tool_call.arguments,
                }
            )
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if _has_tool_call(blocks) else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": _estimate_tokens(_content_chars(blocks)),
        },
    }


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """An Anthropic error body."""
    kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- OpenAI Chat Completions --------------------------------------------------------------


def _openai_chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    payload = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
    }
    return _sse(payload)


def openai_stream(
    blocks: list[Block], model: str, chunk: int, input_tokens: int, include_usage: bool
) -> list[Frame]:
    """The SSE frames of an OpenAI Chat Completions stream."""
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    frames = [Frame(_openai_chunk(cid, model, {"role": "assistant", "content": ""}, None))]
    tool_index = 0
    for block in blocks:
        if isinstance(block, TextBlock):
            frames += [
                Frame(_openai_chunk(cid, model, {"content": c}, None), len(c))
                for c in _chunks(block.text, chunk)
            ]
        elif isinstance(block, ThinkingBlock):
            frames += [
                Frame(_openai_chunk(cid, model, {"reasoning_content": c}, None), len(c))
                for c in _chunks(block.thinking, chunk)
            ]
        else:
            frames += _openai_tool_frames(cid, model, tool_index, block, chunk)
            tool_index += 1
    finish = "tool_calls" if tool_index else "stop"
    frames.append(Frame(_openai_chunk(cid, model, {}, finish)))
    if include_usage:
        usage = _openai_usage(input_tokens, _content_chars(blocks))
        payload = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time())}
        frames.append(Frame(_sse({**payload, "model": model, "choices": [], "usage": usage})))
    frames.append(Frame(b"data: [DONE]\n\n"))
    return frames


def _openai_tool_frames(
    cid: str, model: str, index: int, block: ToolCallBlock, chunk: int
) -> list[Frame]:
    head = {
        "index": index,
        "id": f"call_{uuid.uuid4().hex[:20]}",
        "type": "function",
        "function": {"name": block.tool_call.name, "arguments": ""},
    }
    frames = [Frame(_openai_chunk(cid, model, {"tool_calls": [head]}, None))]
    for part in _chunks(json.dumps(block.tool_call.arguments), chunk):
        call = {"index": index, "function": {"arguments": part}}
        frames.append(Frame(_openai_chunk(cid, model, {"tool_calls": [call]}, None), len(part)))
    return frames


def _openai_usage(input_tokens: int, output_chars: int) -> dict[str, int]:
    output_tokens = _estimate_tokens(output_chars)
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def openai_body(blocks: list[Block], model: str, input_tokens: int) -> dict[str, Any]:
    """The JSON body of a non-streamed OpenAI Chat Completions answer.

    Text on both sides of a tool call becomes one string: that is how this API is.
    """
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    thinking = "".join(b.thinking for b in blocks if isinstance(b, ThinkingBlock))
    calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:20]}",
            "type": "function",
            "function": {"name": b.tool_call.name, "arguments": json.dumps(b.tool_call.arguments)},
        }
        for b in blocks
        if isinstance(b, ToolCallBlock)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["reasoning_content"] = thinking
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": _openai_usage(input_tokens, _content_chars(blocks)),
    }


def openai_error(status: int, message: str) -> dict[str, Any]:
    """An OpenAI error body."""
    kind = "rate_limit_exceeded" if status == 429 else "server_error"
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}
