"""Fleets of real corpus apps, end to end: the embedded Temporal server (or one started apart),
real `wizard run`s with the pi engine against the scripted gateway, and real git branches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import psutil
import pytest
from fleet_world import NOT_APPLICABLE, PROGRAM, PROVEN_NODE, PROVEN_PYTHON, UNVERIFIED

from tests.fleet.conftest import Fleet
from tests.fleet.histories import record
from wizard.schemas import fleet_schema

pytestmark = pytest.mark.live
BRANCH = f"wizard/{PROGRAM}"


def _burndown(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def _ended(burndown: dict[str, Any]) -> dict[str, str]:
    return {row["repo"]: row["status"] for row in burndown["rows"]}


def _recorded(fleet: Fleet, burndown: dict[str, Any], scenario: str) -> None:
    """Keep the fleet's histories for the replay test, if asked (`histories.py`)."""
    import asyncio

    from wizard.fleet.server import connect_embedded, running_server

    server = running_server(fleet.state / "fleet")
    if server is None or not os.environ.get("WIZARD_RECORD_FLEET_HISTORIES"):
        return

    async def kept() -> None:
        client = await connect_embedded(server, "default")
        await record(client, burndown["fleet_id"], [row["repo"] for row in burndown["rows"]],
                     scenario)  # fmt: skip

    asyncio.run(kept())


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_each_repository_ends_as_it_deserves_and_a_rerun_reuses_the_branches(
    fleet_world: Any,
) -> None:
    fleet: Fleet = fleet_world([PROVEN_NODE, UNVERIFIED, NOT_APPLICABLE, PROVEN_PYTHON])
    run = ("fleet", "run", PROGRAM, "--repos", str(fleet.world.repos_file), "--publish",
           "branch", "--max-parallel", "2", "--json")  # fmt: skip
    done = fleet.wizard(*run)
    assert done.returncode == 1, done.stderr  # not every repository ended set up
    first = _burndown(done)
    assert _ended(first) == fleet.world.deserves
    _recorded(fleet, first, "published")
    assert first["finished"] and not first["budget_spent"] and first["cost_usd"] > 0
    rows = {row["repo"]: row for row in first["rows"]}
    unfit = rows["todomvc-javascript-es5-2"]
    assert unfit["reason"] == "nothing here uses Stripe" and not unfit["branch"]
    assert "not proven" in rows["stripe-checkout-node-1"]["reason"]
    for repo in fleet.world.repos:
        row = rows[repo.name]
        if row["status"] == "proven":
            assert row["published"] == "created"
            assert _git(repo, "rev-parse", BRANCH) == row["commit"]
            changed = _git(repo, "diff", "--name-only", f"main..{BRANCH}").split()
            assert changed == ["server/node/server.js" if "node" in repo.name
                               else "server/python/server.py"]  # fmt: skip
        else:
            assert _git(repo, "branch", "--list", BRANCH) == ""
        assert _git(repo, "status", "--porcelain") == ""  # the user's checkout untouched
    assert fleet.workspaces() == []

    status = _burndown(fleet.wizard("fleet", "status", "--json"))
    assert status["rows"] == first["rows"]
    jsonschema.validate(status, fleet_schema())  # `wizard schema fleet`

    joined = fleet.wizard(*run)  # the same command: the finished fleet, nothing run again
    assert _burndown(joined)["rows"] == first["rows"]
    assert "has finished; its burndown follows" in joined.stderr
    again = _burndown(fleet.wizard(*run, "--fleet", "again"))
    assert _ended(again) == fleet.world.deserves
    for row in again["rows"]:
        if row["status"] == "proven":
            assert (row["published"], row["commit"]) == ("unchanged", rows[row["repo"]]["commit"])
            repo = fleet.world.repos_file.parent / row["repo"]
            assert _git(repo, "rev-list", "--count", f"main..{BRANCH}") == "1"


def test_each_result_is_a_pull_request_opened_once_and_updated_by_a_rerun(
    fleet_world: Any,
) -> None:
    """`--publish pull-request`: each result set up is pushed to the fleet's branch and a pull
    request opened from it (the local forge speaks GitHub's API), which says the ending, the
    proofs and the cost; a rerun under a new fleet id finds it and opens no second; a result
    not set up opens none. The token reaches the forge, never a run."""
    from tests.fleet.forge_server import TOKEN, forge_server

    fleet: Fleet = fleet_world([PROVEN_NODE, UNVERIFIED])
    with forge_server() as forge:
        env = {**fleet.env, "WIZARD_FORGE": "github", "WIZARD_FORGE_API": forge.url,
               "GITHUB_TOKEN": TOKEN}  # fmt: skip
        run = ("fleet", "run", PROGRAM, "--repos", str(fleet.world.repos_file), "--publish",
               "pull-request", "--json")  # fmt: skip
        first = _burndown(fleet.wizard(*run, env=env))
        rows = {row["repo"]: row for row in first["rows"]}
        proven, unverified = rows["stripe-checkout-node-0"], rows["stripe-checkout-node-1"]
        assert (proven["status"], proven["published"]) == ("proven", "created")
        assert proven["pull_request"].startswith("https://github.example/")
        assert unverified["status"] == "unverified" and unverified["pull_request"] is None
        repo = "/".join(fleet.world.repos[0].parts[-2:])
        (pull,) = forge.open_pulls(repo)
        assert (pull["head"], pull["base"], pull["title"]) == (BRANCH, "main", f"wizard: {PROGRAM}")
        assert "**proven**" in pull["body"] and "Cost: $" in pull["body"]
        assert all(f"- {proof}" in pull["body"] for proof in proven["proofs"])
        assert forge.pulls.get("/".join(fleet.world.repos[1].parts[-2:]), []) == []

        again = _burndown(fleet.wizard(*run, "--fleet", "again", env=env))
        row = {row["repo"]: row for row in again["rows"]}["stripe-checkout-node-0"]
        assert (row["published"], row["pull_request"]) == ("unchanged", proven["pull_request"])
        assert len(forge.open_pulls(repo)) == 1
        assert [m for m, _, _ in forge.asked].count("POST") == 1
        assert {token for _, _, token in forge.asked} == {TOKEN}
    jsonschema.validate(again, fleet_schema())
    requests = fleet.gateway_log.read_text()
    assert TOKEN not in requests


def _wizard_runs_of(workspace_part: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if " run " in cmdline and workspace_part in cmdline and "--preview" in cmdline:
            found.append(process)
    return found


def test_a_killed_worker_and_server_leave_nothing_behind_and_the_fleet_goes_on_without_redoing(
    fleet_world: Any,
) -> None:
    """Mid-fleet, SIGKILL to `wizard fleet run` (the worker) and to the embedded server; the
    same command again starts the server on its state and joins the fleet."""
    from wizard.fleet.server import running_server

    fleet: Fleet = fleet_world([PROVEN_NODE, PROVEN_PYTHON, NOT_APPLICABLE])
    run = [sys.executable, "-m", "wizard", "fleet", "run", PROGRAM, "--repos",
           str(fleet.world.repos_file), "--max-parallel", "1", "--json"]  # fmt: skip
    said = fleet.gateway_log.parent / "first-fleet.err"
    with open(said, "w") as errors:
        first = subprocess.Popen(run, env=fleet.env, stdout=subprocess.DEVNULL, stderr=errors)
    second_repo = "/stripe-checkout-python-1/repo"
    deadline = time.monotonic() + 120
    while not _wizard_runs_of(second_repo):  # the first repository has ended; the second runs
        assert first.poll() is None and time.monotonic() < deadline, said.read_text()
        time.sleep(0.1)
    time.sleep(1.0)  # well into its run
    server = running_server(fleet.state / "fleet")
    assert server is not None
    os.kill(first.pid, signal.SIGKILL)
    os.kill(server.pid, signal.SIGKILL)
    first.wait()
    deadline = time.monotonic() + 20
    while _wizard_runs_of(second_repo):  # its run got SIGTERM when the worker died
        assert time.monotonic() < deadline, "a run outlived its killed worker"
        time.sleep(0.1)

    done = fleet.wizard(*run[3:])
    burndown = _burndown(done)
    assert "Joined fleet" in done.stderr, said.read_text() + done.stderr
    restarted = running_server(fleet.state / "fleet")
    assert restarted is not None and restarted.pid != server.pid
    assert _ended(burndown) == fleet.world.deserves, burndown
    _recorded(fleet, burndown, "worker-killed")
    rows = {row["repo"]: row for row in burndown["rows"]}
    assert rows["stripe-checkout-node-0"]["attempts"] == 1, burndown
    assert rows["stripe-checkout-python-1"]["attempts"] == 2  # started over, from a clean slate
    assert rows["todomvc-javascript-es5-2"]["attempts"] == 1
    # The first repository's run went to the gateway once: it was not run again.
    firsts = [r for r in fleet.requests() if r["conversation"] == 0]
    script = fleet.world.scenario["conversations"][0]["responses"]
    assert len(firsts) == len(script) - 1  # each request after the shared opening, once
    assert fleet.workspaces() == []


def test_no_repository_starts_once_the_fleets_budget_is_spent(fleet_world: Any) -> None:
    fleet: Fleet = fleet_world([PROVEN_NODE, PROVEN_PYTHON, NOT_APPLICABLE])
    done = fleet.wizard("fleet", "run", PROGRAM, "--repos", str(fleet.world.repos_file),
                        "--max-parallel", "1", "--max-cost", "0.01", "--json")  # fmt: skip
    assert done.returncode == 1
    burndown = _burndown(done)
    assert burndown["budget_spent"]
    assert _ended(burndown) == {"stripe-checkout-node-0": "proven",
                                "stripe-checkout-python-1": "skipped",
                                "todomvc-javascript-es5-2": "skipped"}  # fmt: skip
    assert burndown["cost_usd"] >= 0.01
    assert {r["conversation"] for r in fleet.requests()} == {0, 3}  # only the first ran


def test_two_workers_share_a_fleet_on_a_separately_started_server(
    fleet_world: Any, tmp_path: Path
) -> None:
    from wizard.fleet.server import temporal_binary

    fleet: Fleet = fleet_world([PROVEN_NODE, UNVERIFIED, NOT_APPLICABLE, PROVEN_PYTHON])
    port, ui = _free_port(), _free_port()
    server = subprocess.Popen(
        [str(temporal_binary()), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
         "--port", str(port), "--ui-port", str(ui), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    workers: list[subprocess.Popen[bytes]] = []
    address = f"127.0.0.1:{port}"
    # The workers of one owner's fleet share its key (each has its own state folder here).
    shared = {**fleet.env, "WIZARD_FLEET_KEY_FILE": str(tmp_path / "fleet.key")}
    try:
        for name in ("a", "b"):
            env = {**shared, "WIZARD_STATE_DIR": str(tmp_path / f"worker-{name}")}
            workers.append(subprocess.Popen(
                [sys.executable, "-m", "wizard", "fleet", "worker", "--temporal", address,
                 "--max-parallel", "1"], env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        done = fleet.wizard("fleet", "run", PROGRAM, "--repos", str(fleet.world.repos_file),
                            "--no-worker", "--temporal", address, "--max-parallel", "2",
                            "--json", env=shared)  # fmt: skip
        burndown = _burndown(done)
        assert _ended(burndown) == fleet.world.deserves
        assert len({row["worker"] for row in burndown["rows"]}) == 2
        assert not (fleet.state / "fleet" / "server.json").exists()  # no embedded server
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(timeout=30) for worker in workers]
        server.terminate()
        server.wait(timeout=30)
    assert codes == [0, 0]
    for name in ("a", "b"):
        assert fleet.workspaces(tmp_path / f"worker-{name}") == []


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
