"""Scenario files for the scripted gateway: what it answers, in which order.

A scenario is either one ordered script, served one response per model request whichever
endpoint asks::

    {"responses": [R, ...]}

or several scripts for conversations that run in parallel, each picked by a text that occurs
in the request's first user message::

    {"conversations": [{"match": "text", "responses": [R, ...]}, ...]}

`R` is a blocks response, a refusal, or an HTTP error (see the models below).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from wizard.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextBlock(_Strict):
    """Assistant text."""

    text: str


class ThinkingBlock(_Strict):
    """Assistant thinking (reasoning) text."""

    thinking: str


class ToolCall(_Strict):
    """One tool call: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallBlock(_Strict):
    """An assistant tool call."""

    tool_call: ToolCall


Block = TextBlock | ThinkingBlock | ToolCallBlock


Fault = Literal["empty", "eof", "stall", "invalid-json", "reset"]


class BlocksResponse(_Strict):
    """A normal model answer: blocks streamed in order, cut early if `drop_after_chars`.

    `fault` breaks the stream after `fault_after_frames` SSE frames: `empty` answers 200 with
    no events at all; `eof` ends the stream cleanly but without its terminator; `stall`
    sends nothing more while keeping the connection open; `invalid-json` sends an event
    whose data is not JSON (then carries on); `reset` resets the connection (TCP RST).
    """

    kind: Literal["blocks"] = "blocks"
    blocks: list[Block]
    chunk_chars: Annotated[int, Field(ge=1)] = 8
    delay_ms: Annotated[int, Field(ge=0)] = 0
    # A model's time to first token: wait this long before the first byte of the answer.
    latency_ms: Annotated[int, Field(ge=0)] = 0
    drop_after_chars: Annotated[int, Field(ge=0)] | None = None
    fault: Fault | None = None
    fault_after_frames: Annotated[int, Field(ge=0)] = 0


class RefusalResponse(_Strict):
    """The gateway refuses: one text block holding its refusal marker and the reason."""

    kind: Literal["refusal"] = "refusal"
    refusal: str
    chunk_chars: Annotated[int, Field(ge=1)] = 8
    delay_ms: Annotated[int, Field(ge=0)] = 0


class ErrorSpec(_Strict):
    """An HTTP error answer."""

    status: Annotated[int, Field(ge=400, le=599)]
    body: str = "scripted error"
    retry_after: Annotated[float, Field(ge=0)] | None = None


class ErrorResponse(_Strict):
    """The gateway answers with an HTTP error."""

    kind: Literal["error"] = "error"
    error: ErrorSpec


Response = BlocksResponse | RefusalResponse | ErrorResponse


def parse_response(raw: Any) -> Response:
    """Read one scripted response, picking its shape by the key it carries."""
    if not isinstance(raw, dict):
        raise ValueError(f"a response must be an object, not {type(raw).__name__}")
    if "refusal" in raw:
        return RefusalResponse.model_validate(raw)
    if "error" in raw:
        return ErrorResponse.model_validate(raw)
    if "blocks" in raw:
        return BlocksResponse.model_validate(raw)
    raise ValueError(f"a response needs 'blocks', 'refusal' or 'error'; got keys {sorted(raw)}")


class Conversation(BaseModel):
    """One script, chosen for requests whose first user message contains `match`."""

    model_config = ConfigDict(extra="forbid")

    match: str | None = None
    responses: list[Response]

    @model_validator(mode="before")
    @classmethod
    def _parse_responses(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("responses"), list):
            data = {**data, "responses": [parse_response(r) for r in data["responses"]]}
        return data


class Scenario(BaseModel):
    """A whole scenario: one or more conversations."""

    model_config = ConfigDict(extra="forbid")

    conversations: list[Conversation]
    # Answer each request from its own history, not from a cursor: the response at the number
    # of model replies it carries, of the first conversation whose `match` is anywhere in its
    # messages. A run started over gets its script from the start, and runs of many
    # repositories (a fleet) share one gateway, each told apart by what its tools read.
    by_history: bool = False

    @model_validator(mode="before")
    @classmethod
    def _single_script(cls, data: Any) -> Any:
        if isinstance(data, dict) and "responses" in data:
            if "conversations" in data:
                raise ValueError("give either 'responses' or 'conversations', not both")
            rest = {k: v for k, v in data.items() if k != "responses"}
            return {"conversations": [{"responses": data["responses"]}], **rest}
        return data

    def route(self, first_user_text: str) -> int | None:
        """The index of the conversation that answers a request, or None."""
        for index, conversation in enumerate(self.conversations):
            if conversation.match is None or conversation.match in first_user_text:
                return index
        return None


def load_scenario(source: str | Path | dict[str, Any]) -> Scenario:
    """Load a scenario from a dict or a JSON/YAML file; a malformed one is a `ConfigError`."""
    try:
        if isinstance(source, dict):
            return Scenario.model_validate(source)
        path = Path(source)
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return Scenario.model_validate(data)
    except (OSError, json.JSONDecodeError, yaml.YAMLError, ValidationError, ValueError) as exc:
        name = "(inline)" if isinstance(source, dict) else source
        raise ConfigError(
            f"Scenario {name} is not valid: {exc}",
            hint='A scenario is {"responses": [...]} or {"conversations": [...]}; '
            "see wizard.testing.gateway.scenario.",
        ) from exc
