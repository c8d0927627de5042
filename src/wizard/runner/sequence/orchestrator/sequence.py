"""The orchestrator sequence: plan the setup as a task graph, then run it, one agent a task.

1. Install the program's skill (while the engine starts: `with_skill`); the seed run (the
   planner) fills the queue with `enqueue_task`, nudged at most 3 times while the queue is
   empty.
2. The executor drains the queue, each task in its own engine session (`harness.run_task`).
3. The verdict: a stop marker in the seed or any task ends the run as `aborted` with its
   reason and source (the program's matched abort case, else `<label> aborted`); a plan
   with no task, a required task that failed, or tasks that never ran end it as `failed`,
   naming the steps; otherwise the success outro counts the steps completed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from wizard.events import AnalyticsEvent, QueueTaskChanged, SpinnerStarted, SpinnerStopped
from wizard.layout import state_root
from wizard.outcome import AgentErrorType, AgentResult, Outcome, Outro, Usage
from wizard.runner.harness.types import Harness, TaskRunInputs
from wizard.runner.sequence.context import RunContext, host_tools, with_skill
from wizard.runner.sequence.orchestrator.executor import drain
from wizard.runner.sequence.orchestrator.prompts import (
    SEED_NUDGE,
    TASK_NUDGE,
    seed_prompt,
    task_prompt,
)
from wizard.runner.sequence.orchestrator.queue import QueuedTask, TaskQueue
from wizard.runner.sequence.orchestrator.tools import complete_tool, enqueue_tool
from wizard.runner.sequence.outcomes import AGENT_FINISHED, abort_outcome, route_result
from wizard.runner.sequence.outros import REPORT_TO, success_outro
from wizard.skills.install import SkillInstall, planned_install
from wizard.tools.base import HostTool
from wizard.tools.fence import Fence

UNPLANNED = "the wizard could not plan this setup"
# The planner reads the project; the tasks change it.
_PLANNER_READS_ONLY = ("write", "edit")


def queue_path(run_id: str) -> Path:
    """Where a run's queue is written: wizard's state folder, never the user's project."""
    return state_root() / "runs" / run_id / "queue.json"


@dataclass
class _Orchestrator:
    """One orchestrator run: the context, the skill install, the harness and the queue."""

    ctx: RunContext
    install: SkillInstall
    harness: Harness
    # What every tool call of its runs waits for (`RunInputs.tools_ready`): the skill's install.
    ready: asyncio.Future[bool] | None = None
    started: float = field(default_factory=time.monotonic)
    retried: int = 0
    # The tasks a resumed run carried over as finished (they do not run again).
    carried: list[str] = field(default_factory=list)
    # Whether a resumed run planned again (its first was interrupted while it planned).
    replanned: bool = False
    queue: TaskQueue = field(init=False)
    # What the planner's and the tasks' runs used, in all and by task id (a retried task
    # adds up its attempts).
    usage: Usage = field(default_factory=Usage)
    task_usage: dict[str, Usage] = field(default_factory=dict)

    def used(self, task: QueuedTask | None, result: AgentResult) -> AgentResult:
        """Count what a run used; its result."""
        usage = result.usage or Usage()
        self.usage += usage
        if task is not None:
            self.task_usage[task.id] = self.task_usage.get(task.id, Usage()) + usage
        return result

    def __post_init__(self) -> None:
        self.queue = TaskQueue(queue_path(self.ctx.run_id), self.ctx.run_id, self._transition)

    def emit(self, name: str, **properties: Any) -> None:
        self.ctx.sink(AnalyticsEvent(name, properties))

    def _transition(self, task: QueuedTask, before: QueuedTask | None) -> None:
        if before is not None and before.status == "failed" and task.status == "pending":
            self.retried += 1
        error = task.error.message if task.error is not None else None
        self.ctx.sink(
            QueueTaskChanged(
                task.id,
                task.type,
                task.label,
                task.status,
                task.attempts,
                task.started_at,
                task.finished_at,
                error,
            )
        )

    def inputs(
        self,
        prompt: str,
        queue_tool: HostTool,
        *,
        model: str | None = None,
        allowed: tuple[str, ...] = (),
        disallowed: tuple[str, ...] = (),
        **run: Any,
    ) -> TaskRunInputs:
        """A seed or task run's inputs: the program's tools and `queue_tool`; `run` holds the
        remaining `TaskRunInputs` fields (messages, `settled`, `reported`, `nudge`...)."""
        ctx = self.ctx
        program_tools = host_tools(ctx)

        def tools(fence: Fence) -> list[HostTool]:
            return [*program_tools(fence), queue_tool]

        return TaskRunInputs(
            prompt=prompt,
            model=model or ctx.binding.model,
            # An allow list names the queue tool too; no list allows every tool.
            allowed_tools=(*allowed, queue_tool.name) if allowed else (),
            disallowed_tools=(*ctx.program.disallowed_tools, *disallowed),
            tools=tools,
            tools_ready=self.ready,
            **ctx.run_settings(),
            **run,
        )

    async def plan(self) -> AgentResult:
        """The seed run: the planner fills the queue."""
        plan = self.ctx.program.orchestration
        optional = [t.id for t in plan.task_types if t.optional]
        enqueue = enqueue_tool(self.queue, [t.id for t in plan.task_types], optional)
        return self.used(
            None,
            await self.harness.run_task(
                self.inputs(
                    seed_prompt(self.ctx.program, self.install, self.queue.tasks()),
                    enqueue,
                    allowed=self.ctx.program.allowed_tools,
                    disallowed=_PLANNER_READS_ONLY,
                    spinner_message="Planning the setup...",
                    success_message="Planned the setup",
                    error_message="Planning failed",
                    settled=lambda: bool(self.queue.tasks()),
                    nudge=SEED_NUDGE,
                    analytics=self.labels(None),
                )
            ),
        )

    async def run_task(self, task: QueuedTask) -> AgentResult:
        """One task run, in its own engine session."""
        program = self.ctx.program
        kind = program.orchestration.task_type(task.type)

        def reported() -> bool:
            return self.queue.get(task.id).reported

        return self.used(
            task,
            await self.harness.run_task(
                self.inputs(
                    task_prompt(program, self.install, self.queue, task),
                    complete_tool(self.queue, task.id),
                    model=kind.model,
                    allowed=kind.allowed_tools or program.allowed_tools,
                    disallowed=kind.disallowed_tools,
                    spinner_message="",
                    settled=reported,
                    reported=reported,
                    nudge=TASK_NUDGE,
                    analytics=self.labels(task),
                )
            ),
        )

    def labels(self, task: QueuedTask | None) -> dict[str, Any]:
        """The analytics properties that tell a run's agents apart."""
        if task is None:
            return {"task_type": "seed", "harness": self.ctx.binding.harness}
        return {"task_type": task.type, "task_id": task.id, "harness": self.ctx.binding.harness}

    def finished(self) -> None:
        """`orchestrator run finished`, with the final counts, whatever the ending."""
        tasks = self.queue.tasks()

        def count(*statuses: str) -> int:
            return sum(1 for task in tasks if task.status in statuses)

        self.emit(
            "orchestrator run finished",
            tasks_total=len(tasks),
            tasks_done=count("done"),
            tasks_failed=count("failed"),
            tasks_not_needed=count("not needed"),
            tasks_skipped=count("skipped"),
            tasks_stopped=count("stopped"),
            tasks_pending=count("pending", "running"),
            retried_task_count=self.retried,
            total_duration_ms=int((time.monotonic() - self.started) * 1000),
        )


async def run_orchestrator(ctx: RunContext, harness: Harness) -> Outcome:
    """Run `ctx.program` as a planned task graph on `harness`."""
    return await with_skill(ctx, lambda ready: _orchestrated(ctx, harness, ready))


async def _orchestrated(ctx: RunContext, harness: Harness, ready: asyncio.Future[bool]) -> Outcome:
    run = _Orchestrator(ctx, planned_install(ctx.program.skill), harness, ready)
    run.emit("orchestrator started", program_id=ctx.program.id)
    try:
        outcome = await _plan_and_drain(run)
    finally:  # every ending, a cancelled one too, reports the run's counts and its tasks
        run.finished()
        parts = ctx.tally.add(**_queue_parts(run))
    return replace(outcome, **parts)


async def _plan_and_drain(run: _Orchestrator) -> Outcome:
    ctx = run.ctx
    if ctx.resume_from is not None:  # `wizard resume`: the interrupted run's plan, carried on
        run.carried = run.queue.carry_over(queue_path(ctx.resume_from))
        run.replanned = not run.queue.planned
        run.emit("orchestrator resumed", resumed_from=ctx.resume_from, carried=len(run.carried),
                 replanned=run.replanned)  # fmt: skip
    if not run.queue.planned:  # a new run, or one interrupted while it planned: plan (again)
        seed = await run.plan()
        if not seed.ok:
            return _stopped(run, seed, None)
        run.queue.mark_planned()
    tasks = run.queue.tasks()
    if not tasks:
        return _unplanned(ctx)
    run.emit("orchestrator seeded", task_count=len(tasks), types=sorted({t.type for t in tasks}))
    ctx.sink(SpinnerStarted(ctx.program.spinner_message))
    stop = await drain(run.queue, run.run_task, ctx.max_parallel)
    outcome = _stopped(run, stop.result, stop.task) if stop is not None else _verdict(run)
    ending = {"succeeded": AGENT_FINISHED, "aborted": "Wizard aborted"}
    ctx.sink(SpinnerStopped(ending.get(outcome.status, ctx.program.failure_message)))
    return outcome


def _stopped(run: _Orchestrator, result: AgentResult, task: QueuedTask | None) -> Outcome:
    """The outcome of a run the seed (`task` None) or a task ended: its abort, or its error."""
    if result.error is AgentErrorType.ABORT:
        return abort_outcome(run.ctx, result, run.labels(task))
    return route_result(run.ctx, result)


def _unplanned(ctx: RunContext) -> Outcome:
    program = ctx.program
    body = (
        "The planner ended without enqueuing a single step, so nothing was set up. Run the "
        "program again, or run it with --sequence linear. " + REPORT_TO
    )
    outro = Outro("error", f"{program.label}: {UNPLANNED}", body, program.docs_url)
    return ctx.outcome("failed", outro, reason=UNPLANNED)


def _verdict(run: _Orchestrator) -> Outcome:
    """How a drained queue ends: failed required steps or steps never run fail the run."""
    ctx, program = run.ctx, run.ctx.program
    tasks = run.queue.tasks()
    failed = [t for t in tasks if t.status == "failed" and not t.optional]
    never_ran = [t for t in tasks if t.status in ("pending", "skipped") and not t.optional]
    if failed or never_ran:
        lines = [
            f"✗ {t.label} ({t.id}): {t.error.message if t.error else 'failed'}" for t in failed
        ]
        lines += [f"○ {t.label} ({t.id}): never ran" for t in never_ran]
        first = failed[0] if failed else never_ran[0]
        what = f"the '{first.label}' step failed" if failed else f"{len(never_ran)} steps never ran"
        body = (
            "\n".join(lines) + "\n\nReview what changed, then run the program again. " + REPORT_TO
        )
        outro = Outro("error", f"{program.label} did not finish: {what}", body, program.docs_url)
        return ctx.outcome("failed", outro, reason=what)
    if not any(not t.optional and t.status in ("done", "not needed") for t in tasks):
        return _nothing_required(run)
    return route_result(ctx, AgentResult(), _success(run, tasks))


def _nothing_required(run: _Orchestrator) -> Outcome:
    """Every step was optional: whatever they did, the setup itself did not happen."""
    ctx, program = run.ctx, run.ctx.program
    what = "no required step finished"
    body = (
        "Every step that finished was optional, so the setup itself did not happen. Review "
        "what changed, then run the program again. " + REPORT_TO
    )
    outro = Outro("error", f"{program.label} did not finish: {what}", body, program.docs_url)
    return ctx.outcome("failed", outro, reason=what)


def _success(run: _Orchestrator, tasks: list[QueuedTask]) -> Outro:
    done = sum(1 for t in tasks if t.status == "done")
    not_needed = sum(1 for t in tasks if t.status == "not needed")
    optional_failed = sum(1 for t in tasks if t.optional and t.status in ("failed", "skipped"))
    counted = len(tasks) - not_needed - optional_failed
    notes = [f"{not_needed} skipped as not needed"] if not_needed else []
    plural = "s" if optional_failed != 1 else ""
    notes += [f"{optional_failed} optional step{plural} failed"] if optional_failed else []
    suffix = f" ({', '.join(notes)})" if notes else ""
    outro = success_outro(run.ctx.program, AgentResult(), run.ctx.project_dir)
    message = f"{outro.message}: {done}/{counted} steps completed{suffix}"
    return replace(outro, message=message)


def _queue_parts(run: _Orchestrator) -> dict[str, Any]:
    """The outcome's parts from the queue as it ended, for `--outcome-json`: its tasks
    (and, for a resumed run, which it carried over as finished) and what they used."""
    tasks = tuple(
        {
            **_summary(asdict(t)),
            "carried_over": t.id in run.carried,
            "usage": asdict(run.task_usage[t.id]) if t.id in run.task_usage else None,
        }
        for t in run.queue.tasks()
    )
    wall = round(time.monotonic() - run.started, 3)  # the run's, not its tasks' summed
    usage = replace(run.usage, wall_seconds=wall)
    return {"tasks": tasks, "replanned": run.replanned, "usage": usage}


def _summary(task: dict[str, Any]) -> dict[str, Any]:
    error = task.get("error") or {}
    return {
        "id": task.get("id"),
        "type": task.get("type"),
        "label": task.get("label"),
        "status": task.get("status"),
        "attempts": task.get("attempts"),
        "error": error.get("type"),
        "reason": error.get("message"),
    }
