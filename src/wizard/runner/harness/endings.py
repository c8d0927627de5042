"""How a run ended, in one place for every harness.

A harness feeds `RunState` and calls these in the order of precedence: a security violation,
then a stop marker, then an error; a linear run then goes through the completion guard
(`guard`: missing resources, no progress, open tasks) before it succeeds. Each ending stops
the spinner, emits its analytics and returns the `AgentResult`.
"""

from __future__ import annotations

from wizard.events import LogLine
from wizard.outcome import AgentErrorType, AgentResult
from wizard.runner.harness.failures import classify_failure
from wizard.runner.harness.state import RunState
from wizard.runner.harness.types import SessionStats
from wizard.signals import Marker

# Markers with which the agent says a resource the setup needs is out of reach.
_MISSING = (
    (Marker.ERROR_MCP_MISSING, AgentErrorType.MCP_MISSING, "Agent could not access PostHog MCP"),
    (
        Marker.ERROR_RESOURCE_MISSING,
        AgentErrorType.RESOURCE_MISSING,
        "Agent could not access setup resource",
    ),
)


def aborted(run: RunState) -> AgentResult:
    """The latched stop marker's ending, with its reason and source."""
    marker = run.latch.marker
    assert marker is not None
    run.stop("Wizard aborted")
    extra = {"source": "gateway_policy"} if marker.source == "gateway_policy" else {}
    run.emit("agent aborted", **run.timing(), **extra)
    output = run.output
    return AgentResult(
        AgentErrorType.ABORT,
        marker.reason,
        marker.source,
        dashboard_url=output.dashboard_url,
        notebook_url=output.notebook_url,
        stopped_at=run.latch.latched_at,
    )


def violated(run: RunState) -> AgentResult:
    """The fence's critical violation ended the run."""
    run.stop("Security violation detected")
    run.emit("agent aborted", **run.timing())
    error = AgentErrorType.SECURITY_VIOLATION
    return AgentResult(error, run.fence.violation, stopped_at=run.violated_at)


def failed(run: RunState, message: str) -> AgentResult:
    """A model request failed: a rate limit, or an API error naming the gateway."""
    run.stop(run.inputs.error_message)
    # For the log: the screen says it once, with what to check.
    run.inputs.sink(LogLine(f"{run.engine} backend error: {message}", "debug"))
    run.emit("agent aborted", **run.timing())
    error, shown = classify_failure(message, run.inputs.gateway.url)
    return AgentResult(error, shown)


def over_budget(run: RunState, why: str) -> AgentResult:
    """The run's budget was spent: its next model request was refused, or its deadline
    passed while it worked."""
    run.stop(run.inputs.error_message)
    run.inputs.sink(LogLine(f"budget reached: {why}", "warning"))
    run.emit("agent aborted", **run.timing(), budget=why)
    return AgentResult(AgentErrorType.BUDGET_EXCEEDED, why)


def engine_failed(run: RunState, message: str) -> AgentResult:
    """The engine crashed, hung or could not start."""
    run.stop(run.inputs.error_message)
    run.inputs.sink(LogLine(f"{run.engine} engine failure: {message}", "error"))
    run.emit("agent aborted", **run.timing())
    return AgentResult(AgentErrorType.ENGINE_FAILURE, message)


def interrupted(run: RunState) -> AgentResult | None:
    """The ending a violation, a marker or the deadline forces, in that order (the fence
    wins); else None."""
    if run.fence.violation is not None:
        return violated(run)
    if run.latch.marker is not None:
        return aborted(run)
    if run.out_of_time is not None:
        return over_budget(run, run.out_of_time)
    return None


def guard(run: RunState) -> AgentResult | None:
    """The completion guard of a linear run: why it did not finish, or None."""
    output = run.output
    for marker, error, stop in _MISSING:
        if output.signals.has(marker):
            run.stop(stop)
            run.emit("agent aborted", **run.timing())
            return AgentResult(error, f"The agent reported {marker}.")
    if output.tool_calls == 0:
        run.stop("Agent made no changes")
        run.emit("agent no progress", assistant_turns=output.assistant_turns)
        run.emit("agent aborted", **run.timing())
        return AgentResult(AgentErrorType.NO_PROGRESS, "The agent made no tool calls.")
    if run.todos.has_open_todos():
        run.stop("Agent stopped before finishing")
        run.emit("agent incomplete tasks", open_tasks=True)
        run.emit("agent aborted", **run.timing())
        return AgentResult(AgentErrorType.INCOMPLETE_TASKS, "The agent left tasks open.")
    return None


def succeeded(run: RunState, stats: SessionStats) -> AgentResult:
    """A linear run that passed the guard: its remark and signals, then `completed`."""
    if remark := run.output.remark():
        run.emit("wizard remark", remark=remark)
    if (detail := run.output.signals.skill_install_failure()) is not None:
        run.emit("agent continued without skill", detail=detail)
    return completed(run, stats)


def completed(run: RunState, stats: SessionStats) -> AgentResult:
    """`agent completed` with the token counts; the clean result."""
    output = run.output
    run.emit(
        "agent completed",
        **run.timing(),
        num_turns=output.assistant_turns,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        cache_creation_input_tokens=stats.cache_write_tokens,
        cache_read_input_tokens=stats.cache_read_tokens,
    )
    run.stop(run.inputs.success_message)
    return AgentResult(dashboard_url=output.dashboard_url, notebook_url=output.notebook_url)
