"""The orchestrator's queue: transitions, dependency rules, and the file each one rewrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard.runner.sequence.orchestrator.queue import (
    MAX_TASKS,
    QueuedTask,
    QueueError,
    TaskError,
    TaskQueue,
)


def queue(tmp_path: Path) -> TaskQueue:
    return TaskQueue(tmp_path / "state" / "queue.json", "run-1")


def on_disk(q: TaskQueue) -> dict[str, str]:
    data = json.loads(q.path.read_text())
    assert (data["version"], data["run_id"]) == (1, "run-1")
    return {t["id"]: t["status"] for t in data["tasks"]}


def test_every_transition_is_on_disk(tmp_path: Path) -> None:
    q = queue(tmp_path)
    assert on_disk(q) == {}
    q.enqueue("check", "Check", id="c")
    assert on_disk(q) == {"c": "pending"}
    q.start("c")
    assert on_disk(q) == {"c": "running"}
    q.report("c", "done", "ok", "found billing.py")
    assert on_disk(q) == {"c": "done"}
    assert q.path.stat().st_mode & 0o777 == 0o600
    assert not [p for p in q.path.parent.iterdir() if p.name.endswith(".tmp")]


def test_ids_are_made_up_when_absent_and_unique(tmp_path: Path) -> None:
    q = queue(tmp_path)
    assert q.enqueue("change", "A").id == "change-1"
    q.enqueue("change", "B", id="change-2")
    assert q.enqueue("change", "C").id == "change-3"
    with pytest.raises(QueueError, match="already queued"):
        q.enqueue("change", "D", id="change-1")


def test_unknown_dependencies_and_cycles_are_refused(tmp_path: Path) -> None:
    q = queue(tmp_path)
    with pytest.raises(QueueError, match="unknown dependency 'later'"):
        q.enqueue("change", "A", depends_on=["later"])
    with pytest.raises(QueueError, match="cycle"):
        q.enqueue("change", "A", id="a", depends_on=["a"])
    assert q.tasks() == []


def test_the_queue_is_bounded(tmp_path: Path) -> None:
    q = queue(tmp_path)
    for n in range(MAX_TASKS):
        q.enqueue("change", f"T{n}")
    with pytest.raises(QueueError, match="full"):
        q.enqueue("change", "one too many")


def test_runnable_follows_dependencies(tmp_path: Path) -> None:
    q = queue(tmp_path)
    q.enqueue("a", "A", id="a")
    q.enqueue("b", "B", id="b", optional=True)
    q.enqueue("c", "C", id="c", depends_on=["a", "b"])
    assert [t.id for t in q.runnable()] == ["a", "b"]
    q.start("a")
    q.report("a", "not needed", "nothing to do")
    q.start("b")
    q.fail("b", TaskError("no-report", "silent"))
    assert [t.id for t in q.runnable()] == ["c"]  # b is optional: its failure blocks nothing


def test_a_failed_requirement_skips_its_dependents_transitively(tmp_path: Path) -> None:
    q = queue(tmp_path)
    q.enqueue("a", "A", id="a")
    q.enqueue("b", "B", id="b", depends_on=["a"])
    q.enqueue("c", "C", id="c", depends_on=["b"])
    q.start("a")
    q.report("a", "failed", "broken")
    skipped = q.skip_blocked()
    assert [t.id for t in skipped] == ["b", "c"]
    assert q.get("c").error == TaskError("blocked", "it depends on 'b', which did not finish")


def test_a_skip_propagates_through_a_skipped_optional_task(tmp_path: Path) -> None:
    """R (required) fails, O (optional, after R) is skipped, and D (after O) must not run."""
    q = queue(tmp_path)
    q.enqueue("t", "R", id="r")
    q.enqueue("t", "O", id="o", depends_on=["r"], optional=True)
    q.enqueue("t", "D", id="d", depends_on=["o"])
    q.start("r")
    q.fail("r", TaskError("failed", "broke"))
    assert [t.id for t in q.skip_blocked()] == ["o", "d"]
    assert q.runnable() == []


def test_an_optional_task_that_failed_lets_its_dependents_run(tmp_path: Path) -> None:
    q = queue(tmp_path)
    q.enqueue("t", "O", id="o", optional=True)
    q.enqueue("t", "D", id="d", depends_on=["o"])
    q.start("o")
    q.fail("o", TaskError("failed", "broke"))
    assert q.skip_blocked() == [] and [t.id for t in q.runnable()] == ["d"]


def test_reporting_twice_or_before_starting_is_refused(tmp_path: Path) -> None:
    q = queue(tmp_path)
    q.enqueue("a", "A", id="a")
    with pytest.raises(QueueError, match="pending"):
        q.report("a", "done", "early")
    q.start("a")
    q.report("a", "done", "ok")
    with pytest.raises(QueueError, match="already reported"):
        q.report("a", "failed", "again")


def test_an_aborted_task_is_never_retryable(tmp_path: Path) -> None:
    task = QueuedTask("a", "a", "A", status="failed", attempts=1)
    assert task.retryable
    assert not QueuedTask(
        "a", "a", "A", status="failed", attempts=1, error=TaskError("aborted", "x")
    ).retryable
    assert not QueuedTask("a", "a", "A", status="failed", attempts=2).retryable


def test_a_carried_over_queue_keeps_what_finished_and_runs_the_rest_again(
    tmp_path: Path,
) -> None:
    earlier = tmp_path / "earlier.json"
    tasks = [
        {"id": "a", "type": "t", "label": "A", "status": "not needed", "summary": "nothing"},
        {"id": "b", "type": "t", "label": "B", "status": "done", "summary": "did b"},
        {"id": "c", "type": "t", "label": "C", "status": "running", "attempts": 1},
    ]
    earlier.write_text(json.dumps({"version": 1, "planned": True, "tasks": tasks}))
    q = queue(tmp_path)
    assert q.carry_over(earlier) == ["a", "b"] and q.planned
    assert on_disk(q) == {"a": "not needed", "b": "done", "c": "pending"}
    assert q.get("c").attempts == 0 and q.get("a").summary == "nothing"
