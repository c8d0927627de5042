"""What a run uses, measured at the gateway edge: requests, retries, tokens, model time, cost.

The proxy sees every model request and every event of every reply, whichever engine sent it,
so the meter lives there: `model_seconds` is the time at least one request was in flight
(active model time, not wall time), and the tokens are the gateway's own counts (Anthropic's
`message_start` / `message_delta` usage, OpenAI's `usage` chunk). `cost_usd` comes from the
price table below (US dollars per million tokens, as the model makers list them), which the
config file's `[prices]` (or `WIZARD_PRICES`, JSON) extends or overrides; a model in
neither has no cost (None), never a guessed one.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from wizard.errors import ConfigError, UsageError
from wizard.outcome import Usage

# Model id prefix → (input, output, cache read, cache write), USD per million tokens.
PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-sonnet-4": (3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": (1.0, 5.0, 0.10, 1.25),
}


class UsageMeter:
    """Counts one session's model requests and what their replies said they used."""

    def __init__(self) -> None:
        self.requests = 0  # sent to the gateway, retries included
        self.turns = 0  # model requests the engine made (its turns), each counted once
        self.refused = 0  # requests refused once the budget was spent: no turn
        self.retries = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.model_seconds = 0.0
        self._in_flight = 0
        self._since = 0.0
        self._pending_output = 0

    def started(self) -> None:
        """A model request went out."""
        if self._in_flight == 0:
            self._since = time.monotonic()
        self._in_flight += 1

    def ended(self) -> None:
        """A model request's reply ended (or broke)."""
        self._in_flight -= 1
        if self._in_flight == 0:
            self.model_seconds += time.monotonic() - self._since

    def event(self, api: str, event: Mapping[str, Any]) -> None:
        """One event of a streamed reply: the usage it reports, if any."""
        if api == "anthropic":
            kind = event.get("type")
            if kind == "message_start":
                usage = (event.get("message") or {}).get("usage") or {}
                self.input_tokens += int(usage.get("input_tokens") or 0)
                self.cache_read_tokens += int(usage.get("cache_read_input_tokens") or 0)
                self.cache_write_tokens += int(usage.get("cache_creation_input_tokens") or 0)
                self._pending_output = int(usage.get("output_tokens") or 0)
            elif kind == "message_delta":  # the reply's output so far, counted once at stop
                usage = event.get("usage") or {}
                self._pending_output = int(usage.get("output_tokens") or self._pending_output)
            elif kind == "message_stop":
                self.output_tokens += self._pending_output
                self._pending_output = 0
            return
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            self.input_tokens += int(usage.get("prompt_tokens") or 0) - cached
            self.cache_read_tokens += cached
            self.output_tokens += int(usage.get("completion_tokens") or 0)

    def usage(self, model: str, prices: Mapping[str, tuple[float, ...]], **rest: Any) -> Usage:
        """This meter's counts as a `Usage` (with `rest`: turns and times), costed."""
        usage = Usage(
            model_requests=self.requests,
            retries=self.retries,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            model_seconds=round(self.model_seconds, 3),
            **rest,
        )
        price = next((p for prefix, p in prices.items() if model.startswith(prefix)), None)
        if price is None:
            return usage
        tokens = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
                  usage.cache_write_tokens)  # fmt: skip
        cost = sum(count * rate for count, rate in zip(tokens, price, strict=False)) / 1e6
        return replace(usage, cost_usd=round(cost, 8))


def price_table(environ: Mapping[str, str]) -> dict[str, tuple[float, ...]]:
    """The price table, with `WIZARD_PRICES` (the config file's `[prices]`) over it: longer
    prefixes first, so `claude-sonnet-4-6` set there wins over `claude-sonnet-4`."""
    table: dict[str, tuple[float, ...]] = dict(PRICES)
    if raw := environ.get("WIZARD_PRICES"):
        try:
            extra = json.loads(raw)
            table.update({str(k): tuple(float(x) for x in v) for k, v in extra.items()})
        except (ValueError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"WIZARD_PRICES is not a price table: {exc}",
                'Give it as JSON: {"model-id": [input, output, cache_read, cache_write]} in '
                "US dollars per million tokens, or as [prices] in the config file.",
            ) from exc
    return dict(sorted(table.items(), key=lambda item: -len(item[0])))


@dataclass(frozen=True)
class Budget:
    """A run's limits: model turns (requests), cost in USD, wall time in seconds."""

    max_turns: int | None = None
    max_cost: float | None = None
    max_seconds: float | None = None


class RunSpend:
    """What a whole run has spent so far, across its sessions (an orchestrator's planner and
    tasks share one), against its budget."""

    def __init__(self, budget: Budget, model: str, prices: Mapping[str, tuple[float, ...]]) -> None:
        self.budget = budget
        self.model = model
        self.prices = prices
        self.started = time.monotonic()
        self._meters: list[UsageMeter] = []

    def meter(self) -> UsageMeter:
        """A new session's meter, counted toward this run."""
        meter = UsageMeter()
        self._meters.append(meter)
        return meter

    def total(self) -> Usage:
        """What the whole run has used so far (its wall time from its start)."""
        used = sum((m.usage(self.model, self.prices) for m in self._meters), Usage())
        return replace(used, wall_seconds=round(time.monotonic() - self.started, 3))

    def time_left(self) -> float | None:
        """Seconds until the time budget is spent (negative: past it); None without one."""
        if self.budget.max_seconds is None:
            return None
        return self.budget.max_seconds - (time.monotonic() - self.started)

    def out_of_time(self) -> str:
        """Why the run stops at its deadline."""
        seconds = time.monotonic() - self.started
        return f"the time budget ({self.budget.max_seconds:g} s) is spent: {seconds:.0f} s"

    def exceeded(self) -> str | None:
        """Why the next model request may not go out, or None while within the budget."""
        budget = self.budget
        turns = sum(meter.turns for meter in self._meters)
        if budget.max_turns is not None and turns >= budget.max_turns:
            return f"the turn budget ({budget.max_turns}) is spent: {turns} model turns"
        if (left := self.time_left()) is not None and left <= 0:
            return self.out_of_time()
        if budget.max_cost is not None:
            costs = [m.usage(self.model, self.prices).cost_usd for m in self._meters]
            if any(cost is None for cost in costs):
                return None  # no price for this model: a cost budget cannot be kept
            spent = sum(cost or 0.0 for cost in costs)
            if spent >= budget.max_cost:
                return f"the cost budget (${budget.max_cost:g}) is spent: ${spent:.4f}"
        return None


@dataclass(frozen=True)
class BudgetFlags:
    """The budget as the command line gave it (`--max-time` as written)."""

    max_turns: int | None = None
    max_cost: float | None = None
    max_time: str | None = None


def run_budget(
    flags: BudgetFlags,
    environ: Mapping[str, str],
    model: str,
    prices: Mapping[str, tuple[float, ...]],
) -> Budget:
    """The run's budget: each limit from its flag, else `WIZARD_MAX_TURNS` / `_COST` / `_TIME`
    (the config file's `[run]` max_turns, max_cost, max_time); a `UsageError` for a value
    that is not one, or a cost budget on a model without a price."""
    turns = flags.max_turns if flags.max_turns is not None else _number(environ, "TURNS", int)
    cost = flags.max_cost if flags.max_cost is not None else _number(environ, "COST", float)
    seconds = None
    if flags.max_time is not None:
        seconds = duration_seconds(flags.max_time)
    elif text := environ.get("WIZARD_MAX_TIME"):
        seconds = duration_seconds(text, "WIZARD_MAX_TIME")
    if cost is not None and not any(model.startswith(prefix) for prefix in prices):
        raise UsageError(
            f"A cost budget needs the price of the model {model}, which wizard does not know.",
            f'Add it to the config file: [prices] "{model}" = [input, output, cache_read, '
            "cache_write] (USD per million tokens), or use --max-turns / --max-time.",
        )
    return Budget(turns, cost, seconds)


def _number(environ: Mapping[str, str], name: str, kind: type[int] | type[float]) -> Any:
    value = environ.get(f"WIZARD_MAX_{name}")
    if not value:
        return None
    try:
        number = kind(value)
    except ValueError:
        number = -1
    if number <= 0:
        raise UsageError(f"WIZARD_MAX_{name}={value!r} is not a number above 0.",
                         f"Set WIZARD_MAX_{name} to a number above 0, or unset it.")  # fmt: skip
    return number


_UNITS = {"h": 3600, "m": 60, "s": 1}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([hms]?)")


def duration_seconds(text: str, name: str = "--max-time") -> float:
    """Seconds in a duration such as `90`, `90s`, `10m`, `1.5h` or `1h30m`; a `UsageError` if
    not (`1.2.3m`, `10x`, `m`, a unit missing before the last part)."""
    spoken = text.strip().lower()
    parts = list(_DURATION_PART.finditer(spoken))
    whole = "".join(part.group(0) for part in parts) == spoken
    if not parts or not whole or any(not part.group(2) for part in parts[:-1]):
        raise UsageError(f"{name} {text!r} is not a duration.", "Give it as 90s, 10m or 1h30m.")
    total = sum(float(part.group(1)) * _UNITS[part.group(2) or "s"] for part in parts)
    if total <= 0:
        raise UsageError(f"{name} {text!r} is not a duration.", "Give it as 90s, 10m or 1h30m.")
    return total
