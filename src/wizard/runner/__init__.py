"""The run pipeline: what the user asked for (`RunFlags`) resolved once into a `RunPlan`
(`plan_run`), then one `Run` of it, stage by stage, to its `Outcome`.

Usage and configuration errors are raised while planning, before anything starts (the CLI
turns them into exit code 2); a run's expected endings come back as an `Outcome`.

The names below are imported when first used, so that reading a light module of the runner
(the harness registry, for the command line's help) does not import the whole pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.ahead import Timeline
    from wizard.events import EventSink
    from wizard.outcome import Outcome, Tally
    from wizard.runner.harness.registry import make_harness
    from wizard.runner.harness.types import Harness
    from wizard.runner.plan import RunFlags, RunPlan, plan_run
    from wizard.runner.run import Run
    from wizard.tools.project import AskFunction

__all__ = ["Run", "RunFlags", "RunPlan", "make_harness", "plan_run", "run_program"]

_HOMES = {
    "Run": "wizard.runner.run",
    "RunFlags": "wizard.runner.plan",
    "RunPlan": "wizard.runner.plan",
    "plan_run": "wizard.runner.plan",
    "make_harness": "wizard.runner.harness.registry",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


async def run_program(
    plan: RunPlan,
    sink: EventSink,
    *,
    ask: AskFunction | None = None,
    run_id: str | None = None,
    harness: Harness | None = None,
    tally: Tally | None = None,
    ahead: Timeline | None = None,
) -> Outcome:
    """Run `plan` to its end, its events into `sink`; what it did so far in `tally`, for
    an ending it does not return (a cancellation); what was taken `ahead` of it (`__main__`
    starts some with the process) on its timeline."""
    from wizard.runner.run import Run

    return await Run(plan, sink, ask=ask, run_id=run_id, harness=harness, tally=tally,
                     ahead=ahead)()  # fmt: skip
