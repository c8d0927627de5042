"""Every harness wizard runs on, one entry each: its name, its adapter, the gateway APIs its
engine speaks, how its engine is installed. The switchboard checks a name against it, the
plan a gateway's API, a run makes its harness from it, the CLI's help and `wizard engines
install` read it, and the layer test keeps the adapters apart by it. A third engine is one
entry here and its adapter package.

Nothing is imported until a run makes a harness, so the command line can read the registry
for its help text at no cost.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.ahead import Timeline
    from wizard.runner.harness.types import GatewayApi, Harness


@dataclass(frozen=True)
class HarnessEntry:
    """One harness: its adapter, what its engine speaks, how its engine is installed."""

    name: str
    # The adapter's package; its `harness` module holds `make`, which returns the harness
    # (or raises a `UsageError` naming the fix when its engine cannot be used).
    adapter: str
    make_name: str
    apis: tuple[GatewayApi, ...]
    about: str
    # `wizard engines install NAME` installs its engine; else it comes with a Python package
    # (`make` names the install command when it is missing).
    wizard_installs: bool

    def make(self) -> Harness:
        harness: Harness = getattr(importlib.import_module(f"{self.adapter}.harness"),
                                   self.make_name)()  # fmt: skip
        return harness


HARNESSES: dict[str, HarnessEntry] = {
    entry.name: entry
    for entry in (
        HarnessEntry("pi", "wizard.runner.harness.pi", "PiHarness",
                     ("anthropic-messages", "openai-completions"),
                     "the pi coding agent, through wizard's pi host (the default)",
                     wizard_installs=True),
        HarnessEntry("anthropic", "wizard.runner.harness.anthropic", "usable_harness",
                     ("anthropic-messages",),
                     "Claude Code, through the Claude Agent SDK (the legacy fallback)",
                     wizard_installs=False),
    )
}  # fmt: skip


def make_harness(name: str, ahead: Timeline) -> Harness:
    """The harness registered under `name` (the switchboard has checked it); what another
    harness's engine started with the process for nothing (on the run's timeline, `ahead`)
    is ended now."""
    ahead.discard_others(name)
    return HARNESSES[name].make()


def harness_names() -> str:
    """The harnesses' names for a help text: "pi or anthropic"."""
    names = list(HARNESSES)
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
