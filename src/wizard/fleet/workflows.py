"""A fleet's workflows: the fleet, which admits repositories, and one per repository.

Workflow code is replayed from its history after a crash, so it only decides: no clock but
Temporal's, no I/O, no randomness. What a step does is in `activities`.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutType,
)
from temporalio.exceptions import TimeoutError as StepTimeout
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from wizard.fleet.model import (
        FINISHED,
        SUCCEEDED,
        TASK_QUEUE,
        Burndown,
        Carried,
        FleetSpec,
        Published,
        RepoJob,
        Row,
        RunResult,
        Workspace,
    )

# The repository's worker must take its next step within this; if it is gone that long, the
# repository is claimed again, by any worker, and starts over.
WORKER_GONE = timedelta(minutes=5)
CLAIMS = 3
# A step's worker that stopped heartbeating this long is gone: the step is tried again.
HEARTBEAT = timedelta(seconds=10)
# The slowest pace a fleet slows to on rate limits: a start every ten minutes.
SLOWEST_GAP = 600.0
_CLAIM = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=1.0)
_PREPARE = RetryPolicy(initial_interval=timedelta(seconds=2), maximum_attempts=3)
_RUN = RetryPolicy(initial_interval=timedelta(seconds=5), backoff_coefficient=2.0,
                   maximum_interval=timedelta(minutes=2), maximum_attempts=4,
                   non_retryable_error_types=["UsageError"])  # fmt: skip
_PUBLISH = RetryPolicy(initial_interval=timedelta(seconds=2), maximum_attempts=3)
_CLEAN = RetryPolicy(maximum_attempts=5)


@workflow.defn(name="RepoWorkflow")
class RepoWorkflow:
    """One repository: claimed by a worker, cloned, run, published, cleaned up."""

    @workflow.run
    async def run(self, job: RepoJob) -> Row:
        """The repository's row, as it ended."""
        row = Row(repo=job.repo.id, source=job.repo.source, status="running")
        for _ in range(CLAIMS):
            queue = await workflow.execute_activity(
                "claim", job, task_queue=TASK_QUEUE, retry_policy=_CLAIM,
                start_to_close_timeout=timedelta(seconds=30), result_type=str,
            )  # fmt: skip
            try:
                return await self._on(queue, job, row)
            except ActivityError as exc:
                if isinstance(exc.cause, CancelledError):
                    raise  # the fleet was cancelled: so is this repository
                if not _worker_gone(exc):
                    return replace(row, status="failed", reason=_why(exc))
        return replace(row, status="failed", reason="no worker kept the repository")

    async def _on(self, queue: str, job: RepoJob, row: Row) -> Row:
        """The steps on the worker that claimed the repository; its workspace goes after."""

        async def step(
            name: str,
            *args: object,
            kind: type | None = None,
            retry: RetryPolicy,
            minutes: float,
        ) -> Any:
            # Every step heartbeats: a worker that dies in one is known within HEARTBEAT.
            return await workflow.execute_activity(
                name, args=args, task_queue=queue, schedule_to_start_timeout=WORKER_GONE,
                start_to_close_timeout=timedelta(minutes=minutes), heartbeat_timeout=HEARTBEAT,
                retry_policy=retry, result_type=kind,
                # A cancelled step is waited for: its process has stopped before the clean-up.
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )  # fmt: skip

        try:
            workspace = await step("prepare", job, kind=Workspace, retry=_PREPARE, minutes=15)
            result = await step("run", job, workspace, kind=RunResult, retry=_RUN, minutes=120)
            row = replace(row, status=result.ended, reason=result.reason, cost_usd=result.cost_usd,
                          seconds=result.seconds, proofs=result.proofs, attempts=result.attempt,
                          worker=queue)  # fmt: skip
            if job.publish and result.ended in SUCCEEDED:
                published = await step("publish", job, workspace, result, kind=Published,
                                       retry=_PUBLISH, minutes=10)  # fmt: skip
                row = replace(row, branch=published.branch, commit=published.commit or None,
                              published=published.state, left_out=published.left_out,
                              pull_request=published.pull_request)  # fmt: skip
            return row
        finally:
            await step("clean_up", job, retry=_CLEAN, minutes=5)


def _worker_gone(error: ActivityError) -> bool:
    """Whether a step failed because its worker stopped taking work (not because of it)."""
    cause = error.cause
    return isinstance(cause, StepTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START


def _why(error: BaseException) -> str:
    """The innermost message of a step's failure."""
    while error.__cause__ is not None and isinstance(error, ActivityError | ChildWorkflowError):
        error = error.__cause__
    return error.message if isinstance(error, ApplicationError) else str(error)


@workflow.defn(name="FleetWorkflow")
class FleetWorkflow:
    """A fleet: each repository as a child workflow, within the fleet's bounds."""

    def __init__(self) -> None:
        self.spec: FleetSpec | None = None
        self.rows: dict[str, Row] = {}
        self.cost = 0.0
        self.budget_spent = False
        self.cancelled = False
        self.finished = False
        self.running = 0
        self.gap = 0.0  # seconds between two starts: the pace
        self.last_start: datetime | None = None
        self.generation = 1
        self.earlier: tuple[str, ...] = ()  # admitted by earlier runs (`Carried.earlier`)
        self.own: set[str] = set()  # the rows that are their repository workflow's result

    @workflow.signal
    def slow_down(self, wait: float) -> None:
        """A run was rate-limited by the gateway and waits `wait` seconds: start repositories
        half as often, and no more often than once per such wait."""
        self.gap = min(max(self.gap * 2, wait), SLOWEST_GAP)

    @workflow.query
    def burndown(self) -> Burndown:
        """The fleet as it stands."""
        assert self.spec is not None
        return Burndown(self.spec.fleet_id, self.spec.program, tuple(self.rows.values()),
                        round(self.cost, 6), self.budget_spent, self.cancelled, self.finished,
                        self.gap, self.generation, self.earlier)  # fmt: skip

    @workflow.run
    async def run(self, spec: FleetSpec) -> Burndown:
        """Admit every repository in order; the burndown once all have ended. Past its
        history's limit it continues as new (`_continue`)."""
        self.spec = spec
        bounded = self._bounded()
        carried = spec.carried
        self.rows = {row.repo: row for row in carried.rows} if carried is not None else {}
        self.rows |= {r.id: Row(repo=r.id, source=r.source) for r in spec.repos}
        self.gap = 60.0 / spec.rate_per_minute if spec.rate_per_minute else 0.0
        if carried is not None:
            self.cost, self.gap = carried.cost, carried.gap
            self.generation, self.earlier = carried.generation, carried.earlier
            if carried.last_start is not None:
                self.last_start = datetime.fromisoformat(carried.last_start)
        children: list[asyncio.Task[None]] = []
        try:
            for index, repo in enumerate(spec.repos):
                await workflow.wait_condition(lambda: self.running < spec.max_parallel)
                if spec.max_cost is not None and self.cost >= spec.max_cost:
                    self.budget_spent = True
                    break
                if bounded and workflow.info().get_current_history_length() >= spec.history_limit:
                    await asyncio.gather(*children)  # children cannot pass to the next one
                    self._continue(spec, index)
                await self._paced()
                job = spec.job(repo)
                self.running += 1
                self.rows[repo.id] = replace(self.rows[repo.id], status="running")
                children.append(asyncio.create_task(self._child(job)))
            await asyncio.gather(*children)
        except asyncio.CancelledError:
            self.cancelled = True
            for child in children:
                child.cancel()
            await asyncio.gather(*children, return_exceptions=True)
        for repo_id, row in self.rows.items():
            if row.status not in FINISHED:
                self.rows[repo_id] = self._unfinished(row)
        self.finished = True
        return self.burndown()

    def _bounded(self) -> bool:
        """Whether this run may continue as new: a fleet started by a release before it
        could replays as it ran (its history has no such marker; `workflow.patched`)."""
        return workflow.patched("continue-as-new")

    def _continue(self, spec: FleetSpec, admitted: int) -> None:
        """Continue as a new run of this fleet (same id: queries, `fleet status` and the
        result follow it) from its `admitted`-th repository on: the spec keeps only the
        rest, and the repositories before it are carried by id, their rows being their own
        workflows' results; only a row the fleet wrote itself is carried whole (a fleet
        that continued under the release before this carried every row: they stay rows)."""
        last = self.last_start.isoformat() if self.last_start is not None else None
        rest = spec.repos[admitted:]
        waiting = {repo.id for repo in rest}
        done = [row for row in self.rows.values() if row.repo not in waiting]
        before = set(self.earlier)
        earlier = (*self.earlier, *(row.repo for row in done if row.repo not in before))
        kept = tuple(row for row in done if row.repo not in self.own)
        carried = Carried(kept, self.cost, self.gap, last, self.generation + 1, earlier)
        workflow.continue_as_new(replace(spec, repos=rest, carried=carried))

    def _unfinished(self, row: Row) -> Row:
        """What a row that did not end says once the fleet has."""
        if self.cancelled:
            return replace(row, status="cancelled", reason="the fleet was cancelled")
        if self.budget_spent and row.status == "queued":
            return replace(row, status="skipped", reason="the fleet's budget was spent")
        return replace(row, status="failed", reason=f"the fleet ended while it was {row.status}")

    async def _paced(self) -> None:
        """Wait until the pace allows the next start (it may slow while waiting)."""
        while self.last_start is not None:
            wait = self.last_start + timedelta(seconds=self.gap) - workflow.now()
            if wait <= timedelta(0):
                break
            await workflow.sleep(wait)
        self.last_start = workflow.now()

    async def _child(self, job: RepoJob) -> None:
        try:
            row = await workflow.execute_child_workflow(
                RepoWorkflow.run, job, id=job.workflow_id, task_queue=TASK_QUEUE,
            )  # fmt: skip
        except ChildWorkflowError as exc:
            if isinstance(exc.cause, CancelledError):
                raise
            row = replace(self.rows[job.repo.id], status="failed", reason=_why(exc))
        else:
            self.own.add(job.repo.id)
        finally:
            self.running -= 1
        self.rows[job.repo.id] = row
        self.cost += row.cost_usd or 0.0
