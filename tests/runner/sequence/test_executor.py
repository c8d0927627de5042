"""The executor's drain, with scripted task runs: how each way a task run ends is settled."""

from __future__ import annotations

from pathlib import Path

from wizard.outcome import AgentResult
from wizard.runner.sequence.orchestrator.executor import drain
from wizard.runner.sequence.orchestrator.queue import QueuedTask, TaskQueue


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
