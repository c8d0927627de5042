"""The run pipeline: what the user asked for (`RunFlags`) resolved once into a `RunPlan`
(`plan_run`), then one `Run` of it, stage by stage, to its `Outcome`.

Usage and configuration errors are raised while planning, before anything starts (the CLI
turns them into exit code 2); a run's expected endings come back as an `Outcome`.
"""

from __future__ import annotations

from wizard.events import EventSink
from wizard.outcome import Outcome
from wizard.runner.harness.registry import make_harness
from wizard.runner.harness.types import Harness
from wizard.runner.plan import RunFlags, RunPlan, plan_run
from wizard.runner.run import Run
from wizard.tools.project import AskFunction

__all__ = ["Run", "RunFlags", "RunPlan", "make_harness", "plan_run", "run_program"]


async def run_program(
    plan: RunPlan,
    sink: EventSink,
    *,
    ask: AskFunction | None = None,
    run_id: str | None = None,
    harness: Harness | None = None,
) -> Outcome:
    """Run `plan` to its end, its events into `sink`."""
    return await Run(plan, sink, ask=ask, run_id=run_id, harness=harness)()
