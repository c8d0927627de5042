"""How a run's outcome becomes a repository's row, and where a run keeps its state."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.fleet.test_seal import KEY, _job, _spec
from wizard.fleet import gitwork
from wizard.fleet.activities import Steps, rate_limit_wait, run_result
from wizard.fleet.model import Workspace


def _proofs(*statuses: str) -> dict[str, Any]:
    return {"proofs": [{"name": f"p{i}", "status": s} for i, s in enumerate(statuses)]}


@pytest.mark.parametrize(
    ("outcome", "ended"),
    [
        ({"status": "succeeded", "verification": _proofs("proven", "proven")}, "proven"),
        ({"status": "succeeded", "verification": _proofs("proven", "not run")}, "set up"),
        ({"status": "succeeded"}, "set up"),
        ({"status": "aborted", "reason": "no stripe"}, "aborted"),
        ({"status": "not_applicable", "reason": "nothing here uses Stripe"}, "not applicable"),
        ({"status": "unverified"}, "unverified"),
        ({"status": "failed", "error_type": "WIZARD_SECURITY_VIOLATION"}, "failed"),
        ({"status": "usage_error", "reason": "a preview needs the sandbox"}, "failed"),
        ({}, "failed"),
    ],
)
def test_an_outcome_becomes_a_row(outcome: dict[str, Any], ended: str) -> None:
    result = run_result({"usage": {"cost_usd": 0.25}, **outcome}, 1.5)
    assert result.ended == ended
    assert (result.cost_usd, result.seconds) == (0.25, 1.5)
    assert result.reason == (outcome.get("reason") or "")


def test_a_rate_limited_run_waits_longer_at_each_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIZARD_FLEET_RATE_WAIT", "10")
    waits = [rate_limit_wait(attempt).total_seconds() for attempt in (1, 2, 3, 10)]
    assert waits == [10, 20, 40, 600]


def test_a_run_gets_no_credential_that_could_push() -> None:
    from wizard.fleet.activities import run_env

    worker = {
        "PATH": "/usr/bin",
        "WIZARD_GATEWAY_KEY": "k",
        "SSH_AUTH_SOCK": "/run/agent",
        "GH_TOKEN": "ghp_x",
        "GIT_ASKPASS": "/bin/askpass",
        "GIT_CONFIG_GLOBAL": "/x",
    }
    assert run_env(worker, Path("/w/state")) == {
        "PATH": "/usr/bin",
        "WIZARD_GATEWAY_KEY": "k",
        "WIZARD_STATE_DIR": "/w/state",
    }


# A stand-in for `wizard run` at the activity's edge: it says where its state is, leaves a
# folder there that a command of the agent made read-only, writes its outcome, and waits.
RUN = """import json, os, sys, time
state = os.environ["WIZARD_STATE_DIR"]
folder = os.path.join(state, "journal", "previews", "copy", "locked")
os.makedirs(folder)
open(os.path.join(folder, "kept"), "w").close()
os.chmod(folder, 0o500)
outcome = sys.argv[sys.argv.index("--outcome-json") + 1]
json.dump({"status": "succeeded", "state": state}, open(outcome, "w"))
time.sleep(float(os.environ.get("FAKE_RUN_SECONDS", "0")))
"""


def test_a_runs_journal_is_its_workspaces_and_goes_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run keeps its journal, preview and lock in the workspace (the fleet never reaches
    into wizard's own state); while it is still going, neither another attempt nor the
    clean-up touches them; after it, the clean-up removes them, read-only folders too."""
    script = tmp_path / "run.py"
    script.write_text(RUN)
    steps = Steps(tmp_path / "workspaces", 2, wizard=(sys.executable, str(script)), key=KEY)
    job = _job(_spec())
    folder = tmp_path / "workspaces" / job.fleet_id / job.repo.id
    (folder / "repo").mkdir(parents=True)
    workspace = Workspace(steps.queue, str(folder))
    monkeypatch.setenv("FAKE_RUN_SECONDS", "3")

    async def scene() -> None:
        env = ActivityEnvironment()
        going = asyncio.ensure_future(env.run(steps.run, job, workspace))
        while not (folder / "outcome.json").exists():
            await asyncio.sleep(0.05)
        for step, args in ((steps.run, (job, workspace)), (steps.clean_up, (job,))):
            with pytest.raises(ApplicationError, match="still ending") as refused:
                await ActivityEnvironment().run(step, *args)
            assert refused.value.type == "StillRunning" and not refused.value.non_retryable
        assert (folder / "state" / "journal" / "previews" / "copy" / "locked" / "kept").exists()
        assert (await going).status == "succeeded"
        said = json.loads((folder / "outcome.json").read_text())
        assert said["state"] == str(folder / "state")
        await env.run(steps.clean_up, job)

    asyncio.run(scene())
    assert not folder.exists()


def test_a_step_longer_than_its_heartbeat_keeps_beating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step has a heartbeat timeout (10 s), so a slow one must say it is alive: a
    clone that takes 5 s heartbeats every 2 s while it goes, and ends as it would."""

    def slow_clone(repo: Any, into: Path) -> str:
        time.sleep(5)
        into.mkdir(parents=True)
        return "base"

    monkeypatch.setattr(gitwork, "clone", slow_clone)
    steps = Steps(tmp_path / "workspaces", 2, wizard=(sys.executable, "-c", ""), key=KEY)
    env = ActivityEnvironment()
    beats: list[float] = []
    env.on_heartbeat = lambda *details: beats.append(time.monotonic())
    workspace = asyncio.run(env.run(steps.prepare, _job(_spec())))
    assert workspace.base_commit == "base"
    assert len(beats) >= 2, beats
