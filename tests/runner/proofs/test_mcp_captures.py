"""What the MCP probe counts as the capture of a tool call: an event sent after the call
began, naming the tool as its name or a property's value, with the probe's key, whatever
shape the SDK sends (a batch, one event, gzip, a form-encoded body). What a server sends as
it starts or lists its tools never counts, and a tool's own missing credential is named."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from wizard.runner.proofs.forwarding import own_credential
from wizard.runner.proofs.mcp import _captures, _made_before, events
from wizard.runner.proofs.sink import Received

KEY = "wizard_probe_key_abc"


def _batch(*items: dict[str, object], key: str = KEY) -> list[tuple[dict[str, object], str]]:
    body = json.dumps({"api_key": key, "batch": list(items)}).encode()
    return events(Received("POST", "/batch/", {"content-type": "application/json"}, body))


TOOL_CALL = {"event": "$mcp_tool_call", "properties": {"$mcp_tool_name": "get_alerts"}}
TOOLS_LIST = {"event": "$mcp_tools_list",
              "properties": {"$mcp_listed_tool_names": ["get_alerts", "get_forecast"]}}  # fmt: skip


def test_a_tool_call_event_with_the_key_counts() -> None:
    assert _captures(_batch(TOOL_CALL), "get_alerts", KEY) == [TOOL_CALL]
    assert _captures(_batch(TOOL_CALL, key="phc_written_in"), "get_alerts", KEY) == []
    assert _captures(_batch(TOOL_CALL), "get_forecast", KEY) == []


def test_a_list_of_every_tool_or_a_start_up_event_is_not_a_call() -> None:
    started = {"event": "server started", "properties": {"tools": "get_alerts,get_forecast"}}
    assert _captures(_batch(TOOLS_LIST, started), "get_alerts", KEY) == []


def test_an_event_made_before_the_call_is_not_its_capture_though_it_arrives_after() -> None:
    """An SDK's queue may deliver a start-up event after the call: its timestamp says when
    it was made."""
    call_began = 1_800_000_000.0
    early = {**TOOL_CALL, "timestamp": "2027-01-15T07:00:00+00:00"}  # an hour before
    late = {**TOOL_CALL, "timestamp": "2027-01-15T08:00:01Z"}
    assert _made_before(early, call_began) and not _made_before(late, call_began)
    assert not _made_before(TOOL_CALL, call_began)  # no timestamp: its arrival decides


@pytest.mark.parametrize(
    "shape",
    ["batch", "gzip", "single", "form", "bearer"],
)
def test_the_shapes_sdks_send_are_read(shape: str) -> None:
    event = {"event": "mcp tool called", "distinct_id": "x", "properties": {"tool": "get_alerts"}}
    body = json.dumps({"api_key": KEY, "batch": [event]}).encode()
    headers = {"content-type": "application/json"}
    if shape == "gzip":
        body, headers = gzip.compress(body), {**headers, "content-encoding": "gzip"}
    elif shape == "single":
        body = json.dumps({**event, "api_key": KEY}).encode()
    elif shape == "form":
        data = base64.b64encode(
            json.dumps([{**event, "properties": {**event["properties"], "token": KEY}}]).encode()
        ).decode()  # type: ignore[dict-item]
        body = f"data={data}".encode()
        headers = {"content-type": "application/x-www-form-urlencoded"}
    elif shape == "bearer":
        body = json.dumps({"batch": [event]}).encode()
        headers = {**headers, "authorization": f"Bearer {KEY}"}
    found = events(Received("POST", "/i/v0/e/", headers, body))
    assert [(e["event"], key) for e, key in found] == [("mcp tool called", KEY)]


def test_a_tool_named_as_the_event_counts() -> None:
    named = {"event": "get_alerts", "properties": {}}
    assert _captures(_batch(named), "get_alerts", KEY) == [named]


@pytest.mark.parametrize(
    ("said", "credential"),
    [
        ("Traceback...\nKeyError: 'OPENWEATHER_API_KEY'\n", "KeyError: 'OPENWEATHER_API_KEY'"),
        ("Error: WEATHER_API_KEY is not set\n", "WEATHER_API_KEY is not set"),
        ("ValueError: missing api key for the forecast service", "missing api key"),
        ("ModuleNotFoundError: No module named 'httpx'", None),
    ],
)
def test_a_missing_credential_of_the_apps_own_is_named(said: str, credential: str | None) -> None:
    found = own_credential(said)
    assert (found is None) == (credential is None)
    if credential is not None:
        assert found is not None and found.startswith(credential)
