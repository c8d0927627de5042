"""How a harness result becomes a run's outcome, the same in every sequence.

An abort shows the program's matched abort case (or the generic aborted screen with the
reason) and ends as `aborted`; every other error has its own screen and ends as `failed`;
only a clean result runs the post-run hook and shows the success outro.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.events import AnalyticsEvent, LogLine
from wizard.outcome import AgentErrorType, AgentResult, Outcome, Outro
from wizard.runner.sequence.context import RunContext
from wizard.runner.sequence.outros import abort_outro, error_outro, success_outro

# The spinner's last word on a run that would succeed: the runner's checks come next.
AGENT_FINISHED = "The agent finished its work"


def route_result(ctx: RunContext, result: AgentResult, success: Outro | None = None) -> Outcome:
    """Turn a harness result into the run's outcome, with its outro (`success` if it is one)."""
    program = ctx.program
    if result.error is AgentErrorType.ABORT:
        return abort_outcome(ctx, result)
    if result.error is not None:
        if result.error in (AgentErrorType.API_ERROR, AgentErrorType.RATE_LIMIT):
            properties = {
                "integration": program.id,
                "error_type": result.error.value,
                "error_message": result.message,
            }
            ctx.sink(AnalyticsEvent("agent api error", properties))
        outro = error_outro(program, result)
        return ctx.outcome("failed", outro, reason=result.message, error_type=result.error)
    if program.post_run is not None:
        try:
            program.post_run(ctx.project_dir)
        except Exception as exc:  # the user must hear the setup is not finished
            ctx.sink(LogLine(f"post-run step failed: {exc}", "error"))
            message = f"{program.label}: the final step failed"
            outro = Outro("error", message, str(exc), program.docs_url)
            return ctx.outcome("failed", outro, reason=str(exc))
    outro = success or success_outro(program, result, ctx.project_dir)
    return ctx.outcome("succeeded", outro)


def abort_outcome(
    ctx: RunContext, result: AgentResult, context: Mapping[str, Any] | None = None
) -> Outcome:
    """The matched abort case's screen, or the generic one; `agent aborted` either way.

    `context` adds properties to the event (the orchestrator's task type and id).
    """
    reason = (result.message or "").strip()
    outro, case = abort_outro(ctx.program, reason)
    properties: dict[str, object] = {
        "integration": ctx.program.id,
        "reason": reason,
        "matched": case.message if case else None,
        **(context or {}),
    }
    if result.abort_source == "gateway_policy":
        properties["source"] = "gateway_policy"
    ctx.sink(AnalyticsEvent("agent aborted", properties))
    return ctx.outcome(
        "aborted", outro, reason=reason, error_type=result.error, source=result.abort_source
    )
