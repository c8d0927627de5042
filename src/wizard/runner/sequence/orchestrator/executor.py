"""The executor: drains the queue in dependency order, up to `max_parallel` task runs at once.

After each task run the executor settles the task from what its run returned and what its
agent reported:

- a stop marker (`WIZARD_ABORT`) or a security violation ends the drain at once: the task is
  marked failed as `aborted` (or `security`) and never retried, no new task starts, and the
  task runs still going are cancelled, which aborts their engine sessions;
- a task that did not report, or whose run failed, is failed with the reason;
- a task run that raises is that task's failure (an engine failure naming the exception),
  never a task left `running`;
- a failed task gets its second attempt once; a task that depends on one that failed for good
  is skipped; a task whose dependency reported but whose run has not ended yet waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from wizard.logs import logger
from wizard.outcome import AgentErrorType, AgentResult
from wizard.runner.sequence.orchestrator.queue import QueuedTask, TaskError, TaskQueue

log = logger(__name__)

RunTask = Callable[[QueuedTask], Awaitable[AgentResult]]
MAX_STARTS = 200
NO_REPORT = "Task ended without calling complete_task."
# Results that end the whole run, not just their task: never retried.
_RUN_ENDERS = {
    AgentErrorType.ABORT: "aborted",
    AgentErrorType.SECURITY_VIOLATION: "security",
    # The run's budget is shared by its tasks: once spent, no task may start or start again.
    AgentErrorType.BUDGET_EXCEEDED: "budget",
}


@dataclass(frozen=True)
class DrainStop:
    """The task run that ended the drain early, and what it returned."""

    task: QueuedTask
    result: AgentResult


async def drain(queue: TaskQueue, run_task: RunTask, max_parallel: int) -> DrainStop | None:
    """Run the queue until nothing can run; the stop, if task runs ended the run.

    Every task run that ends is settled, those that end together and those stopped when the
    run ends alike; of several stops, the one latched first in time decides (ties: the order
    the tasks were enqueued), and each stopped task keeps its own reason.
    """
    running: dict[asyncio.Task[AgentResult], str] = {}
    stops: list[DrainStop] = []
    try:
        starts = 0
        while not stops:
            queue.skip_blocked()
            for task in _startable(queue, running)[: max(0, max_parallel - len(running))]:
                if starts >= MAX_STARTS:
                    break
                starts += 1
                started = queue.start(task.id)
                running[asyncio.ensure_future(run_task(started))] = task.id
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                if (stop := settle(queue, running.pop(future), _result_of(future))) is not None:
                    stops.append(stop)
    finally:
        stops += await _stop_running(queue, running)
    return _first(queue, stops)


def _startable(queue: TaskQueue, running: dict[asyncio.Task[AgentResult], str]) -> list[QueuedTask]:
    """Runnable tasks none of whose dependencies is still live: a task that reported `done`
    mid-message may go on working until its run ends, and no two tasks that depend on each
    other are ever live at once."""
    live = set(running.values())
    return [task for task in queue.runnable() if live.isdisjoint(task.depends_on)]


def _first(queue: TaskQueue, stops: list[DrainStop]) -> DrainStop | None:
    """The stop latched first in time; ties, and stops without a time, in enqueue order."""
    order = {task.id: index for index, task in enumerate(queue.tasks())}
    return min(
        stops,
        key=lambda s: (s.result.stopped_at or float("inf"), order.get(s.task.id, 0)),
        default=None,
    )


def settle(queue: TaskQueue, task_id: str, result: AgentResult) -> DrainStop | None:
    """Record how one task run ended; a `DrainStop` if it ends the run."""
    if result.error in _RUN_ENDERS:
        error = TaskError(_RUN_ENDERS[result.error], result.message or "")
        return DrainStop(queue.fail(task_id, error), result)
    task = queue.get(task_id)
    if task.status == "running":
        error = (
            TaskError(result.error.value, result.message or "")
            if result.error is not None
            else TaskError("no-report", NO_REPORT)
        )
        task = queue.fail(task_id, error)
    if task.status == "failed" and task.retryable:
        queue.requeue(task_id)
    return None


def _result_of(future: asyncio.Task[AgentResult]) -> AgentResult:
    """What a finished task run returned; an exception it raised is that task's failure."""
    error = future.exception()
    if error is None:
        return future.result()
    log.error("a task run raised", exc_info=error)
    reason = f"the task run failed unexpectedly: {type(error).__name__}: {error}"
    return AgentResult(error=AgentErrorType.ENGINE_FAILURE, message=reason)


async def _stop_running(
    queue: TaskQueue, running: dict[asyncio.Task[AgentResult], str]
) -> list[DrainStop]:
    """Cancel the task runs still going (their sessions abort and close). One that had
    already stopped the run itself is settled as such; the others are marked stopped."""
    for future in running:
        future.cancel()
    results = await asyncio.gather(*running, return_exceptions=True)
    stops = []
    for task_id, result in zip(running.values(), results, strict=True):
        if isinstance(result, AgentResult) and result.error in _RUN_ENDERS:
            stops.append(settle(queue, task_id, result))
        elif queue.get(task_id).status == "running":
            queue.stop(task_id)
    return [stop for stop in stops if stop is not None]
