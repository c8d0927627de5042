"""The fleet's own logic, on a real Temporal development server and real workers, with a
stand-in for `wizard run` (`fake_wizard.py`): which endings are retried, the pace and its
slowing on rate limits, parallelism per fleet and per worker, the budget, cancellation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from tests.fleet.histories import record
from wizard.errors import ConfigError
from wizard.fleet.activities import Steps
from wizard.fleet.model import (
    TASK_QUEUE,
    Burndown,
    Carried,
    FleetSpec,
    Published,
    Repo,
    RepoJob,
    RunResult,
    Workspace,
)
from wizard.fleet.server import Server, connect_embedded, ensure_server, stop_server
from wizard.fleet.service import burndown as fleet_status
from wizard.fleet.service import cancel, follow, serve, start_fleet, whole
from wizard.fleet.workflows import FleetWorkflow, RepoWorkflow

FAKE = Path(__file__).with_name("fake_wizard.py")


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The embedded server, in a folder of its own."""
    folder = tmp_path_factory.mktemp("temporal")
    yield ensure_server(folder)
    stop_server(folder)


class World:
    """Repositories, the stand-in's script and log, and a worker's folder."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp_path
        self.log = tmp_path / "fake.jsonl"
        self.script = tmp_path / "script.json"
        monkeypatch.setenv("FAKE_WIZARD_LOG", str(self.log))
        monkeypatch.setenv("FAKE_WIZARD_SCRIPT", str(self.script))
        monkeypatch.setenv("WIZARD_FLEET_RATE_WAIT", "0.5")

    def repos(self, script: dict[str, list[dict[str, Any]]]) -> tuple[Repo, ...]:
        self.script.write_text(json.dumps(script))
        repos = []
        for name in script:
            folder = self.root / "repos" / name
            folder.mkdir(parents=True)
            (folder / "app.py").write_text("print('hi')\n")
            for args in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "app"]):
                subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                               cwd=folder, check=True, capture_output=True)  # fmt: skip
            repos.append(Repo(name, str(folder)))
        return tuple(repos)

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    async def fleet(self, server: Server, spec: FleetSpec, worker_parallel: int = 4,
                    during: Any = None, scenario: str = "",
                    steps_type: type[Steps] = Steps) -> Burndown:  # fmt: skip
        client = await connect_embedded(server, "default")
        steps = steps_type(self.root / "workspaces", worker_parallel, (sys.executable, str(FAKE)))
        handle, started = await start_fleet(client, spec)
        assert started
        result = asyncio.ensure_future(handle.result())
        side = asyncio.ensure_future(during(client)) if during else None
        await serve(client, steps, result)
        if side is not None:
            await side
        assert not any((self.root / "workspaces").rglob("*"))  # every workspace cleaned up
        if scenario:  # kept for the replay test (`histories.py`)
            await record(client, spec.fleet_id, [repo.id for repo in spec.repos], scenario)
        return await whole(client, result.result())


def _spec(repos: tuple[Repo, ...], **bounds: Any) -> FleetSpec:
    return FleetSpec(fleet_id=f"test-{uuid.uuid4().hex[:8]}", program="revenue-analytics",
                     repos=repos, **bounds)  # fmt: skip


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    return World(tmp_path, monkeypatch)


def _rows(burndown: Burndown) -> dict[str, tuple[str, int]]:
    return {row.repo: (row.status, row.attempts) for row in burndown.rows}


async def test_engine_and_api_failures_are_retried_and_final_endings_are_not(
    temporal: Server, world: World
) -> None:
    failed = {"status": "failed", "reason": "broke"}
    repos = world.repos({
        "engine": [{**failed, "error_type": "WIZARD_ENGINE_FAILURE"}, {}],
        "api": [{**failed, "error_type": "WIZARD_API_ERROR"}, {}],
        "aborted": [{"status": "aborted", "error_type": "WIZARD_ABORT", "reason": "no stripe"}],
        "unverified": [{"status": "unverified", "reason": "a check failed"}],
        "budget": [{**failed, "error_type": "WIZARD_BUDGET_EXCEEDED"}],
        "violation": [{**failed, "error_type": "WIZARD_SECURITY_VIOLATION"}],
        "refused": [{"status": "usage_error", "reason": "a preview needs the sandbox"}],
    })  # fmt: skip
    burndown = await world.fleet(temporal, _spec(repos, max_parallel=7), worker_parallel=7,
                                 scenario="retries")  # fmt: skip
    assert _rows(burndown) == {
        "engine": ("set up", 2), "api": ("set up", 2), "aborted": ("aborted", 1),
        "unverified": ("unverified", 1), "budget": ("failed", 1), "violation": ("failed", 1),
        "refused": ("failed", 1),
    }  # fmt: skip
    reasons = {row.repo: row.reason for row in burndown.rows}
    assert reasons["aborted"] == "no stripe" and reasons["refused"] == "a preview needs the sandbox"
    assert burndown.cost_usd == pytest.approx(0.07)
    starts = [e for e in world.events() if e["event"] == "start"]
    assert len(starts) == 9


class _PublishHangsOnce(Steps):
    """A worker whose first publish never ends and never heartbeats: to the server, a worker
    that died in the middle of that step."""

    @activity.defn(name="publish")
    async def publish(self, job: RepoJob, workspace: Workspace, result: RunResult) -> Published:
        if activity.info().attempt == 1:
            await asyncio.Event().wait()
        return await super().publish(job, workspace, result)


async def test_a_step_whose_worker_stops_answering_is_tried_again_within_seconds(
    temporal: Server, world: World
) -> None:
    """Every step heartbeats: a publish whose worker went silent is tried again once its
    heartbeat is missed (10 s), not after its 10-minute limit, and publishes once."""
    repos = world.repos({"silent": [{"file": "analytics.py"}]})
    fleet = world.fleet(temporal, _spec(repos, publish="branch"), steps_type=_PublishHangsOnce)
    burndown = await asyncio.wait_for(fleet, 90)
    (row,) = burndown.rows
    assert (row.status, row.published) == ("set up", "created"), row
    count = subprocess.run(["git", "rev-list", "--count", f"HEAD..{row.branch}"],
                           cwd=repos[0].source, capture_output=True, text=True,
                           check=True)  # fmt: skip
    assert count.stdout.strip() == "1"


def _most_at_once(events: list[dict[str, Any]]) -> int:
    running = most = 0
    for event in sorted(events, key=lambda e: (e["at"], e["event"] == "start")):
        running += 1 if event["event"] == "start" else -1
        most = max(most, running)
    return most


async def test_parallelism_is_bounded_per_fleet_and_per_worker(
    temporal: Server, world: World
) -> None:
    repos = world.repos({f"r{i}": [{"sleep": 0.6}] for i in range(5)})
    burndown = await world.fleet(temporal, _spec(repos, max_parallel=3), worker_parallel=2,
                                 scenario="parallel")  # fmt: skip
    assert {status for status, _ in _rows(burndown).values()} == {"set up"}
    assert _most_at_once(world.events()) == 2  # the worker's bound, below the fleet's


async def test_the_pace_spaces_starts_and_a_rate_limit_slows_it(
    temporal: Server, world: World
) -> None:
    limited = {"status": "failed", "error_type": "WIZARD_RATE_LIMIT", "reason": "429"}
    repos = world.repos({"limited": [limited, {}], "a": [{}], "b": [{}]})
    burndown = await world.fleet(temporal, _spec(repos, max_parallel=3, rate_per_minute=200),
                                 scenario="rate-limited")  # fmt: skip
    assert _rows(burndown) == {"limited": ("set up", 2), "a": ("set up", 1), "b": ("set up", 1)}
    starts = {e["repo"]: e["at"] for e in world.events() if e["event"] == "start"
              and e["attempt"] == 1}  # fmt: skip
    assert starts["a"] - starts["limited"] >= 0.3 and starts["b"] - starts["a"] >= 0.3
    # 60/200 = 0.3 s between starts, slowed by the 429 to its wait (0.5 s), and doubled after.
    assert burndown.pace_seconds >= 0.5


async def test_no_repository_starts_once_the_budget_is_spent(
    temporal: Server, world: World
) -> None:
    repos = world.repos({"first": [{"cost": 0.5}], "second": [{}], "third": [{}]})
    burndown = await world.fleet(temporal, _spec(repos, max_parallel=1, max_cost=0.4),
                                 scenario="budget")  # fmt: skip
    assert _rows(burndown) == {"first": ("set up", 1), "second": ("skipped", 0),
                               "third": ("skipped", 0)}  # fmt: skip
    assert burndown.budget_spent and burndown.cost_usd == pytest.approx(0.5)
    assert {e["repo"] for e in world.events()} == {"first"}


async def test_a_fleet_past_its_history_limit_continues_as_new_and_keeps_every_row(
    temporal: Server, world: World
) -> None:
    """A fleet whose history reaches its limit admits no more repositories, lets the running
    ones end, and continues as new with every row: each repository runs once, each run of
    the workflow stays near its limit, and the burndown (and `fleet status`) is whole."""
    repos = world.repos({f"r{n}": [{"cost": 0.01}] for n in range(12)})
    spec = _spec(repos, max_parallel=2, history_limit=30)
    burndown = await world.fleet(temporal, spec, scenario="continued")
    assert _rows(burndown) == {f"r{n}": ("set up", 1) for n in range(12)}
    assert burndown.cost_usd == pytest.approx(0.12) and burndown.generation >= 2
    starts = sorted(e["repo"] for e in world.events() if e["event"] == "start")
    assert starts == sorted(f"r{n}" for n in range(12))  # none twice across generations
    client = await connect_embedded(temporal, "default")
    assert await fleet_status(client, spec.fleet_id) == burndown
    runs = [run async for run in client.list_workflows(f'WorkflowId = "{spec.fleet_id}"')]
    assert len(runs) == burndown.generation
    carried_earlier = []
    for run in runs:
        history = await client.get_workflow_handle(run.id, run_id=run.run_id).fetch_history()
        # the limit, then what the running repositories' ends add (2 at once, ~8 events each)
        assert len(history.events) < 30 + 2 * 8 + 4, run.run_id
        carried = (await _input(client, history)).carried
        if carried is not None:  # rows travel as their repositories' ids, never whole
            assert carried.rows == () and carried.earlier, carried
            carried_earlier.append(carried.earlier)
    longest = max(carried_earlier, key=len)  # the last run's: every repository before it
    assert longest == tuple(f"r{n}" for n in range(len(longest)))
    # The workflow's own answer names its earlier repositories; `whole` reads their rows,
    # for `fleet status` and for `fleet run` following it (here: joining it once finished).
    handle = client.get_workflow_handle_for(FleetWorkflow.run, spec.fleet_id)
    raw = await handle.result()
    assert raw.earlier and len(raw.rows) < 12 and raw.to_dict().keys() == burndown.to_dict().keys()
    seen: list[Burndown] = []
    assert await follow(client, handle, seen.append) == burndown and seen == [burndown]


async def _input(client: Client, history: Any) -> FleetSpec:
    """The spec a run of the fleet's workflow was started with, as its history records it."""
    start = history.events[0].workflow_execution_started_event_attributes
    (spec,) = await client.data_converter.decode(start.input.payloads, [FleetSpec])
    return spec


async def test_a_row_the_fleet_wrote_itself_is_carried_whole_across_generations(
    temporal: Server, world: World
) -> None:
    """A repository workflow ended by someone else (terminated) has no result to read back:
    the fleet writes its row itself and carries that row whole through a continue-as-new,
    so the burndown still says what happened to it, in its place. No clean-up step comes
    for it: its running step sees its workflow gone, stops the run, and removes the
    workspace and frees the worker's slot itself (they stayed, before)."""
    repos = world.repos({"r0": [{"sleep": 30}], **{f"r{n}": [{"sleep": 1}] for n in range(1, 8)}})
    spec = _spec(repos, max_parallel=2, history_limit=30)

    async def terminate_the_first(client: Client) -> None:
        while not (world.log.exists() and any(e["repo"] == "r0" for e in world.events())):
            await asyncio.sleep(0.05)
        await client.get_workflow_handle(f"{spec.fleet_id}/r0").terminate("by its owner")

    # One slot on the worker: had the terminated repository kept it, nothing more would run.
    burndown = await asyncio.wait_for(world.fleet(
        temporal, spec, worker_parallel=1, during=terminate_the_first, scenario="row-carried",
    ), 120)  # fmt: skip
    assert [e["event"] for e in world.events() if e["repo"] == "r0"] == ["start", "terminated"]
    assert burndown.generation >= 2 and [row.repo for row in burndown.rows] == [
        f"r{n}" for n in range(8)]  # fmt: skip
    assert burndown.rows[0].status == "failed" and "terminated" in burndown.rows[0].reason.lower()
    assert {row.status for row in burndown.rows[1:]} == {"set up"}
    client = await connect_embedded(temporal, "default")
    assert await fleet_status(client, spec.fleet_id) == burndown
    # A repository whose record Temporal no longer keeps (past its retention) says so; the
    # rows that are there are read as before.
    raw = await client.get_workflow_handle_for(FleetWorkflow.run, spec.fleet_id).result()
    lost = replace(raw, earlier=(*raw.earlier, "gone"))
    now = await whole(client, lost)
    assert now.rows[: len(raw.earlier)] == burndown.rows[: len(raw.earlier)]
    assert now.rows[len(raw.earlier)].repo == "gone"
    assert now.rows[len(raw.earlier)].status == "failed"
    assert "its record is gone from Temporal" in now.rows[len(raw.earlier)].reason


@workflow.defn(name="FleetWorkflow")
class _BeforeContinueAsNew(FleetWorkflow):
    """The fleet workflow as the release before continue-as-new ran it (21a1daf): the same
    steps, no patch marker, never continuing as new."""

    @workflow.run
    async def run(self, spec: FleetSpec) -> Burndown:
        return await super().run(spec)

    def _bounded(self) -> bool:
        return False


async def test_a_fleet_the_release_before_started_is_finished_by_this_one(
    temporal: Server, world: World
) -> None:
    """A fleet started and served by the release before continue-as-new, whose worker is
    replaced by one of this release partway: this one replays it and finishes it as it was
    begun (past today's limit, it does not continue as new: its history has no marker),
    with every repository set up."""
    repos = world.repos({f"r{n}": [{"sleep": 0.2, "cost": 0.01}] for n in range(8)})
    spec = _spec(repos, max_parallel=1, history_limit=20)
    client = await connect_embedded(temporal, "default")
    steps = Steps(world.root / "workspaces", 2, (sys.executable, str(FAKE)))
    handle, started = await start_fleet(client, spec)
    assert started
    # Unsandboxed: the sandbox would import this test module, which it cannot.
    before = Worker(client, task_queue=TASK_QUEUE, activities=[steps.claim],
                    workflows=[_BeforeContinueAsNew, RepoWorkflow],
                    workflow_runner=UnsandboxedWorkflowRunner())  # fmt: skip
    own = Worker(client, task_queue=steps.queue, activities=steps.all())
    async with before, own:
        while sum(row.status == "set up"
                  for row in (await handle.query(FleetWorkflow.burndown)).rows) < 3:  # fmt: skip
            await asyncio.sleep(0.05)
    await serve(client, steps, handle.result())  # this release's worker
    burndown = await handle.result()
    assert {row.status for row in burndown.rows} == {"set up"} and burndown.generation == 1
    assert burndown.cost_usd == pytest.approx(0.08)
    starts = [e["repo"] for e in world.events() if e["event"] == "start"]
    assert set(starts) == {f"r{n}" for n in range(8)}
    assert len(starts) <= 9  # the one running as the old worker stopped may start again
    assert len((await handle.fetch_history()).events) > 20  # past today's limit, one run


@workflow.defn(name="FleetWorkflow")
class _CarryingEveryRow(FleetWorkflow):
    """The fleet workflow as the release before rows travelled by id ran it (dd81b95): at a
    continue-as-new it carried every row whole."""

    @workflow.run
    async def run(self, spec: FleetSpec) -> Burndown:
        return await super().run(spec)

    def _continue(self, spec: FleetSpec, admitted: int) -> None:
        last = self.last_start.isoformat() if self.last_start is not None else None
        rest = spec.repos[admitted:]
        waiting = {repo.id for repo in rest}
        done = tuple(row for row in self.rows.values() if row.repo not in waiting)
        carried = Carried(done, self.cost, self.gap, last, self.generation + 1)
        workflow.continue_as_new(replace(spec, repos=rest, carried=carried))


async def test_a_fleet_that_carried_every_row_is_finished_by_this_release(
    temporal: Server, world: World
) -> None:
    """A fleet that continued as new under the release before, with its rows carried whole,
    is joined by this release's worker: it goes on from those rows (they stay rows: they
    are in no repository workflow's place to be read back), continues as new again with the
    rest by id, and the burndown and `fleet status` are whole, each repository run once."""
    repos = world.repos({f"r{n}": [{"sleep": 0.1, "cost": 0.01}] for n in range(14)})
    spec = _spec(repos, max_parallel=2, history_limit=30)
    client = await connect_embedded(temporal, "default")
    steps = Steps(world.root / "workspaces", 2, (sys.executable, str(FAKE)))
    handle, _ = await start_fleet(client, spec)
    before = Worker(client, task_queue=TASK_QUEUE, activities=[steps.claim],
                    workflows=[_CarryingEveryRow, RepoWorkflow],
                    workflow_runner=UnsandboxedWorkflowRunner())  # fmt: skip
    own = Worker(client, task_queue=steps.queue, activities=steps.all())
    async with before, own:
        while (await handle.query(FleetWorkflow.burndown)).generation < 2:
            await asyncio.sleep(0.05)
    carried = (await _input(client, await handle.fetch_history())).carried
    assert carried is not None and carried.rows and not carried.earlier  # the old way
    await serve(client, steps, handle.result())  # this release's worker
    burndown = await whole(client, await handle.result())
    assert _rows(burndown) == {f"r{n}": ("set up", 1) for n in range(14)}
    assert burndown.generation >= 3 and burndown.cost_usd == pytest.approx(0.14)
    assert [row.repo for row in burndown.rows] == [f"r{n}" for n in range(14)]
    starts = sorted(e["repo"] for e in world.events() if e["event"] == "start")
    assert starts == sorted(f"r{n}" for n in range(14))
    assert await fleet_status(client, spec.fleet_id) == burndown


async def test_a_worker_that_evicts_a_fleet_replays_it_and_finishes_it(
    temporal: Server, world: World
) -> None:
    """A worker whose cache holds two workflows evicts the fleet again and again, and so
    replays it from its history each time: the fleet still ends with every repository set
    up."""
    repos = world.repos({f"repo-{n:03d}": [{}] for n in range(30)})
    spec = _spec(repos, max_parallel=3)
    client = await connect_embedded(temporal, "default")
    steps = Steps(world.root / "workspaces", 3, (sys.executable, str(FAKE)))
    handle, _ = await start_fleet(client, spec)
    shared = Worker(client, task_queue=TASK_QUEUE, activities=[steps.claim],
                    workflows=[FleetWorkflow, RepoWorkflow], max_cached_workflows=2)  # fmt: skip
    own = Worker(client, task_queue=steps.queue, activities=steps.all())
    async with shared, own:
        burndown = await asyncio.wait_for(handle.result(), 120)
    assert {row.status for row in burndown.rows} == {"set up"}


async def test_a_cancelled_fleet_stops_its_runs_cleans_up_and_starts_nothing(
    temporal: Server, world: World
) -> None:
    repos = world.repos({"long": [{"sleep": 60}], "queued": [{}]})
    spec = _spec(repos, max_parallel=1)

    async def cancel_once_running(client: Client) -> None:
        while not (world.log.exists() and world.events()):
            await asyncio.sleep(0.05)
        # `wizard fleet status` of a running fleet, as another process asks (its own client).
        now = await fleet_status(await connect_embedded(temporal, "default"), spec.fleet_id)
        assert {row.repo: row.status for row in now.rows} == {"long": "running",
                                                              "queued": "queued"}  # fmt: skip
        assert not now.finished
        await cancel(client, spec.fleet_id)

    ended = await world.fleet(temporal, spec, during=cancel_once_running, scenario="cancelled")
    assert ended.cancelled and ended.finished
    assert {row.repo: row.status for row in ended.rows} == {"long": "cancelled",
                                                            "queued": "cancelled"}  # fmt: skip
    assert [e["event"] for e in world.events()] == ["start", "terminated"]


async def test_a_worker_refuses_a_fleet_its_owner_did_not_start(
    temporal: Server, world: World
) -> None:
    """Another user (or anyone who reached the Temporal) starts a fleet straight at the
    server, sealed with a key that is not the owner's: the worker neither clones nor runs."""
    from wizard.fleet.seal import sealed
    from wizard.fleet.workflows import FleetWorkflow

    repos = world.repos({"theirs": [{}]})
    spec = sealed(_spec(repos), b"not the owner's key" * 4)
    client = await connect_embedded(temporal, "default")
    handle = await client.start_workflow(FleetWorkflow.run, spec, id=spec.fleet_id,
                                         task_queue="wizard-fleet")  # fmt: skip
    steps = Steps(world.root / "workspaces", 2, (sys.executable, str(FAKE)))
    result = asyncio.ensure_future(handle.result())
    await serve(client, steps, result)
    await record(client, spec.fleet_id, ["theirs"], "refused")
    [row] = result.result().rows
    assert row.status == "failed" and "will not run it" in row.reason
    assert not world.log.exists()  # no run started
    assert not (world.root / "workspaces").exists()  # nothing cloned


async def test_a_finished_fleets_id_is_joined_never_run_again(
    temporal: Server, world: World
) -> None:
    """The same command after a fleet finished (a rejoin after a crash, or a second try) ran
    every repository again under the same id and overwrote the burndown: it joins the
    finished fleet, whose burndown comes back at once, and nothing runs."""
    repos = world.repos({"only": [{"status": "unverified", "reason": "a check failed"}]})
    spec = _spec(repos)
    first = await world.fleet(temporal, spec)
    client = await connect_embedded(temporal, "default")
    handle, started = await start_fleet(client, spec)
    assert not started
    assert await handle.result() == first
    assert [e["event"] for e in world.events()] == ["start", "end"]


async def test_the_embedded_server_keeps_a_fleets_rows_for_a_month(temporal: Server) -> None:
    """Earlier generations' rows are their repository workflows' results: the development
    server would drop them a day after each ends, before a long fleet does. A namespace
    that keeps them longer already is left as it is."""
    from google.protobuf.duration_pb2 import Duration
    from temporalio.api.namespace.v1 import NamespaceConfig
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, UpdateNamespaceRequest

    from wizard.fleet.server import RETENTION_DAYS, keep_records

    client = await connect_embedded(temporal, "default")

    async def days() -> float:
        request = DescribeNamespaceRequest(namespace="default")
        ttl = (await client.workflow_service.describe_namespace(request)).config
        return ttl.workflow_execution_retention_ttl.seconds / 86400

    await keep_records(client)
    assert await days() == RETENTION_DAYS
    longer = NamespaceConfig(workflow_execution_retention_ttl=Duration(seconds=90 * 86400))
    await client.workflow_service.update_namespace(
        UpdateNamespaceRequest(namespace="default", config=longer))  # fmt: skip
    await keep_records(client)
    assert await days() == 90
    elsewhere = await connect_embedded(temporal, "no-such-namespace")
    with pytest.raises(ConfigError, match="no namespace 'no-such-namespace'"):
        await keep_records(elsewhere)
