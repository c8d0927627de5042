"""Benchmark: both ends of a run. How long before the agent's first model request, how long
after its last reply byte before the process exits, and what the sandbox adds to a command.

Run: .venv/bin/python bench/bench_startup.py [--runs 3] [--sizes 0,20000,100000]
     [--harnesses pi,anthropic] [--think-ms 500] [--ends-only | --tools-only] [--before SRC]
     [--json FILE]

Side by side in one run, for each project size and harness (runs interleaved, medians):

- floor: the engine alone, from its process start to its first model request (pi: `pi --mode
  rpc` given a prompt at once; anthropic: the Claude CLI the SDK bundles, `-p`), against the
  same scripted gateway; this is what no wizard can beat;
- bare floor (pi, where NODE_EXTRA_CA_CERTS is set): the same without those certificates,
  which Node reads as it starts (a tenth of a second here) and wizard's host, which never
  speaks TLS, starts without; the floor wizard's own start is measured against at its
  strictest;
- SDK floor (anthropic): a Python program that imports the Claude Agent SDK and asks one
  prompt through its client, to its first model request: the engine as any program that
  drives it through the SDK meets it (pi's floor holds its SDK's import likewise);
- start: `wizard run transactional-email --ci` from its process start to the first model
  request, and its phases from the run's own events (Python and the plan up to `run_started`;
  `run_started` up to the work's spinner: lock, sandbox policy, engine check, first
  snapshot; the spinner up to the engine's first request: skill install, engine start);
- first run: the same start on the project's first run, with a journal of its own, empty (the
  first snapshot hashes and stores every file, as on a user's first run on a project; the
  runs above find their journal's stat cache warm);
- exit: the scripted reply is `[ABORT] bench stop`; from the gateway's last byte of it to the
  wizard process's exit;
- exit of a success: a run that writes one file and says it is done, with `--no-verify`;
  from the gateway's last byte (of its remark's reply) to the exit
  (`succeeded_last_byte_to_exit`);
- exit after work: the same from the abort that ends the sandboxed tool runs below (a
  sandbox made ahead for the next command stands then, and goes at the exit), with replies at
  once and with the model thinking (`exit_after_work`, `exit_after_work_thinking`);
- tool: five `bash ls` calls, then the abort; the gateway's time from the end of a reply that
  asks for the call to the request that brings its result, sandboxed and `--no-sandbox`: once
  with replies at once, and once with the model taking `--think-ms` (500) before each reply's
  first byte, as a real one does (the next command's sandbox is made in that time). What the
  sandbox adds is given twice: the difference of the two medians (`sandbox_adds`), and the
  median of each run's own difference (`sandbox_adds_paired`: the two are measured one after
  the other in each run, so what drifts between runs on a shared machine drops out). The
  `_standing` figures are the same over the calls after the second only, which find a sandbox
  made ahead standing (the first call's sandbox is wrapped when it comes on pi, and made as
  the call streams on the anthropic harness; the second may wait for the one being made
  after the first on pi: 0.2–0.7 s at 100,000 files), so that what a kept sandbox adds
  is not hidden by which of the five paid a making; the `_first` figures are over the first
  two calls alone (the mean of the two), which pay for whatever sandbox is still being made.

`--ends-only` measures the start and exit alone (cheap enough for many runs), `--tools-only`
the tool round trips alone (no start, exit or floor).

With `--before SRC` (another checkout's `src` folder, e.g. a `git worktree` of an older
commit), every wizard figure is measured for that tree too, interleaved with this one. Each
project gets one run of each tree before any is measured (its journal's first snapshot
hashes every file). The other tree keeps its own state folder (its engine record and
journals), and both get their bytecode compiled first, as an install from a wheel has it.

A project of N files is a git repository: a `node_modules` of 90% of them (packages of 100
files) and app files for the rest; size 0 is one file. The gateway runs in its own process and
records when (CLOCK_MONOTONIC, one clock for every process here) each request arrived and
each reply ended.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from wizard.engines.bundle import ensure_bundle
from wizard.engines.claude import bundled_cli
from wizard.layout import state_root
from wizard.runner.harness.pi.session import PROVIDER, models_json
from wizard.testing.script import call, reply, said

WIZARD = [sys.executable, "-m", "wizard"]
ABORT = said("[ABORT] bench stop")
TOOL_CALLS = 5
# The calls from this one on find the sandbox made ahead standing (the first is wrapped when it
# comes, the second may wait for the one being made after it).
STANDING = 2
MODEL = "claude-sonnet-4-6"
TOOL_NAME = {"pi": "bash", "anthropic": "mcp__wizard__bash"}
WRITE_NAME = {"pi": "write", "anthropic": "mcp__wizard__write"}


def make_project(root: Path, files: int) -> Path:
    """A git repository of `files` files (90% under node_modules); one file when 0."""
    project = root / f"project-{files}"
    project.mkdir()
    # An app that sends email (smtplib): one the transactional-email program fits.
    (project / "app.py").write_text("import smtplib\n\nprint('hello')\n")
    for number in range(files - 1):
        if number < files * 0.9:
            folder = project / "node_modules" / f"pkg{number // 100}"
        else:
            folder = project / "src" / f"mod{number // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{number}.js").write_text(f"module.exports = {number};\n")
    if files:
        # No gc in the background after the commit: a repository still repacking itself
        # while a run is measured changes under it (and throws its commands' sandboxes made
        # ahead away, as any change in the project does).
        git = ["git", "-C", str(project), "-c", "user.name=b", "-c", "user.email=b@b",
               "-c", "gc.auto=0", "-c", "maintenance.auto=false"]  # fmt: skip
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "bench"], check=True)
    return project


@contextmanager
def gateway(folder: Path, responses: list[dict[str, Any]]) -> Iterator[tuple[str, Path]]:
    """The scripted gateway in a process of its own: its URL and its request log."""
    scenario, log = folder / "scenario.json", folder / "requests.jsonl"
    scenario.write_text(json.dumps({"responses": responses}))
    log.unlink(missing_ok=True)
    command = [sys.executable, "-m", "wizard.testing.gateway", "--scenario", str(scenario),
               "--log", str(log)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    ready = process.stdout.readline().split()
    assert ready and ready[0] == "READY", ready
    try:
        yield ready[1], log
    finally:
        process.terminate()
        process.wait(10)


def requests(log: Path) -> list[dict[str, Any]]:
    """The gateway's records so far (one line each, written when its reply has ended; a line
    still being written is not one yet)."""
    lines = log.read_text().splitlines(keepends=True)
    return [json.loads(line) for line in lines if line.endswith("\n")]


def floor(harness: str, project: Path, folder: Path, *, bare: bool = False) -> float:
    """The engine alone: process start → its first model request, in seconds. `bare`: pi
    without the certificates NODE_EXTRA_CA_CERTS names, as wizard's host starts (Node reads
    them as it starts; the host never speaks TLS)."""
    with gateway(folder, [said("done")] * 4) as (url, log):
        started = time.monotonic()
        if harness == "pi":
            engine = ensure_bundle()
            agent = folder / "pi-agent"
            agent.mkdir(exist_ok=True)
            (agent / "models.json").write_text(json.dumps(
                models_json("anthropic-messages", MODEL, url, "k")))  # fmt: skip
            process = subprocess.Popen(
                [str(engine.node), str(engine.cli), "--mode", "rpc", "--no-session",
                 "--offline", "--no-extensions", "--no-skills", "--no-context-files",
                 "--provider", PROVIDER, "--model", MODEL],
                cwd=project, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**{name: value for name, value in os.environ.items()
                        if not (bare and name == "NODE_EXTRA_CA_CERTS")},
                     "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"},
                start_new_session=True,
            )  # fmt: skip
            assert process.stdin is not None
            process.stdin.write(b'{"type":"prompt","id":"p","message":"go"}\n')
            process.stdin.flush()
        else:
            process = subprocess.Popen(
                [str(bundled_cli()), "-p", "go", "--output-format", "stream-json", "--verbose",
                 "--model", MODEL],
                cwd=project, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "k",
                     "CLAUDE_CONFIG_DIR": str(folder / "claude-config")},
                start_new_session=True,
            )  # fmt: skip
        return _first_request(process, log, started)


# The smallest program on the Claude Agent SDK: one prompt through its client.
SDK_PROGRAM = """
import asyncio, sys
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
async def main():
    cwd, model, url, config = sys.argv[1:]
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "k", "CLAUDE_CONFIG_DIR": config}
    options = ClaudeAgentOptions(cwd=cwd, model=model, tools=[], setting_sources=[], env=env)
    async with ClaudeSDKClient(options) as client:
        await client.query("go")
        async for _ in client.receive_response():
            pass
asyncio.run(main())
"""


def sdk_floor(project: Path, folder: Path) -> float:
    """The Claude Agent SDK's smallest program: process start → its first model request."""
    with gateway(folder, [said("done")] * 4) as (url, log):
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-c", SDK_PROGRAM, str(project), MODEL, url,
             str(folder / "claude-config")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        return _first_request(process, log, started)


def _first_request(process: subprocess.Popen[bytes], log: Path, started: float) -> float:
    """Seconds from `started` to the gateway's first request; then `process` ends, with what
    it started (the SDK's program starts the CLI)."""
    try:
        while not requests(log) and process.poll() is None:
            time.sleep(0.005)
        return float(requests(log)[0]["received_at"]) - started
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


Records = list[dict[str, Any]]


def wizard_run(harness: str, project: Path, folder: Path, responses: Records, *extra: str,
               src: Path | None = None, state: Path | None = None,
               ) -> tuple[dict[str, Any], Records, float, int]:  # fmt: skip
    """One `wizard run`: its events (each `ts` as seconds since its start), the gateway's
    records (times since its start too), its exit time since its start, and its exit code.
    `state`: wizard's state folder for this run (its engine record, its journals)."""
    with gateway(folder, responses) as (url, log):
        # The journal keeps every run here: past its limit each run would also prune the
        # store, a cost of its own that would land on some runs and not others.
        environ = {**os.environ, "WIZARD_GATEWAY_URL": url, "WIZARD_TELEMETRY": "0",
                   "WIZARD_LOG_DIR": str(folder / "logs"),
                   "WIZARD_JOURNAL_KEEP": "1000"}  # fmt: skip
        if src is not None:  # another tree of wizard's (`--before`), ahead of this one
            environ["PYTHONPATH"] = str(src)
            # Its own state (engine record, journals): formats differ between trees.
            state = state or _state(src, folder)
        if state is not None:
            environ["WIZARD_STATE_DIR"] = str(state)
        wall, started = time.time(), time.monotonic()
        done = subprocess.run(
            [*WIZARD, "run", "transactional-email", "--project", str(project), "--ci",
             "--harness", harness, "--model", MODEL, *extra],
            env=environ, capture_output=True, text=True, check=False,
        )  # fmt: skip
        exited = time.monotonic() - started
        records = requests(log)
    if done.returncode not in (0, 3, 4):  # what went wrong, for the assertion that follows
        said = done.stdout[-4000:] + done.stderr[-4000:]
        sys.stderr.write(f"wizard exited {done.returncode}:\n{said}\n")
    events: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        event = json.loads(line)
        seconds = datetime.fromisoformat(event["ts"]).timestamp() - wall
        key = event["event"] if event["event"] != "log" else f"log: {event['message']}"
        events.setdefault(key, seconds)
    for record in records:
        record["received_at"] -= started
        record["ended_at"] -= started
    return events, records, exited, done.returncode


def start_and_exit(harness: str, project: Path, folder: Path, src: Path | None
                   ) -> dict[str, float]:  # fmt: skip
    events, records, exited, code = wizard_run(harness, project, folder, [ABORT], src=src)
    assert code == 3 and len(records) == 1, (code, records)
    first = records[0]["received_at"]
    return {
        "start_to_first_request": first,
        "start_to_run_started": events["run_started"],
        "run_started_to_work": events["spinner_started"] - events["run_started"],
        "work_to_first_request": first - events["spinner_started"],
        "last_byte_to_exit": exited - records[0]["ended_at"],
    }


def succeeded_exit(harness: str, project: Path, folder: Path, src: Path | None) -> float:
    """Last reply byte → exit, in seconds, of a run that succeeds with `--no-verify`: it
    writes one file (removed after, so that every run finds the same project), then ends."""
    note = project / "bench-note.txt"
    responses = [reply(call(WRITE_NAME[harness], path=note.name, content="x\n")),
                 said("Done."), said("Nothing to add.")]  # fmt: skip
    try:
        _, records, exited, code = wizard_run(harness, project, folder, responses, "--no-verify",
                                              src=src)  # fmt: skip
    finally:
        note.unlink(missing_ok=True)
    assert code == 0 and len(records) >= 2, (code, records)
    return exited - records[-1]["ended_at"]


def _state(src: Path | None, folder: Path) -> Path:
    """The state folder a build's runs keep (the other tree's of `--before`: its own)."""
    return folder.parent / "state-before" if src is not None else state_root()


def first_run(harness: str, project: Path, folder: Path, src: Path | None) -> float:
    """Start → first request, in seconds, of the project's first run: a state folder holding
    only the build's engine record (no journal yet)."""
    state = folder / "first-run-state"
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(_state(src, folder) / "engines", state / "engines")
    try:
        _, records, _, code = wizard_run(harness, project, folder, [ABORT], src=src, state=state)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    assert code == 3 and len(records) == 1, (code, records)
    return float(records[0]["received_at"])


def tool_round_trips(harness: str, project: Path, folder: Path, sandboxed: bool,
                     src: Path | None, think_ms: int = 0) -> tuple[list[float], float]:  # fmt: skip
    """Each time from a reply asking for `bash ls` to the request with its result, the model
    taking `think_ms` before each reply (the `[ABORT]` after the calls too); and the time from
    that abort's last byte to the exit (after work: a sandbox made ahead stands then)."""
    calls = [reply(call(TOOL_NAME[harness], command="ls"), latency_ms=think_ms)
             for _ in range(TOOL_CALLS)]  # fmt: skip
    extra = () if sandboxed else ("--no-sandbox",)
    abort = said("[ABORT] bench stop", latency_ms=think_ms)
    _, records, exited, code = wizard_run(harness, project, folder, [*calls, abort], *extra,
                                          src=src)  # fmt: skip
    assert code == 3 and len(records) == TOOL_CALLS + 1, (code, len(records))
    trips = [records[i + 1]["received_at"] - records[i]["ended_at"] for i in range(TOOL_CALLS)]
    return trips, exited - records[-1]["ended_at"]


def measure(harness: str, project: Path, folder: Path, src: Path | None, think_ms: int | None,
            ends: bool = True) -> dict[str, float]:  # fmt: skip
    """One build's start and exit (if `ends`) and (unless `think_ms` is None) tool round trips,
    in ms."""
    figures: dict[str, float] = {}
    if ends:
        figures = {key: value * 1000 for key, value in
                   start_and_exit(harness, project, folder, src).items()}  # fmt: skip
        figures["first_run_to_first_request"] = first_run(harness, project, folder, src) * 1000
        figures["succeeded_last_byte_to_exit"] = succeeded_exit(harness, project, folder,
                                                                src) * 1000  # fmt: skip
    if think_ms is None:
        return figures
    for think, suffix in ((0, ""), (think_ms, "_thinking")):
        for sandboxed, name in ((False, "tool_plain"), (True, "tool_sandboxed")):
            trips, exit_s = tool_round_trips(harness, project, folder, sandboxed, src, think)
            figures[name + suffix] = statistics.median(trips) * 1000
            figures[name + "_standing" + suffix] = statistics.median(trips[STANDING:]) * 1000
            figures[name + "_first" + suffix] = statistics.median(trips[:STANDING]) * 1000
        figures["exit_after_work" + suffix] = exit_s * 1000  # the sandboxed run's
    return figures


def summary(runs: list[dict[str, float]], floors: dict[str, float]) -> dict[str, float]:
    """Medians over the runs (and the slowest exit), with what they add to the floors and to a
    plain command."""
    figures = {key: round(statistics.median(run[key] for run in runs), 1) for key in runs[0]}
    for exit_ in ("last_byte_to_exit", "succeeded_last_byte_to_exit"):
        if exit_ in figures:
            figures[f"{exit_}_worst"] = max(round(run[exit_], 1) for run in runs)
    # engine_floor; sdk_floor for anthropic; engine_floor_bare for pi, where the user has
    # NODE_EXTRA_CA_CERTS
    for name, floor_ms in floors.items():
        figures[name] = floor_ms
        over = "over_floor" if name == "engine_floor" else f"over_{name}"
        figures[over] = round(figures["start_to_first_request"] - floor_ms, 1)
        figures[f"first_run_{over}"] = round(figures["first_run_to_first_request"] - floor_ms, 1)
    suffixes = ("", "_thinking", "_standing", "_standing_thinking", "_first", "_first_thinking")
    for suffix in suffixes if "tool_plain" in figures else ():
        sandboxed, plain = "tool_sandboxed" + suffix, "tool_plain" + suffix
        figures["sandbox_adds" + suffix] = round(figures[sandboxed] - figures[plain], 1)
        # Each run's two measured side by side: what drifts between runs drops out.
        paired = statistics.median(run[sandboxed] - run[plain] for run in runs)
        figures["sandbox_adds_paired" + suffix] = round(paired, 1)
    return figures


def bench(runs: int, sizes: list[int], harnesses: list[str], before: Path | None,
          think_ms: int | None, ends: bool = True) -> dict[str, Any]:  # fmt: skip
    builds: dict[str, Path | None] = {"now": None, **({"before": before} if before else {})}
    results: dict[str, Any] = {"runs": runs, "cores": os.cpu_count(), "think_ms": think_ms,
                               "sizes": {}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="wizard-bench-startup-", dir="/var/tmp") as tmp:
        root = Path(tmp)
        for size in sizes:
            project = make_project(root, size)
            by_harness: dict[str, Any] = {}
            for harness in harnesses:
                folder = root / f"{harness}-{size}"
                folder.mkdir()
                floors: dict[str, list[float]] = {"engine_floor": []} if ends else {}
                if harness == "anthropic" and ends:
                    floors["sdk_floor"] = []
                if harness == "pi" and ends and "NODE_EXTRA_CA_CERTS" in os.environ:
                    floors["engine_floor_bare"] = []
                measured: dict[str, list[dict[str, float]]] = {build: [] for build in builds}
                # One run of each build first, not measured: the journal's first snapshot of a
                # new project hashes every file, and would land on whichever build went first.
                for src in builds.values():
                    wizard_run(harness, project, folder, [ABORT], src=src)
                for _ in range(runs):  # interleaved, so a noisy moment hits every column
                    if "engine_floor" in floors:
                        floors["engine_floor"].append(floor(harness, project, folder) * 1000)
                    if "sdk_floor" in floors:
                        floors["sdk_floor"].append(sdk_floor(project, folder) * 1000)
                    if "engine_floor_bare" in floors:
                        floors["engine_floor_bare"].append(
                            floor(harness, project, folder, bare=True) * 1000
                        )
                    for build, src in builds.items():
                        measured[build].append(
                            measure(harness, project, folder, src, think_ms, ends)
                        )
                medians = {name: round(statistics.median(values), 1)
                           for name, values in floors.items()}  # fmt: skip
                by_harness[harness] = {
                    build: summary(values, medians) for build, values in measured.items()
                }
                for build, figures in by_harness[harness].items():
                    shown = "  ".join(f"{key} {value:g}" for key, value in figures.items())
                    print(f"{size:>7} files  {harness:<9} {build:<6} {shown}", flush=True)
            results["sizes"][str(size)] = by_harness
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="0,20000,100000")
    parser.add_argument("--harnesses", default="pi,anthropic")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--think-ms",
        type=int,
        default=500,
        help="the model's time before each reply, in the second tool figures",
    )
    parser.add_argument("--ends-only", action="store_true",
                        help="start and exit only, no tool round trips (cheap enough for "
                        "many runs)")  # fmt: skip
    parser.add_argument("--tools-only", action="store_true",
                        help="the tool round trips only, no start, exit or floor")  # fmt: skip
    parser.add_argument("--before", type=Path,
                        help="another checkout's src folder, measured side by side")  # fmt: skip
    args = parser.parse_args()
    # Each build with its bytecode compiled, as an install from a wheel has it (an editable
    # install where writing bytecode is off, PYTHONDONTWRITEBYTECODE, compiles every start).
    for src in (Path(__file__).parents[1] / "src", args.before):
        if src is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    results = bench(args.runs, [int(size) for size in args.sizes.split(",")],
                    args.harnesses.split(","), args.before,
                    None if args.ends_only else args.think_ms,
                    not args.tools_only)  # fmt: skip
    print("(milliseconds, medians)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
