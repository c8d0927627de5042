"""Benchmark: what crosses the pi boundary for one long reply, before and after the pi host.

Run: .venv/bin/python bench/bench_pi_boundary.py [--lengths 10000,50000,200000,400000]
     [--json bench/results/pi_boundary.json]

For each reply length (text streamed by the scripted gateway in 4-character deltas, Anthropic
Messages API), side by side in one run on the same pinned pi:

- before: `pi --mode rpc` (what wizard drove until the host), read by a minimal client that
  splits on LF and parses every line, as a Python host must;
- after: wizard's pi host (`host.mjs`) through `PiSession`, the real boundary wizard uses.

Reported per run: bytes and lines read from the engine, the engine process's CPU seconds and
peak resident memory (VmHWM from /proc), the reading Python process's CPU seconds and peak
traced allocation (tracemalloc), wall time, and how the run ended. The gateway runs in its own
process so the reader's figures are the reader's alone. A run that fails (pi's RPC mode dies
with ENOBUFS or runs out of heap on long replies) is reported as such, with its last words.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from wizard.engines.bundle import NodeBundle, ensure_bundle
from wizard.runner.harness.latch import StopLatch
from wizard.runner.harness.listener import RunListener
from wizard.runner.harness.pi.session import PROVIDER, models_json
from wizard.runner.harness.state import RunOutput
from wizard.testing.sessions import open_pi_session
from wizard.tools.child_env import child_env

MODEL = "scripted-1"
TIMEOUT_S = 240.0


@dataclass
class Measure:
    """One run of one boundary on one reply length."""

    boundary: str
    reply_chars: int
    outcome: str
    wall_s: float
    bytes_read: int
    lines_read: int
    engine_cpu_s: float
    engine_peak_mb: float
    reader_cpu_s: float
    reader_peak_mb: float


def _reply(chars: int) -> str:
    line = "The agent explains what it is about to change, at length. " * 2 + "\n"
    return (line * (chars // len(line) + 1))[:chars]


def _cause(stderr: str) -> str:
    """The line of a crashed pi's stderr that says why it died."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    telling = [line for line in lines if "Error" in line or "heap" in line or "ENOBUFS" in line]
    return ((telling or lines or ["(no stderr)"])[-1])[:120]


class Gateway:
    """The scripted gateway in a process of its own."""

    def __init__(self, scenario: dict[str, Any], folder: Path) -> None:
        self.file = folder / "scenario.json"
        self.file.write_text(json.dumps(scenario))
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        command = [sys.executable, "-m", "wizard.testing.gateway", "--scenario", str(self.file)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().split()
        assert ready and ready[0] == "READY", ready
        return ready[1]

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(10)


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks


def _proc_peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


class EngineProbe:
    """Samples an engine process's CPU and peak memory until it goes."""

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self.peak_mb = 0.0

    def sample(self, pid: int | None) -> None:
        if pid is None:
            return
        with contextlib.suppress(OSError, IndexError, ValueError):
            self.cpu_s = max(self.cpu_s, _proc_cpu_s(pid))
            self.peak_mb = max(self.peak_mb, _proc_peak_mb(pid))

    async def watch(self, pid: int | None) -> None:
        while True:
            self.sample(pid)
            await asyncio.sleep(0.05)


async def _measured(boundary: str, chars: int, body: Any) -> Measure:
    probe = EngineProbe()
    tracemalloc.start()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    outcome, bytes_read, lines_read = await body(probe)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return Measure(
        boundary, chars, outcome, round(wall, 2), bytes_read, lines_read,
        round(probe.cpu_s, 2), round(probe.peak_mb, 1), round(cpu, 2), round(peak / 2**20, 1),
    )  # fmt: skip


async def run_rpc(engine: NodeBundle, url: str, chars: int, folder: Path) -> Measure:
    """The old boundary: `pi --mode rpc`, every line read and parsed."""
    agent = folder / "agent-rpc"
    agent.mkdir()
    models = models_json("anthropic-messages", MODEL, url, "k")
    (agent / "models.json").write_text(json.dumps(models))
    (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))

    async def body(probe: EngineProbe) -> tuple[str, int, int]:
        process = await asyncio.create_subprocess_exec(
            str(engine.node), str(engine.cli), "--mode", "rpc", "--no-session", "--offline",
            "--no-extensions", "--no-skills", "--no-context-files", "--provider", PROVIDER,
            "--model", MODEL, cwd=folder, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=1 << 30,
            env={**child_env(), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"},
        )  # fmt: skip
        assert process.stdin and process.stdout and process.stderr
        watcher = asyncio.create_task(probe.watch(process.pid))
        process.stdin.write(b'{"type":"prompt","id":"p","message":"go"}\n')
        await process.stdin.drain()
        total = lines = 0
        outcome = "pi exited before agent_end"
        try:
            async with asyncio.timeout(TIMEOUT_S):
                while line := await process.stdout.readuntil(b"\n"):
                    total, lines = total + len(line), lines + 1
                    if json.loads(line).get("type") == "agent_end":
                        outcome = "finished"
                        break
        except asyncio.IncompleteReadError:
            stderr = (await process.stderr.read()).decode(errors="replace")
            outcome = "crashed: " + _cause(stderr)
        except TimeoutError:
            outcome = f"no agent_end within {TIMEOUT_S:.0f} s"
        watcher.cancel()
        probe.sample(process.pid)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        return outcome, total, lines

    return await _measured("pi --mode rpc", chars, body)


async def run_host(url: str, chars: int, folder: Path) -> Measure:
    """The boundary wizard uses: its pi host through `PiSession`."""
    project = folder / "project-host"
    project.mkdir()

    async def body(probe: EngineProbe) -> tuple[str, int, int]:
        async with open_pi_session(project, url, model=MODEL, stall_seconds=60) as session:
            watcher = asyncio.create_task(probe.watch(session.pid))
            session.subscribe(RunListener(StopLatch(), RunOutput(lambda event: None)))
            try:
                async with asyncio.timeout(TIMEOUT_S):
                    result = await session.prompt("go")
                outcome = "finished" if result.stop_reason == "stop" else result.stop_reason
            except Exception as exc:
                outcome = f"failed: {str(exc).splitlines()[0][:120]}"
            watcher.cancel()
            probe.sample(session.pid)
            return outcome, session.bytes_read, session.lines_read

    return await _measured("wizard pi host", chars, body)


async def main(lengths: list[int]) -> list[Measure]:
    engine = await asyncio.to_thread(ensure_bundle)
    results = []
    for chars in lengths:
        for boundary in ("host", "rpc"):
            scenario = {"responses": [{"blocks": [{"text": _reply(chars)}], "chunk_chars": 4}]}
            with tempfile.TemporaryDirectory() as tmp, Gateway(scenario, Path(tmp)) as url:
                folder = Path(tmp)
                if boundary == "host":
                    measure = await run_host(url, chars, folder)
                else:
                    measure = await run_rpc(engine, url, chars, folder)
            print(_row(measure), flush=True)
            results.append(measure)
    return results


HEADER = (
    "| boundary | reply chars | outcome | wall s | MB read | lines | engine CPU s "
    "| engine peak MB | reader CPU s | reader peak MB |\n|---|---|---|---|---|---|---|---|---|---|"
)


def _row(m: Measure) -> str:
    return (
        f"| {m.boundary} | {m.reply_chars:,} | {m.outcome} | {m.wall_s} | "
        f"{m.bytes_read / 1e6:.2f} | {m.lines_read:,} | {m.engine_cpu_s} | {m.engine_peak_mb} | "
        f"{m.reader_cpu_s} | {m.reader_peak_mb} |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="10000,50000,200000,400000")
    parser.add_argument("--json", help="also write the measures to this JSON file")
    args = parser.parse_args()
    print(HEADER, flush=True)
    measures = asyncio.run(main([int(n) for n in args.lengths.split(",")]))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps([asdict(m) for m in measures], indent=2))
