"""Benchmark: what a stop costs, what wizard adds to pi, start-up, CPU and memory over a run.

Run: .venv/bin/python bench/bench_runs.py [--stops 20] [--json bench/results/runs.json]
     [--sections stop_cost,harness_overhead,startup,cpu,memory]

All on the real pinned pi against the scripted gateway on 127.0.0.1, side by side in one run:

1. Stop cost, both APIs, `--stops` runs each: a reply streams in 23-character frames (5 ms
   apart) and one frame holds the marker's whole line `[ABORT] no stripe here`. Measured:
   model requests after the marker, characters streamed after the marker's frame, the time
   from that frame leaving the gateway to the stream ending (the cut) and to the harness
   returning, median and p90. The floor: pi's own abort, sent through `PiSession.abort()` the
   moment the same frame arrives, on the same reply without a marker.
2. Harness overhead: a 21-request scripted success (19 `read` calls, an answer, the remark)
   through wizard's pi harness against raw `pi --mode rpc` driven by a minimal client on the
   same script; interleaved, 5 each; the ratio of the medians.
3. Start-up: `wizard --help` and `python -c "import wizard"`, median of 10.
4. Engine CPU per 10,000 text deltas, at 50,000 and 400,000 characters (does it grow?).
5. Peak memory over 2,000 turns (prompt, one-line reply) on one pi session: pi's host and the
   reading Python process, after 200 turns and after 2,000 (the gateway runs in a process of
   its own here: it keeps every request, and each holds the whole conversation so far).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_pi_boundary import EngineProbe, Gateway

from wizard.engines.bundle import ensure_bundle
from wizard.events import EventRecorder
from wizard.runner.harness.latch import StopLatch
from wizard.runner.harness.listener import RunListener
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.pi.session import PiSession
from wizard.runner.harness.state import RunOutput
from wizard.runner.harness.types import GatewayApi, GatewaySettings, RunInputs
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.sessions import open_pi_session

LINE = "[ABORT] no stripe here\n"  # 23 characters: one frame
WATCH = LINE.strip()
FILLER = "Checking the project now.\n"[: len(LINE) - 1] + "\n"


def _reply(marker: bool) -> dict[str, Any]:
    text = FILLER * 40 + (LINE if marker else FILLER) + FILLER * 4000
    return {"blocks": [{"text": text}], "chunk_chars": len(LINE), "delay_ms": 5}


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median": round(statistics.median(ordered), 4), "p90": round(p90, 4)}


def _inputs(project: Path, url: str, api: GatewayApi) -> RunInputs:
    gateway = GatewaySettings(url=url, api=api, retries=0)
    return RunInputs(project, "go", "scripted-1", gateway, sink=EventRecorder())


async def stop_once(api: GatewayApi, folder: Path) -> dict[str, float]:
    scenario = {"responses": [_reply(True), {"blocks": [{"text": "never"}]}]}
    async with ScriptedGateway(scenario, watch=WATCH) as gateway:
        result = await PiHarness().run(_inputs(folder, gateway.url, api))
        returned = time.monotonic()
    assert result.message == "no stripe here", result
    return stop_figures(gateway, returned)


def stop_figures(gateway: ScriptedGateway, returned: float) -> dict[str, float]:
    """What a stop cost, from the gateway's record of the first request and the return time."""
    first = gateway.requests[0]
    assert first.watch_at is not None and first.ended_at is not None
    return {
        "requests_after": len(gateway.requests) - 1,
        "chars_after": first.chars_after_watch,
        "cut_s": first.ended_at - first.watch_at,
        "return_s": returned - first.watch_at,
    }


async def floor_once(api: GatewayApi, folder: Path) -> dict[str, float]:
    """pi's own abort, sent when the frame that would hold the marker arrives."""
    async with ScriptedGateway({"responses": [_reply(False)]}) as gateway:
        async with open_pi_session(folder, gateway.url, api=api) as session:
            streamed: list[str] = []
            aborted = asyncio.Event()
            sent_at = 0.0

            def on_event(event: dict[str, Any]) -> None:
                nonlocal sent_at
                if event.get("type") == "text_delta":
                    streamed.append(str(event["delta"]))
                    if len(streamed) == 41 and not aborted.is_set():
                        sent_at = time.monotonic()
                        aborted.set()

            session.subscribe(on_event)
            prompt = asyncio.ensure_future(session.prompt("go"))
            await aborted.wait()
            await session.abort()
            await prompt
            returned = time.monotonic()
        record = gateway.requests[0]
    assert record.ended_at is not None
    return {"cut_s": record.ended_at - sent_at, "return_s": returned - sent_at}


async def stop_costs(stops: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for api in ("anthropic-messages", "openai-completions"):
        runs, floors = [], []
        for _ in range(stops):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(await stop_once(api, Path(tmp)))  # type: ignore[arg-type]
            with tempfile.TemporaryDirectory() as tmp:
                floors.append(await floor_once(api, Path(tmp)))  # type: ignore[arg-type]
        out[api] = {
            "runs": stops,
            "requests_after_marker": max(r["requests_after"] for r in runs),
            "chars_after_marker": _quantiles([r["chars_after"] for r in runs]),
            "marker_to_cut_s": _quantiles([r["cut_s"] for r in runs]),
            "marker_to_return_s": _quantiles([r["return_s"] for r in runs]),
            "pi_abort_floor_cut_s": _quantiles([f["cut_s"] for f in floors]),
            "pi_abort_floor_return_s": _quantiles([f["return_s"] for f in floors]),
        }
    return out


def _twenty_turns() -> list[dict[str, Any]]:
    read = {"blocks": [{"tool_call": {"name": "read", "arguments": {"path": "app.py"}}}]}
    return [read] * 19 + [{"blocks": [{"text": "Done."}]}, {"blocks": [{"text": "remark"}]}]


async def wizard_turns(folder: Path) -> float:
    (folder / "app.py").write_text("print('hi')\n")
    async with ScriptedGateway({"responses": _twenty_turns()}) as gateway:
        started = time.perf_counter()
        result = await PiHarness().run(_inputs(folder, gateway.url, "anthropic-messages"))
        elapsed = time.perf_counter() - started
    assert result.ok, result
    return elapsed


async def raw_turns(folder: Path) -> float:
    """The same script on `pi --mode rpc`, two prompts (the work, then the remark)."""
    (folder / "app.py").write_text("print('hi')\n")
    engine = ensure_bundle()
    async with ScriptedGateway({"responses": _twenty_turns()}) as gateway:
        agent = folder / "agent"
        agent.mkdir()
        models = {"providers": {"p": {"baseUrl": gateway.url, "api": "anthropic-messages",
                  "apiKey": "k", "models": [{"id": "m"}]}}}  # fmt: skip
        (agent / "models.json").write_text(json.dumps(models))
        (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            str(engine.node), str(engine.cli), "--mode", "rpc", "--no-session", "--offline",
            "--no-extensions", "--no-skills", "--no-context-files", "--provider", "p",
            "--model", "m", cwd=folder, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, limit=1 << 30,
            env={"PATH": "/usr/bin:/bin", "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
                 "HOME": str(folder)},
        )  # fmt: skip
        assert process.stdin and process.stdout
        for text in ("go", "remark please"):
            process.stdin.write(json.dumps({"type": "prompt", "message": text}).encode() + b"\n")
            await process.stdin.drain()
            while json.loads(await process.stdout.readuntil(b"\n")).get("type") != "agent_end":
                pass
        elapsed = time.perf_counter() - started
        process.stdin.close()
        await process.wait()
        assert len(gateway.requests) == 21
    return elapsed


async def overhead(rounds: int = 5) -> dict[str, Any]:
    wizard, raw = [], []
    for _ in range(rounds):
        for runs, body in ((wizard, wizard_turns), (raw, raw_turns)):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(await body(Path(tmp)))
    return {
        "wizard_s": _quantiles(wizard),
        "raw_pi_rpc_s": _quantiles(raw),
        "ratio_of_medians": round(statistics.median(wizard) / statistics.median(raw), 3),
    }


def startup(repeats: int = 10) -> dict[str, Any]:
    def timed(command: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        return time.perf_counter() - started

    wizard = str(Path(sys.executable).with_name("wizard"))
    return {
        "wizard_help_s": _quantiles([timed([wizard, "--help"]) for _ in range(repeats)]),
        "import_wizard_s": _quantiles(
            [timed([sys.executable, "-c", "import wizard"]) for _ in range(repeats)]
        ),
    }


async def _session(folder: Path, url: str, body: Callable[[PiSession], Awaitable[None]]) -> float:
    """Run `body` on a fresh session; the host's peak memory in MB."""
    async with open_pi_session(folder, url) as session:
        probe = EngineProbe()
        watcher = asyncio.create_task(probe.watch(session.pid))
        session.subscribe(RunListener(StopLatch(), RunOutput(lambda event: None)))
        try:
            await body(session)
        finally:
            watcher.cancel()
            probe.sample(session.pid)
    return probe.peak_mb


async def _cpu_of_one_reply(chars: int) -> float:
    """The engine's CPU seconds for one reply of `chars` characters in 4-character deltas."""
    text = "x" * (chars - 1) + "\n"
    scenario = {"responses": [{"blocks": [{"text": text}], "chunk_chars": 4}]}
    used: list[float] = []

    async def body(session: PiSession) -> None:
        probe = EngineProbe()
        probe.sample(session.pid)
        before = probe.cpu_s
        await session.prompt("go")
        probe.sample(session.pid)
        used.append(probe.cpu_s - before)

    with tempfile.TemporaryDirectory() as tmp, Gateway(scenario, Path(tmp)) as url:
        await _session(Path(tmp), url, body)
    return used[0]


async def cpu_per_deltas() -> dict[str, Any]:
    out = {}
    for chars in (50_000, 400_000):
        out[f"{chars}_chars"] = round(await _cpu_of_one_reply(chars) / (chars / 4) * 10_000, 3)
    return {"engine_cpu_s_per_10k_deltas": out}


async def memory_over_turns(turns: int = 2_000) -> dict[str, Any]:
    scenario = {"responses": [{"blocks": [{"text": f"ok {n}"}]} for n in range(turns)]}
    marks: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, Gateway(scenario, Path(tmp)) as url:

        async def body(session: PiSession) -> None:
            tracemalloc.start()
            probe = EngineProbe()
            for n in range(1, turns + 1):
                await session.prompt(f"turn {n}")
                if n in (200, turns):
                    probe.sample(session.pid)
                    marks[f"after_{n}_turns"] = {
                        "pi_host_peak_mb": round(probe.peak_mb, 1),
                        "reader_peak_mb": round(tracemalloc.get_traced_memory()[1] / 2**20, 2),
                    }
            tracemalloc.stop()

        await _session(Path(tmp), url, body)
    return marks


SECTIONS = ("stop_cost", "harness_overhead", "startup", "cpu", "memory")


async def main(stops: int, sections: tuple[str, ...] = SECTIONS) -> dict[str, Any]:
    measures: dict[str, Callable[[], Awaitable[Any]]] = {
        "stop_cost": lambda: stop_costs(stops),
        "harness_overhead": overhead,
        "startup": lambda: asyncio.to_thread(startup),
        "cpu": cpu_per_deltas,
        "memory": memory_over_turns,
    }
    results: dict[str, Any] = {}
    for section in sections:
        results[section] = await measures[section]()
        print(json.dumps({section: results[section]}, indent=1), flush=True)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stops", type=int, default=20)
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help="which measures, comma-separated"
    )
    args = parser.parse_args()
    results = asyncio.run(main(args.stops, tuple(args.sections.split(","))))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2))
