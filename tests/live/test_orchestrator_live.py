"""The orchestrator on the real pi engine: one pi process per seed and task, against the
scripted gateway's `conversations`, each picked by the first line of its first prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import assert_gone, session_pid, watched_sessions
from wizard.events import EventRecorder
from wizard.outcome import Outcome
from wizard.programs import get_program
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.pi.session import PiSession
from wizard.runner.harness.types import GatewayApi, GatewaySettings
from wizard.runner.sequence.context import RunContext
from wizard.runner.sequence.orchestrator.prompts import SEED_LINE
from wizard.runner.sequence.orchestrator.sequence import UNPLANNED, run_orchestrator
from wizard.runner.switchboard import Binding
from wizard.skills.sources import BundledSkills
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, said
from wizard.tools.sandbox import build_policy

pytestmark = pytest.mark.live

STRIPE = "Could not find a Stripe integration"


def enqueue(task_id: str, kind: str, *depends_on: str) -> dict[str, Any]:
    return call(
        "enqueue_task", type=kind, label=f"Step {task_id}", id=task_id, depends_on=list(depends_on)
    )


def complete(status: str = "done", summary: str = "finished") -> dict[str, Any]:
    return call("complete_task", status=status, summary=summary, handoff=summary)


def conversation(match: str, *responses: dict[str, Any]) -> dict[str, Any]:
    return {"match": match, "responses": list(responses)}


def task(task_id: str) -> str:
    return f"# Task {task_id}:"


def writes(task_id: str) -> list[dict[str, Any]]:
    """A task that writes its file, then reports done (the last call: no request follows)."""
    return [
        {
            "blocks": [
                {"text": f"[STATUS] {task_id}\n"},
                call("write", path=f"{task_id}.txt", content=task_id),
            ]
        },
        {"blocks": [complete("done", f"wrote {task_id}.txt")]},
    ]


# Two independent tasks, and a report that depends on both.
PLAN = conversation(
    SEED_LINE,
    {
        "blocks": [
            enqueue("customers", "tag-customers"),
            enqueue("checkouts", "tag-checkouts"),
            enqueue("report", "report", "customers", "checkouts"),
        ]
    },
    said("Planned."),
)


class LiveOrchestration:
    """One orchestrator run on real pi processes, and what it left behind."""

    def __init__(
        self, outcome: Outcome, gateway: ScriptedGateway, pids: list[int], project: Path
    ) -> None:
        self.outcome = outcome
        self.gateway = gateway
        self.pids = pids
        self.project = project

    def served(self, match: str) -> int:
        """How many model requests the conversation `match` was asked."""
        index = next(
            i for i, c in enumerate(self.gateway.scenario.conversations) if c.match == match
        )
        return sum(1 for r in self.gateway.requests if r.conversation == index)

    def assert_no_process_left(self) -> None:
        assert_gone(self.pids)


async def orchestrate(
    tmp_path: Path,
    conversations: list[dict[str, Any]],
    *,
    api: GatewayApi = "anthropic-messages",
    on_start: Callable[[PiSession], object] = lambda session: None,
) -> LiveOrchestration:
    project = tmp_path / "project"
    project.mkdir()
    pids: list[int] = []

    def started(session: PiSession) -> None:
        pids.append(session_pid(session))
        on_start(session)

    async with ScriptedGateway({"conversations": conversations}) as gateway:
        ctx = RunContext(
            program=get_program("revenue-analytics"),
            project_dir=project,
            binding=Binding("orchestrator", "pi", "scripted-1"),
            gateway=GatewaySettings(url=gateway.url, api=api, retries=0),
            skills=BundledSkills(),
            sink=EventRecorder(),
            run_id=f"live-{tmp_path.name}",
            sandbox=build_policy(project, tmp_path),  # commands run as in a real run
        )
        outcome = await run_orchestrator(ctx, PiHarness(session_factory=watched_sessions(started)))
        assert await gateway.settled()
    return LiveOrchestration(outcome, gateway, pids, project)


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions"])
async def test_a_planned_graph_runs_to_success(tmp_path: Path, api: Any) -> None:
    live = await orchestrate(
        tmp_path,
        [
            PLAN,
            conversation(task("customers"), *writes("customers")),
            conversation(task("checkouts"), *writes("checkouts")),
            conversation(task("report"), *writes("report")),
        ],
        api=api,
    )
    assert live.outcome.status == "succeeded", live.outcome
    assert live.outcome.outro is not None
    assert live.outcome.outro.message == "Revenue analytics set up: 3/3 steps completed"
    for name in ("customers", "checkouts", "report"):
        assert (live.project / f"{name}.txt").read_text() == name
    live.gateway.assert_complete()  # complete_task ended each task: no request after it
    assert len(live.pids) == 4  # the seed and three tasks, each its own pi process
    live.assert_no_process_left()


async def test_an_abort_in_the_second_task_fails_the_run_and_starts_nothing_more(
    tmp_path: Path,
) -> None:
    live = await orchestrate(
        tmp_path,
        [
            PLAN,
            conversation(task("customers"), *writes("customers")),
            conversation(
                task("checkouts"),
                {
                    "blocks": [
                        {"text": f"No checkout code.\n[ABORT] {STRIPE}\n"},
                        call("write", path="late.txt", content="x"),
                    ]
                },
                said("this response must never be requested"),
            ),
            conversation(task("report"), said("the report task must never start")),
        ],
    )
    assert (live.outcome.status, live.outcome.reason) == ("aborted", STRIPE)
    assert live.outcome.outro is not None and live.outcome.outro.message == STRIPE
    assert live.served(task("checkouts")) == 1  # no request after the marker
    assert live.served(task("report")) == 0
    assert not (live.project / "late.txt").exists()
    statuses = {t["id"]: (t["status"], t["error"]) for t in live.outcome.tasks}
    assert statuses["checkouts"] == ("failed", "aborted")
    assert statuses["report"] == ("pending", None)
    live.assert_no_process_left()


async def test_a_gateway_refusal_while_planning_aborts_the_run(tmp_path: Path) -> None:
    live = await orchestrate(
        tmp_path,
        [
            conversation(SEED_LINE, {"refusal": "this project is not allowed"}, said("never")),
            conversation(task("customers"), said("never")),
        ],
    )
    assert (live.outcome.status, live.outcome.source) == ("aborted", "gateway_policy")
    assert live.outcome.reason == "this project is not allowed"
    assert live.served(SEED_LINE) == 1 and live.served(task("customers")) == 0
    assert len(live.pids) == 1
    live.assert_no_process_left()


async def test_the_report_ends_the_task_nothing_after_it_runs_or_is_asked(
    tmp_path: Path,
) -> None:
    # complete_task shares its batch with `read`: pi used to run the read and ask the model
    # once more (whose stop marker then had to be ignored). The report ends the task's turn.
    closing = [
        {"blocks": [complete("done", "nothing to tag"), call("read", path="app.py")]},
        said("[ABORT] just kidding, all done"),
    ]
    plan = conversation(
        SEED_LINE, {"blocks": [enqueue("customers", "tag-customers")]}, said("Planned.")
    )
    live = await orchestrate(tmp_path, [plan, conversation(task("customers"), *closing)])
    assert live.outcome.status == "succeeded", live.outcome
    assert [t["status"] for t in live.outcome.tasks] == ["done"]
    asked = [r for r in live.gateway.requests if "# Task customers:" in json.dumps(r.body)]
    assert len(asked) == 1, "the model was asked again after the task reported"
    live.assert_no_process_left()


async def test_an_empty_plan_fails(tmp_path: Path) -> None:
    idle = [said("I will plan it later.")] * 4  # the first prompt and three nudges
    live = await orchestrate(tmp_path, [conversation(SEED_LINE, *idle)])
    assert (live.outcome.status, live.outcome.reason) == ("failed", UNPLANNED)
    live.gateway.assert_complete()
    live.assert_no_process_left()


async def test_a_failed_task_is_retried_once(tmp_path: Path) -> None:
    failed = {"blocks": [complete("failed", "the Stripe client is generated")]}
    plan = conversation(
        SEED_LINE, {"blocks": [enqueue("customers", "tag-customers")]}, said("Planned.")
    )
    live = await orchestrate(tmp_path, [plan, conversation(task("customers"), failed, failed)])
    assert live.outcome.status == "failed"
    assert live.outcome.outro is not None
    assert "the 'Step customers' step failed" in live.outcome.outro.message
    assert [t["attempts"] for t in live.outcome.tasks] == [2]
    assert len(live.pids) == 3  # the seed, then one pi process per attempt
    live.gateway.assert_complete()
    live.assert_no_process_left()
