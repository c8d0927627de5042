"""The executor's drain, with scripted task runs: how each way a task run ends is settled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from wizard.outcome import AgentErrorType, AgentResult
from wizard.runner.sequence.orchestrator.executor import RunTask, drain
from wizard.runner.sequence.orchestrator.queue import QueuedTask, TaskError, TaskQueue


async def test_a_task_run_that_raises_is_that_tasks_failure_and_is_retried(tmp_path: Path) -> None:
    queue = TaskQueue(tmp_path / "queue.json", "run-1")
    queue.enqueue("t", "Flaky", id="flaky")
    queue.enqueue("t", "After", id="after", depends_on=["flaky"])
    attempts: list[str] = []

    async def run_task(task: QueuedTask) -> AgentResult:
        attempts.append(task.id)
        if attempts.count(task.id) == 1 and task.id == "flaky":
            raise RuntimeError("the harness broke")
        queue.report(task.id, "done", "ok")
        return AgentResult()

    assert await drain(queue, run_task, max_parallel=2) is None
    assert attempts == ["flaky", "flaky", "after"]
    assert [t.status for t in queue.tasks()] == ["done", "done"]


async def test_a_task_run_that_always_raises_fails_for_good_never_stays_running(
    tmp_path: Path,
) -> None:
    queue = TaskQueue(tmp_path / "queue.json", "run-1")
    queue.enqueue("t", "Broken", id="broken")

    async def run_task(task: QueuedTask) -> AgentResult:
        raise ValueError("bad state")

    assert await drain(queue, run_task, max_parallel=1) is None
    (task,) = queue.tasks()
    assert task.status == "failed" and task.attempts == 2
    assert task.error is not None and "ValueError: bad state" in task.error.message


def stopping_together(latched: dict[str, float]) -> RunTask:
    """Task runs that all stop the run, returning at the same moment, latched at `latched`."""
    release = asyncio.Event()

    async def run_task(task: QueuedTask) -> AgentResult:
        if task.id == list(latched)[-1]:
            release.set()
        await release.wait()
        error = (
            AgentErrorType.ABORT if task.id != "violation" else AgentErrorType.SECURITY_VIOLATION
        )
        return AgentResult(error, f"stop of {task.id}", stopped_at=latched[task.id])

    return run_task


async def test_tasks_that_abort_together_end_the_run_the_same_way_every_time(
    tmp_path: Path,
) -> None:
    """Two tasks whose runs stop at once: the marker latched first decides, every time (set
    order decided before: B won 31 of 40), and each task keeps its own reason."""
    winners = set()
    for attempt in range(40):
        queue = TaskQueue(tmp_path / f"queue-{attempt}.json", "run-1")
        queue.enqueue("t", "A", id="a")
        queue.enqueue("t", "B", id="b")
        latched = {"a": 10.0, "b": 10.0 + (0.001 if attempt % 2 else -0.001)}
        stop = await drain(queue, stopping_together(latched), max_parallel=2)
        assert stop is not None
        expected = "a" if attempt % 2 else "b"
        assert stop.task.id == expected and stop.result.message == f"stop of {expected}"
        winners.add(stop.task.id)
        for task in queue.tasks():
            assert task.status == "failed" and task.error is not None
            assert (task.error.type, task.error.message) == ("aborted", f"stop of {task.id}")
    assert winners == {"a", "b"}


async def test_a_tie_goes_to_the_task_enqueued_first(tmp_path: Path) -> None:
    """A violation and an abort latched at the same moment: enqueue order decides."""
    queue = TaskQueue(tmp_path / "queue.json", "run-1")
    for task_id in ("violation", "marker"):
        queue.enqueue("t", task_id, id=task_id)
    stop = await drain(queue, stopping_together({"violation": 5.0, "marker": 5.0}), 2)
    assert stop is not None and stop.task.id == "violation"
    assert queue.get("marker").error == TaskError("aborted", "stop of marker")


async def test_a_dependent_waits_for_its_dependencys_run_to_end_not_its_report(
    tmp_path: Path,
) -> None:
    """A reports done in the middle of its message and goes on; C (independent) ends
    meanwhile. B (after A) must not start while A's run is live."""
    queue = TaskQueue(tmp_path / "queue.json", "run-1")
    queue.enqueue("t", "A", id="a")
    queue.enqueue("t", "C", id="c")
    queue.enqueue("t", "B", id="b", depends_on=["a"])
    a_goes_on, events = asyncio.Event(), []

    async def run_task(task: QueuedTask) -> AgentResult:
        events.append(f"start {task.id}")
        queue.report(task.id, "done", "ok")
        if task.id == "a":
            asyncio.get_running_loop().call_later(0.1, a_goes_on.set)
            await a_goes_on.wait()  # the rest of A's message still runs; C ends meanwhile
        events.append(f"end {task.id}")
        return AgentResult()

    assert await drain(queue, run_task, max_parallel=3) is None
    assert events.index("start b") > events.index("end a")
