"""Every harness wizard runs on, one entry each: its name, how to make it, the gateway APIs
its engine speaks. The switchboard checks a name against it, the plan a gateway's API, a run
makes its harness from it; a third engine is one entry here and its session class."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wizard.engines.claude import load_sdk
from wizard.runner.harness.anthropic.harness import AnthropicHarness
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewayApi, Harness


@dataclass(frozen=True)
class HarnessEntry:
    """One harness: how to make it, and what its engine speaks."""

    name: str
    make: Callable[[], Harness]
    apis: tuple[GatewayApi, ...]
    about: str


def _anthropic() -> Harness:
    load_sdk()  # missing: a usage error with the install command, before anything starts
    return AnthropicHarness()


HARNESSES: dict[str, HarnessEntry] = {
    entry.name: entry
    for entry in (
        HarnessEntry("pi", PiHarness, ("anthropic-messages", "openai-completions"),
                     "the pi coding agent, through wizard's pi host (the default)"),
        HarnessEntry("anthropic", _anthropic, ("anthropic-messages",),
                     "Claude Code, through the Claude Agent SDK (the legacy fallback)"),
    )
}  # fmt: skip


def make_harness(name: str) -> Harness:
    """The harness registered under `name` (the switchboard has checked it)."""
    return HARNESSES[name].make()
