"""Benchmark: how a fleet scales, with a stand-in for `wizard run` at the activity's edge.

Run: .venv/bin/python bench/bench_fleet_scale.py [--sizes 100,1000] [--workers 1,2]
                                                 [--parallel 8] [--apart] [--run-seconds S]
                                                 [--json FILE]
     .venv/bin/python bench/bench_fleet_scale.py --chaos 1000 [--workers 2] [--seed 1]

Each fleet runs on the embedded Temporal server (or, with `--apart`, a development server
started apart on a port, as a team would run one; either started before the clock) with the fleet's
real workflows and activities (claim, clone, run, clean up); only `wizard run` is the test
suite's stand-in (`tests/fleet/fake_wizard.py`: it writes a succeeded outcome at once, or
after `--run-seconds`, as a real run that waits on its model does), so what is measured is
the fleet itself. Every repository is a clone of one local repository.
WORKERS workers serve it, each with its own queue and `--parallel` slots (this process and
WORKERS − 1 processes of their own, as `wizard fleet worker`s are); the fleet's own bound is
WORKERS × PARALLEL. Measured per size and worker count:

- wall time from the start to the burndown, and repositories started per second;
- the fleet workflow's history (events; Temporal's hard limit is 51,200): the largest of its
  runs (it continues as new past `FleetSpec.history_limit`, 5,000), and how many runs it
  took; and the largest repository workflow's;
- the peak memory of this process (the workers) and of the server;
- how long reading the whole burndown back takes, as `fleet status` does (the rows of the
  workflow's earlier runs are their repository workflows' results), and the size of the
  fleet's start payload (compressed past 64 KiB; Temporal refuses one over 2 MiB).

Every burndown is checked: each repository ran once and ended set up. Results in
`bench/results/fleet_scale.json`.

`--chaos N` runs one fleet of N repositories (`--workers` W, the first count) that publishes
each result to a branch of the repository's own bare clone, while it kills, at random points
(a seeded schedule, `--seed`): a worker (SIGKILL, then started again on its folder and so its
queue), or the server (SIGKILL to its enclosure and everything in it, then started again on
its state). This process only follows the fleet, reconnecting as the server comes back; every
worker is a process of its own. Checked at the end: one row per repository, each set up and
published, and each branch holding exactly one commit over its base (nothing published twice);
reported: the kills, the runs started again (a killed worker's) and the wall time. Results in
`bench/results/fleet_chaos.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
from temporalio.client import Client

from wizard.fleet.activities import Steps
from wizard.fleet.codec import DATA_CONVERTER
from wizard.fleet.model import Burndown, FleetSpec, Repo, repo_workflow_id
from wizard.fleet.seal import fleet_key, sealed
from wizard.fleet.server import (
    Server,
    connect_embedded,
    ensure_server,
    running_server,
    stop_server,
    temporal_binary,
)
from wizard.fleet.service import serve, start_fleet, whole

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fleet" / "fake_wizard.py"


def _source(folder: Path) -> Path:
    """One small git repository every repository of the fleet is cloned from."""
    repo = folder / "source"
    repo.mkdir()
    (repo / "app.py").write_text("print('hi')\n")
    for args in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "app"]):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=repo,
                       check=True, capture_output=True)  # fmt: skip
    return repo


async def _history_events(client: Any, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events)


async def _start_payload(spec: FleetSpec) -> int:
    """The bytes of the fleet's start as it travels: sealed, compressed past 64 KiB."""
    (payload,) = await DATA_CONVERTER.encode([sealed(spec, fleet_key())])
    return int(payload.ByteSize())


async def _generations(client: Any, workflow_id: str) -> list[int]:
    """The events of each run of the fleet's workflow (one more at each continue-as-new)."""
    runs = [run async for run in client.list_workflows(f'WorkflowId = "{workflow_id}"')]
    return sorted([
        len((await client.get_workflow_handle(workflow_id, run_id=run.run_id)
             .fetch_history()).events)
        for run in runs
    ], reverse=True)  # fmt: skip


async def _client(target: str) -> Any:
    """A client of the bench's server: the embedded one whose folder `target` is, or the one
    started apart listening at `target` (HOST:PORT)."""
    if not target.startswith("/"):
        return await Client.connect(target, data_converter=DATA_CONVERTER)
    server = running_server(Path(target))
    assert server is not None, "no embedded server"
    return await connect_embedded(server, "default")


def _apart(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A development server started apart (as a team would run one, on its own port and
    state file), and its address once it answers."""
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        port, ui = one.getsockname()[1], two.getsockname()[1]
    process = subprocess.Popen(
        [str(temporal_binary()), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
         "--port", str(port), "--ui-port", str(ui), "--log-level", "error",
         "--db-filename", str(folder / "apart.db")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"127.0.0.1:{port}"
        assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)


async def _fleet(server_pid: int, target: str, folder: Path, size: int, workers: int,
                 parallel: int, source: Path, run_seconds: float) -> dict[str, Any]:  # fmt: skip
    script = folder / f"script-{size}-{workers}.json"
    log = folder / f"log-{size}-{workers}.jsonl"
    ids = [f"r{i}" for i in range(size)]
    script.write_text(json.dumps({repo: [{"sleep": run_seconds}] for repo in ids}))
    os.environ["FAKE_WIZARD_SCRIPT"], os.environ["FAKE_WIZARD_LOG"] = str(script), str(log)
    spec = FleetSpec(fleet_id=f"scale-{uuid.uuid4().hex[:8]}", program="revenue-analytics",
                     repos=tuple(Repo(repo, str(source)) for repo in ids),
                     max_parallel=workers * parallel)  # fmt: skip
    client = await _client(target)
    # This process is the first worker; each other one is a process of its own, as `wizard
    # fleet worker` is (Temporal's SDK takes one worker per task queue in a process).
    others = [subprocess.Popen([sys.executable, __file__, "--serve", str(folder / f"w-{size}-{n}"),
                                str(parallel), target])
              for n in range(1, workers)]  # fmt: skip
    steps = Steps(folder / f"w-{size}-0", parallel, (sys.executable, str(FAKE)))
    processes = [psutil.Process(), *(psutil.Process(other.pid) for other in others)]
    peaks = {"workers_mb": 0.0, "server_mb": 0.0}

    async def sample(done: asyncio.Future[Any]) -> None:
        while not done.done():
            rss = sum(_rss(process) for process in processes)
            peaks["workers_mb"] = max(peaks["workers_mb"], rss / 2**20)
            peaks["server_mb"] = max(peaks["server_mb"], _tree_rss(server_pid) / 2**20)
            await asyncio.sleep(0.5)

    started = time.monotonic()
    handle, _ = await start_fleet(client, spec)
    result = asyncio.ensure_future(handle.result())
    try:
        await asyncio.gather(serve(client, steps, result), sample(result))
    finally:
        for other in others:  # a helper: its graceful shutdown waits on Temporal's polls
            other.kill()
            other.wait(timeout=30)
    wall = time.monotonic() - started
    reading = time.monotonic()
    burndown = await whole(client, result.result())  # as `fleet status` reads it
    read_back = time.monotonic() - reading
    ended = {row.repo: row.status for row in burndown.rows}
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    starts = [run for run in runs if run["event"] == "start"]
    assert set(ended.values()) == {"set up"} and len(ended) == size, burndown
    assert sorted(run["repo"] for run in starts) == sorted(ids), "a repository ran twice"
    repo_events = [await _history_events(client, repo_workflow_id(spec.fleet_id, repo))
                   for repo in ids[:: max(1, size // 20)]]  # fmt: skip
    return {
        "repositories": size, "workers": workers, "parallel_per_worker": parallel,
        "run_seconds": run_seconds, "server": "embedded" if target.startswith("/") else "apart",
        "wall_seconds": round(wall, 1), "starts_per_second": round(size / wall, 2),
        "fleet_history_events": (generations := await _generations(client, spec.fleet_id))[0],
        "fleet_generations": len(generations),
        "largest_repo_history_events": max(repo_events),
        "status_read_back_seconds": round(read_back, 1),
        "start_payload_kb": round(await _start_payload(spec) / 1024),
        "workers_peak_mb": round(peaks["workers_mb"]), "server_peak_mb": round(peaks["server_mb"]),
    }  # fmt: skip


async def _main(sizes: list[int], workers: list[int], parallel: int, apart: bool,
                run_seconds: float) -> list[dict[str, Any]]:  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="wizard-fleet-scale-", dir="/var/tmp"))
    if apart:
        process, target = _apart(folder)
        pid = process.pid
    else:
        pid = (await asyncio.to_thread(ensure_server, folder / "temporal")).pid
        target = str(folder / "temporal")
    source = _source(folder)
    results = []
    try:
        for size in sizes:
            for count in workers:
                row = await _fleet(pid, target, folder, size, count, parallel, source,
                                   run_seconds)  # fmt: skip
                print(json.dumps(row), flush=True)
                results.append(row)
    finally:
        if apart:
            process.terminate()
            process.wait(timeout=30)
        else:
            stop_server(folder / "temporal")
    return results


def _worker(folder: Path, n: int, parallel: int) -> subprocess.Popen[bytes]:
    """A worker of the chaos fleet, on its own folder (and so its own queue, which a worker
    started again on that folder takes up)."""
    return subprocess.Popen(
        [sys.executable, __file__, "--serve", str(folder / f"cw-{n}"), str(parallel),
         str(folder / "temporal")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _kill_server(server: Server) -> None:
    """SIGKILL to the server's enclosure and everything in it, at once."""
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(server.pid)
        for process in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal.SIGKILL)


def _say(started: float, what: str) -> None:
    """A line of the chaos's progress, on stderr."""
    print(f"{time.monotonic() - started:7.1f} s  {what}", file=sys.stderr, flush=True)


def _commits_over_base(source: Path, branch: str) -> int:
    done = subprocess.run(["git", "rev-list", "--count", f"HEAD..{branch}"], cwd=source,
                          capture_output=True, text=True, check=False)  # fmt: skip
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


async def _chaos(folder: Path, size: int, workers: int, parallel: int, source: Path,
                 seed: int) -> dict[str, Any]:  # fmt: skip
    rng = random.Random(seed)
    sources = folder / "sources"
    sources.mkdir()
    ids = [f"c{i}" for i in range(size)]
    for repo in ids:
        subprocess.run(["git", "clone", "--bare", "--quiet", str(source), str(sources / repo)],
                       check=True)  # fmt: skip
    script, log = folder / "chaos-script.json", folder / "chaos-log.jsonl"
    script.write_text(json.dumps({repo: [{"file": "analytics.py"}] for repo in ids}))
    os.environ["FAKE_WIZARD_SCRIPT"], os.environ["FAKE_WIZARD_LOG"] = str(script), str(log)
    spec = FleetSpec(fleet_id=f"chaos-{uuid.uuid4().hex[:8]}", program="revenue-analytics",
                     repos=tuple(Repo(repo, str(sources / repo)) for repo in ids),
                     max_parallel=workers * parallel, publish="branch")  # fmt: skip
    server_folder = folder / "temporal"
    server = await asyncio.to_thread(ensure_server, server_folder)
    processes = {n: _worker(folder, n, parallel) for n in range(workers)}
    client = await connect_embedded(server, "default")
    await start_fleet(client, spec)
    kills = {"worker": 0, "server": 0}
    restarted = 0
    started = time.monotonic()
    next_kill = started + rng.uniform(3, 10)
    burndown: Burndown | None = None
    try:
        while burndown is None:
            for n, process in processes.items():  # a worker that died of the server's death
                if process.poll() is not None:
                    _say(started, f"worker {n} ended by itself: started again")
                    processes[n] = _worker(folder, n, parallel)
                    restarted += 1
            try:
                handle = client.get_workflow_handle(spec.fleet_id, result_type=Burndown)
                described = await asyncio.wait_for(handle.describe(), 10)
                if described.status is not None and described.status.name == "COMPLETED":
                    burndown = await whole(client, await asyncio.wait_for(handle.result(), 30))
                    break
            except Exception as exc:  # the server is down, or coming back: reconnect
                _say(started, f"following the fleet failed ({type(exc).__name__}): reconnecting")
                await asyncio.sleep(0.5)
                server = await asyncio.to_thread(ensure_server, server_folder)
                with contextlib.suppress(Exception):
                    client = await connect_embedded(server, "default")
                continue
            if time.monotonic() >= next_kill:
                if rng.random() < 0.3:
                    _say(started, "the server is killed")
                    _kill_server(server)
                    kills["server"] += 1
                    await asyncio.sleep(rng.uniform(0.2, 2.0))
                    server = await asyncio.to_thread(ensure_server, server_folder)
                    client = await connect_embedded(server, "default")
                else:
                    n = rng.randrange(workers)
                    _say(started, f"worker {n} is killed")
                    processes[n].kill()
                    processes[n].wait()
                    kills["worker"] += 1
                    await asyncio.sleep(rng.uniform(0.0, 2.0))
                    processes[n] = _worker(folder, n, parallel)
                next_kill = time.monotonic() + rng.uniform(3, 10)
            await asyncio.sleep(0.5)
    finally:
        for process in processes.values():
            process.kill()
            process.wait(timeout=30)
    wall = time.monotonic() - started
    assert burndown is not None
    rows = [row.repo for row in burndown.rows]
    ended = {row.repo: row for row in burndown.rows}
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    starts = Counter(run["repo"] for run in runs if run["event"] == "start")
    ends = Counter(run["repo"] for run in runs if run["event"] == "end")
    commits = {repo: _commits_over_base(sources / repo, spec.branch) for repo in ids}
    assert sorted(rows) == sorted(ids), "a repository is missing from, or twice in, the burndown"
    assert {row.status for row in ended.values()} == {"set up"}, burndown.counts()
    assert all(row.published in ("created", "updated", "unchanged") for row in ended.values())
    assert set(commits.values()) == {1}, {r: c for r, c in commits.items() if c != 1}
    return {
        "repositories": size, "workers": workers, "parallel_per_worker": parallel,
        "seed": seed, "wall_seconds": round(wall, 1), "kills": kills,
        "workers_restarted_after_the_server": restarted,
        "rows": len(rows), "ended": burndown.counts(),
        "branches_with_one_commit": sum(1 for c in commits.values() if c == 1),
        "repositories_run_again": sum(1 for c in starts.values() if c > 1),
        "runs_finished_twice": sum(1 for c in ends.values() if c > 1),
        "published": {state: sum(1 for row in ended.values() if row.published == state)
                      for state in ("created", "updated", "unchanged")},
        "fleet_generations": len(await _generations(client, spec.fleet_id)),
    }  # fmt: skip


async def _chaos_main(size: int, workers: int, parallel: int, seed: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="wizard-fleet-chaos-", dir="/var/tmp"))
    try:
        result = await _chaos(folder, size, workers, parallel, _source(folder), seed)
    finally:
        stop_server(folder / "temporal")
    print(json.dumps(result), flush=True)
    return result


def _rss(process: psutil.Process) -> int:
    try:
        return int(process.memory_info().rss)
    except psutil.Error:
        return 0


def _tree_rss(pid: int) -> int:
    """The memory of a process and its children (the server runs in an enclosure)."""
    try:
        root = psutil.Process(pid)
        return sum(_rss(process) for process in [root, *root.children(recursive=True)])
    except psutil.Error:
        return 0


async def _serve(root: Path, parallel: int, target: str) -> None:
    """Another worker of the bench's fleets, until it is stopped."""
    client = await _client(target)
    await serve(client, Steps(root, parallel, (sys.executable, str(FAKE))),
                asyncio.get_running_loop().create_future())  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        root, parallel, target = sys.argv[2:5]
        asyncio.run(_serve(Path(root), int(parallel), target))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--chaos", type=int, help="one fleet of this many repositories, "
                        "with workers and the server killed at random")  # fmt: skip
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--run-seconds", type=float, default=0.0,
                        help="how long each stand-in run takes (a real one: minutes, most of "
                        "them waiting on the model)")  # fmt: skip
    parser.add_argument("--apart", action="store_true",
                        help="a development server started apart, on a port, not the "
                        "embedded one")  # fmt: skip
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    workers = [int(count) for count in args.workers.split(",")]
    if args.chaos is not None:
        results = [asyncio.run(_chaos_main(args.chaos, workers[0], args.parallel, args.seed))]
    else:
        results = asyncio.run(_main(sizes, workers, args.parallel, args.apart, args.run_seconds))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
