"""Faults at the gateway never end in success: the real pi engine, a hostile scripted gateway.

Every fault × both gateway APIs × the first and a later model request. Each case asserts the
outcome (an API error naming the gateway, never success and never "no progress"), how many
requests the gateway saw (the retry policy), that the run ended (a generous bound, not a speed
test), and that no process is left.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import run_live
from wizard.outcome import AgentErrorType

pytestmark = pytest.mark.live

APIS = ["anthropic-messages", "openai-completions"]
READ = {"blocks": [{"tool_call": {"name": "read", "arguments": {"path": "app.py"}}}]}
DONE = {"blocks": [{"text": "Done."}]}
REMARK = {"blocks": [{"text": "[WIZARD-REMARK] -"}]}
REPLY = {"blocks": [{"text": "Working on it, one step at a time.\nStill going."}], "chunk_chars": 6}
ENDS_WITHIN_S = 60


def _faulty(fault: str) -> dict[str, Any]:
    return {**REPLY, "fault": fault, "fault_after_frames": 0 if fault == "empty" else 3}


@pytest.mark.parametrize("later", [False, True], ids=["first-request", "later-request"])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("fault", ["empty", "eof", "invalid-json", "reset", "stall"])
async def test_a_gateway_fault_is_an_api_error_never_success(
    tmp_path: Path, fault: str, api: Any, later: bool
) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    responses = [READ] if later else []
    responses += [_faulty(fault), DONE, REMARK]
    started = time.monotonic()
    live = await run_live(tmp_path, {"responses": responses}, api=api, idle_timeout=2.0)
    assert time.monotonic() - started < ENDS_WITHIN_S
    assert live.result.error is AgentErrorType.API_ERROR, live.result
    assert "(gateway http://127.0.0.1:" in (live.result.message or ""), live.result.message
    # Mid-stream failures are never retried: the request that broke is the last one.
    assert len(live.gateway.requests) == (2 if later else 1)
    live.assert_no_process_left()


@pytest.mark.parametrize("api", APIS)
async def test_a_reset_inside_a_write_leaves_the_file_as_it_was(tmp_path: Path, api: Any) -> None:
    original = "".join(f"line {n}\n" for n in range(600))
    (tmp_path / "config.txt").write_text(original)
    content = "".join(f"new line {n}\n" for n in range(600))
    write = {
        "tool_call": {"name": "write", "arguments": {"path": "config.txt", "content": content}}
    }
    broken = {"blocks": [write], "chunk_chars": 16, "fault": "reset", "fault_after_frames": 40}
    live = await run_live(tmp_path, {"responses": [READ, broken, DONE, REMARK]}, api=api)
    assert live.result.error is AgentErrorType.API_ERROR, live.result
    assert (tmp_path / "config.txt").read_text() == original
    # The engine raised on the proxy's error event: it did not take the cut stream as a
    # finished reply, run the call, and ask the model again.
    assert len(live.gateway.requests) == 2
    live.assert_no_process_left()


@pytest.mark.parametrize("api", APIS)
async def test_overload_is_retried_by_wizard_not_by_pi(tmp_path: Path, api: Any) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    busy = {"error": {"status": 529, "body": "overloaded", "retry_after": 0}}
    scenario = {"responses": [busy, READ, busy, DONE, REMARK]}
    live = await run_live(tmp_path, scenario, api=api, retries=2)
    assert live.result.ok, live.result
    assert len(live.gateway.requests) == 5
    notices = [e for e in live.recorder.events if "gateway busy" in str(e)]
    assert len(notices) == 2


async def test_a_rate_limit_that_lasts_ends_after_the_policy(tmp_path: Path) -> None:
    limited = {"error": {"status": 429, "body": "rate limit exceeded", "retry_after": 0}}
    live = await run_live(tmp_path, {"responses": [limited] * 3}, retries=2)
    assert live.result.error is AgentErrorType.RATE_LIMIT
    assert len(live.gateway.requests) == 3


@pytest.mark.parametrize("api", APIS)
async def test_usage_is_measured_at_the_gateway_edge_retries_included(
    tmp_path: Path, api: Any
) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    busy = {"error": {"status": 529, "body": "overloaded", "retry_after": 0}}
    scenario = {"responses": [busy, READ, DONE, REMARK]}
    live = await run_live(tmp_path, scenario, api=api, retries=2)
    usage = live.result.usage
    assert live.result.ok and usage is not None, live.result
    assert (usage.model_requests, usage.retries) == (len(live.gateway.requests), 1)
    assert usage.input_tokens > 0 and usage.output_tokens > 0  # the gateway's own counts
    assert 0 < usage.model_seconds <= usage.wall_seconds
    assert usage.turns >= 2 and usage.cost_usd is None  # "scripted-1" has no price
