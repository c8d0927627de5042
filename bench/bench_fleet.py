"""Benchmark: a fleet's throughput, and what the fleet adds to each repository's run.

Run: .venv/bin/python bench/bench_fleet.py [CORPUS] [--repos 10] [--runs 3]
                                           [--json bench/results/fleet.json]

CORPUS is the folder of real apps (`../shared/corpus` by default). The world is
`fleet_world`'s: REPOS local git repositories of the corpus's Stripe apps and an app no
program fits, each a real `wizard run revenue-analytics` with the pi engine against one
scripted gateway on 127.0.0.1 (correct integrations, a sabotaged one, an abort). Measured:

- one worker: `wizard fleet run --max-parallel 2 --publish branch` on the embedded server
  (started before the clock), wall time → repositories per minute;
- two workers: a Temporal server started apart (`temporal server start-dev`), two `wizard
  fleet worker --max-parallel 2`, and `wizard fleet run --no-worker --max-parallel 4`;
- overhead: a fleet of one repository against a bare `wizard run --preview --patch-out` of
  the same repository, interleaved RUNS times each (medians), on the running embedded server.

Every fleet's burndown is checked against what each repository deserves: a throughput that
came with a wrong burndown is not reported as one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fleet_world import (
    NOT_APPLICABLE,
    PROGRAM,
    PROVEN_NODE,
    PROVEN_PYTHON,
    UNVERIFIED,
    build_world,
    fleet_env,
)

from wizard.fleet.server import ensure_server, stop_server, temporal_binary

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
MIX = [PROVEN_NODE, PROVEN_PYTHON, UNVERIFIED, PROVEN_NODE, NOT_APPLICABLE]


def _wizard(*args: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "wizard", *args], env=env, capture_output=True,
                          text=True, timeout=1800)  # fmt: skip
    return time.monotonic() - started, done


def _checked(done: subprocess.CompletedProcess[str], deserves: dict[str, str]) -> dict[str, Any]:
    burndown = json.loads(done.stdout)
    ended = {row["repo"]: row["status"] for row in burndown["rows"]}
    if ended != deserves:
        raise SystemExit(f"wrong burndown: {ended} != {deserves}\n{done.stderr[-2000:]}")
    return burndown


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_worker(world: Any, env: dict[str, str]) -> dict[str, Any]:
    seconds, done = _wizard("fleet", "run", PROGRAM, "--repos", str(world.repos_file), "--json",
                            "--max-parallel", "2", "--publish", "branch", env=env)  # fmt: skip
    burndown = _checked(done, world.deserves)
    runs = [row["seconds"] for row in burndown["rows"] if row["seconds"]]
    return {"seconds": round(seconds, 2), "per_minute": round(60 * len(runs) / seconds, 2),
            "run_seconds_median": round(statistics.median(runs), 2)}  # fmt: skip


def two_workers(world: Any, env: dict[str, str], work: Path) -> dict[str, Any]:
    port = _free_port()
    server = subprocess.Popen([str(temporal_binary()), "server", "start-dev", "--headless",
                               "--ip", "127.0.0.1", "--port", str(port), "--log-level", "error",
                               "--ui-port", str(_free_port())],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    address = f"127.0.0.1:{port}"
    workers = []
    try:
        time.sleep(2.0)  # the server's start-up, outside the clock
        for name in ("a", "b"):
            workers.append(subprocess.Popen(
                [sys.executable, "-m", "wizard", "fleet", "worker", "--temporal", address,
                 "--max-parallel", "2"], env={**env, "WIZARD_STATE_DIR": str(work / name)},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        seconds, done = _wizard("fleet", "run", PROGRAM, "--repos", str(world.repos_file),
                                "--no-worker", "--temporal", address, "--max-parallel", "4",
                                "--fleet", "bench-two-workers", "--json", env=env)  # fmt: skip
        burndown = _checked(done, world.deserves)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
        server.terminate()
        server.wait(timeout=60)
    by_worker = len({row["worker"] for row in burndown["rows"]})
    return {"seconds": round(seconds, 2), "per_minute": round(60 * len(world.repos) / seconds, 2),
            "workers_used": by_worker}  # fmt: skip


def _fleet_of_one(repos_file: Path, fleet_id: str, env: dict[str, str]) -> dict[str, float]:
    """A fleet of one repository, timed from outside: until it was started (the fleet's own
    start-up), and in all; with the run's own seconds from its row."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "wizard", "fleet", "run", PROGRAM, "--repos", str(repos_file),
         "--fleet", fleet_id, "--max-parallel", "1", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None and process.stdout is not None
    fleet_started = 0.0
    for line in process.stderr:
        if line.startswith("Started fleet"):
            fleet_started = time.monotonic() - started
    burndown = json.loads(process.stdout.read())
    process.wait()
    return {"whole": time.monotonic() - started, "start": fleet_started,
            "run": burndown["rows"][0]["seconds"]}  # fmt: skip


def overhead(corpus: Path, work: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """A fleet of one repository against a bare preview run of it, interleaved: the fleet's
    start-up (once per fleet), and what it adds around each repository's run."""
    single = build_world(corpus, work / "single", [PROVEN_NODE])
    fleets, bare_times = [], []
    for number in range(runs):
        fleets.append(_fleet_of_one(single.repos_file, f"bench-single-{number}", env))
        copy = work / f"bare-{number}"
        shutil.copytree(single.repos[0], copy, symlinks=True)
        seconds, done = _wizard("run", PROGRAM, "--project", str(copy), "--preview", "--patch-out",
                                str(work / f"bare-{number}.patch"), "--ci", env=env)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"the bare run failed: {done.stderr[-2000:]}")
        bare_times.append(seconds)

    def median(key: str) -> float:
        return round(statistics.median(f[key] for f in fleets), 2)

    whole, bare = median("whole"), round(statistics.median(bare_times), 2)
    around = round(whole - median("start") - median("run"), 2)
    return {"fleet_of_one_seconds": whole, "bare_run_seconds": bare,
            "overhead_seconds": round(whole - bare, 2), "ratio": round(whole / bare, 2),
            "fleet_start_seconds": median("start"), "run_in_fleet_seconds": median("run"),
            "per_repository_seconds": around}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repos", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wizard-fleet-bench-", dir="/var/tmp"))
    cases = [MIX[i % len(MIX)] for i in range(args.repos)]
    gateway = None
    try:
        world = build_world(args.corpus, work / "world", cases)
        scenario = work / "scenario.json"
        scenario.write_text(json.dumps(world.scenario))
        gateway = subprocess.Popen([sys.executable, "-m", "wizard.testing.gateway", "--scenario",
                                    str(scenario)], stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert gateway.stdout is not None
        url = gateway.stdout.readline().split()[1]
        base = {k: v for k, v in os.environ.items() if not k.startswith("WIZARD_GATEWAY")}
        env = fleet_env({**base, "WIZARD_TELEMETRY": "0", "NO_COLOR": "1",
                         "WIZARD_STATE_DIR": str(work / "state")}, url)  # fmt: skip
        os.environ["WIZARD_STATE_DIR"] = env["WIZARD_STATE_DIR"]
        ensure_server()  # the embedded server, started before any clock
        report = {"repos": args.repos, "cores": os.cpu_count(),
                  "one_worker": one_worker(world, env),
                  "two_workers": two_workers(world, env, work / "workers"),
                  "overhead": overhead(args.corpus, work, env, args.runs)}  # fmt: skip
    finally:
        stop_server()
        if gateway is not None:
            gateway.terminate()
            gateway.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    one, two, cost = report["one_worker"], report["two_workers"], report["overhead"]
    print(f"{args.repos} repositories, burndowns correct, {report['cores']} cores")
    print(f"  one worker  (2 at once): {one['seconds']:7.1f} s  {one['per_minute']:5.1f} repos/min")
    print(f"  two workers (4 at once): {two['seconds']:7.1f} s  {two['per_minute']:5.1f} repos/min"
          f"  ({two['workers_used']} workers took repositories)")  # fmt: skip
    print(
        f"  one repository: fleet {cost['fleet_of_one_seconds']} s vs bare run "
        f"{cost['bare_run_seconds']} s: +{cost['overhead_seconds']} s ({cost['ratio']}x)"
    )
    print(f"    the fleet's start-up {cost['fleet_start_seconds']} s (once a fleet); the run in "
          f"it {cost['run_in_fleet_seconds']} s; around each repository's run "
          f"{cost['per_repository_seconds']} s (claim, clone, clean-up, result)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
