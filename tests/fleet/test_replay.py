"""Fleets started by an earlier release finish on this one: the histories of real fleets
(`histories/`: success, retried failures, a rate limit's slow-down, a spent budget, a
cancellation, a refused job, a published fleet of real runs, a fleet whose worker and
server were killed and joined again, the last generation of one that continued as new
carrying its rows, and of one that carried them by id but for a row it wrote itself)
replay on today's workflow code with temporalio's `Replayer`, as a worker replays them after
a crash or an upgrade. A change to the workflows
that would not (a step added, moved or renamed) fails here, in every CI run."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.fleet.histories import HISTORIES
from wizard.fleet.codec import DATA_CONVERTER
from wizard.fleet.model import Burndown, FleetSpec, RepoJob, Row
from wizard.fleet.workflows import FleetWorkflow, RepoWorkflow

RECORDED = sorted(HISTORIES.rglob("*.json"))
SCENARIOS = {"retries", "parallel", "rate-limited", "budget", "cancelled", "refused",
             "published", "worker-killed", "continued", "row-carried"}  # fmt: skip


def _replayer(*workflows: type) -> Replayer:
    """A replayer of `workflows`, reading payloads as wizard's workers do."""
    return Replayer(workflows=list(workflows), data_converter=DATA_CONVERTER)


def _history(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(f"{path.parent.name}/{path.stem}", path.read_text())


def test_every_scenario_is_recorded() -> None:
    assert {path.parent.name for path in RECORDED} == SCENARIOS
    assert all((HISTORIES / scenario / "fleet.json").is_file() for scenario in SCENARIOS)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_recorded_fleet_replays_on_todays_workflows(path: Path) -> None:
    replayer = _replayer(FleetWorkflow, RepoWorkflow)
    result = asyncio.run(replayer.replay_workflow(_history(path)))
    assert result.replay_failure is None


@workflow.defn(name="RepoWorkflow")
class _WaitsFirst(RepoWorkflow):
    """Today's repository workflow with one step put first: a change a worker upgraded in
    the middle of a fleet could not take without `workflow.patched`."""

    @workflow.run
    async def run(self, job: RepoJob) -> Row:
        await workflow.sleep(1)
        return await super().run(job)


def test_a_workflow_changed_without_a_patch_fails_the_replay() -> None:
    """The check can fail: the same histories on a changed workflow do not replay."""
    replayer = _replayer(FleetWorkflow, _WaitsFirst)
    with pytest.raises(NondeterminismError):
        asyncio.run(replayer.replay_workflow(_history(HISTORIES / "parallel" / "repo-r0.json")))


@workflow.defn(name="FleetWorkflow")
class _LowLimit(FleetWorkflow):
    """Today's fleet workflow, continuing as new past 10 events (the fleets recorded before
    it could went past that)."""

    @workflow.run
    async def run(self, spec: FleetSpec) -> Burndown:
        return await super().run(replace(spec, history_limit=10))


@workflow.defn(name="FleetWorkflow")
class _Unguarded(FleetWorkflow):
    """The same, with its continue-as-new not behind `workflow.patched`."""

    @workflow.run
    async def run(self, spec: FleetSpec) -> Burndown:
        return await super().run(replace(spec, history_limit=10))

    def _bounded(self) -> bool:
        return True


def test_a_fleet_started_before_continue_as_new_replays_as_it_ran() -> None:
    """A fleet recorded before the workflow could continue as new, and past today's limit,
    replays on today's code (the change is behind `workflow.patched`); without the patch it
    would not: the replay continues as new where the fleet started its next repository."""
    history = _history(HISTORIES / "parallel" / "fleet.json")
    assert len(history.events) > 10
    result = asyncio.run(_replayer(_LowLimit, RepoWorkflow).replay_workflow(history))
    assert result.replay_failure is None
    with pytest.raises(NondeterminismError):
        asyncio.run(_replayer(_Unguarded, RepoWorkflow).replay_workflow(history))
