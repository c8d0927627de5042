"""Usage measured at the gateway edge: tokens from either API's events, model time, cost."""

from __future__ import annotations

import pytest

from wizard.errors import ConfigError
from wizard.outcome import Usage
from wizard.runner.harness.usage import PRICES, UsageMeter, price_table


def test_anthropic_events_give_the_tokens_once_per_message() -> None:
    meter = UsageMeter()
    start = {"type": "message_start", "message": {"usage": {
        "input_tokens": 100, "cache_read_input_tokens": 40, "cache_creation_input_tokens": 7,
        "output_tokens": 1}}}  # fmt: skip
    for event in (start, {"type": "message_delta", "usage": {"output_tokens": 25}},
                  {"type": "message_stop"}):  # fmt: skip
        meter.event("anthropic", event)
    usage = meter.usage("claude-sonnet-4-6", PRICES)
    assert (usage.input_tokens, usage.output_tokens) == (100, 25)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (40, 7)
    # 100 × 3 + 25 × 15 + 40 × 0.30 + 7 × 3.75, per million tokens
    assert usage.cost_usd == pytest.approx((300 + 375 + 12 + 26.25) / 1e6)


def test_openai_usage_chunks_count_cached_tokens_apart() -> None:
    meter = UsageMeter()
    meter.event("openai", {"choices": [{"delta": {"content": "hi"}}]})
    meter.event("openai", {"usage": {"prompt_tokens": 90, "completion_tokens": 12,
                                     "prompt_tokens_details": {"cached_tokens": 30}}})  # fmt: skip
    usage = meter.usage("some-local-model", PRICES)
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (60, 30, 12)
    assert usage.cost_usd is None  # a model without a known price has no cost, not a guess


def test_model_time_is_time_with_a_request_in_flight_not_their_sum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two requests overlap (the first from 10 s to 13 s, the second from 11 s to 14 s), then
    one runs from 20 s to 21 s: 5 s with a request in flight, not 3 + 3 + 1."""
    now = [0.0]
    monkeypatch.setattr("wizard.runner.harness.usage.time.monotonic", lambda: now[0])
    meter = UsageMeter()
    for at, step in [(10, meter.started), (11, meter.started), (13, meter.ended),
                     (14, meter.ended), (20, meter.started), (21, meter.ended)]:  # fmt: skip
        now[0] = at
        step()
    assert meter.model_seconds == 5.0


def test_the_config_file_prices_override_and_extend_the_table() -> None:
    table = price_table(
        {"WIZARD_PRICES": '{"claude-sonnet-4-6": [1, 2, 0, 0], "mine": [1, 1, 0, 0]}'}
    )
    assert next(iter(table)) == "claude-sonnet-4-6"  # the longer prefix is matched first
    usage = UsageMeter()
    usage.input_tokens = 1_000_000
    assert usage.usage("claude-sonnet-4-6", table).cost_usd == 1.0
    with pytest.raises(ConfigError, match="WIZARD_PRICES"):
        price_table({"WIZARD_PRICES": "[1, 2]"})


def test_usage_adds_up_over_runs_and_a_cost_needs_both() -> None:
    a = Usage(model_requests=2, input_tokens=10, model_seconds=1.5, cost_usd=0.01)
    b = Usage(model_requests=1, retries=1, input_tokens=5, model_seconds=0.5, cost_usd=0.02)
    total = a + b
    assert (total.model_requests, total.retries, total.input_tokens) == (3, 1, 15)
    assert total.model_seconds == 2.0 and total.cost_usd == pytest.approx(0.03)
    assert (a + Usage(model_requests=1)).cost_usd is None  # a request with no price
    # An empty usage, the start of a sum, is nothing to price: an orchestrator's sum of its
    # tasks started from one and so never had a cost.
    assert (Usage() + a).cost_usd == 0.01


def test_the_config_files_prices_reach_the_table(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    from wizard.config import with_config

    config = Path(str(tmp_path)) / "config.toml"
    config.write_text('[prices]\n"my-model" = [1.0, 5.0, 0.1, 1.25]\n')
    table = price_table(with_config({"WIZARD_CONFIG": str(config)}))
    assert table["my-model"] == (1.0, 5.0, 0.1, 1.25)


def test_a_cost_budget_is_spent_when_the_cost_reaches_it() -> None:
    from wizard.runner.harness.usage import Budget, RunSpend

    prices = {"m": (3.0, 15.0, 0.3, 3.75)}
    spend = RunSpend(Budget(max_cost=3.0), "m", prices)
    meter = spend.meter()
    meter.input_tokens = 999_999
    assert spend.exceeded() is None
    meter.input_tokens = 1_000_000  # exactly $3.00
    assert spend.exceeded() == "the cost budget ($3) is spent: $3.0000"
