"""Benchmark: how close the orchestrator's drain comes to its graph's critical path.

Run: .venv/bin/python bench/bench_orchestrator.py [--runs 3] [--json FILE]
(the run in the README: `--json bench/results/orchestrator.json`)

An 8-task graph on the real pinned pi, one pi process per task, against the scripted gateway
(a process of its own on 127.0.0.1) with 200 ms of latency before every model answer. Each
task makes two model calls (a `write`, then `complete_task`).

    a ─┬─ b ─┬─ e ─┬─ g ── h
       ├─ c ─┘     │
       └─ d ── f ──┘

For each run, from the queue file's own start and finish times: the critical path (the
longest chain of measured task durations through the graph) and the drain's wall time (first
task start to last task finish). Their ratio is what scheduling costs beyond the graph
itself; the goal is ≤ 1.15. The same graph with `--max-parallel 1` runs beside it, in the
same process, for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_pi_boundary import Gateway

from wizard.engines.bundle import ensure_bundle
from wizard.events import EventRecorder
from wizard.programs import get_program
from wizard.programs.types import GENERIC_ORCHESTRATION
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewaySettings
from wizard.runner.sequence.context import RunContext
from wizard.runner.sequence.orchestrator.prompts import SEED_LINE
from wizard.runner.sequence.orchestrator.sequence import queue_path, run_orchestrator
from wizard.runner.switchboard import Binding
from wizard.skills.sources import BundledSkills

GRAPH: dict[str, list[str]] = {
    "a": [],
    "b": ["a"],
    "c": ["a"],
    "d": ["a"],
    "e": ["b", "c"],
    "f": ["d"],
    "g": ["e", "f"],
    "h": ["g"],
}
LATENCY_MS = 200


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def scenario() -> dict[str, Any]:
    """The seed plans GRAPH; each task writes its file, then reports."""
    enqueued = [
        _call("enqueue_task", type="change", label=f"Step {t}", id=t, depends_on=deps)
        for t, deps in GRAPH.items()
    ]
    conversations = [
        {
            "match": SEED_LINE,
            "responses": [{"blocks": enqueued}, {"blocks": [{"text": "Planned."}]}],
        }
    ]
    for task_id in GRAPH:
        done = _call("complete_task", status="done", summary=f"wrote {task_id}.txt")
        conversations.append(
            {
                "match": f"# Task {task_id}:",
                "responses": [
                    {
                        "blocks": [_call("write", path=f"{task_id}.txt", content=task_id)],
                        "latency_ms": LATENCY_MS,
                    },
                    {"blocks": [done], "latency_ms": LATENCY_MS},
                ],
            }
        )
    return {"conversations": conversations}


def critical_path(durations: dict[str, float]) -> float:
    """The longest chain of task durations through GRAPH."""
    finish: dict[str, float] = {}
    for task_id, deps in GRAPH.items():  # GRAPH is in dependency order
        finish[task_id] = max((finish[d] for d in deps), default=0.0) + durations[task_id]
    return max(finish.values())


async def one_run(url: str, folder: Path, run_id: str, max_parallel: int) -> dict[str, float]:
    project = folder / run_id
    project.mkdir()
    program = replace(get_program("revenue-analytics"), orchestration=GENERIC_ORCHESTRATION)
    ctx = RunContext(
        program=program,
        project_dir=project,
        binding=Binding("orchestrator", "pi", "scripted-1"),
        gateway=GatewaySettings(url=url, retries=0),
        skills=BundledSkills(),
        sink=EventRecorder(),
        run_id=run_id,
        max_parallel=max_parallel,
    )
    outcome = await run_orchestrator(ctx, PiHarness())
    assert outcome.status == "succeeded", outcome
    tasks = json.loads(queue_path(run_id).read_text())["tasks"]
    durations = {t["id"]: t["finished_at"] - t["started_at"] for t in tasks}
    wall = max(t["finished_at"] for t in tasks) - min(t["started_at"] for t in tasks)
    path = critical_path(durations)
    return {
        "wall_s": wall,
        "critical_path_s": path,
        "ratio": wall / path,
        "mean_task_s": statistics.mean(durations.values()),
    }


async def main(runs: int) -> dict[str, Any]:
    ensure_bundle(print)
    results: dict[str, list[dict[str, float]]] = {"parallel_3": [], "parallel_1": []}
    with tempfile.TemporaryDirectory(prefix="wizard-bench-orch-") as temp:
        folder = Path(temp)
        for n in range(runs):  # interleaved, so both see the same machine
            for name, limit in (("parallel_3", 3), ("parallel_1", 1)):
                with Gateway(scenario(), folder) as url:
                    result = await one_run(url, folder, f"bench-{name}-{n}", limit)
                results[name].append(result)
                print(name, {k: round(v, 3) for k, v in result.items()}, flush=True)

    def median(name: str, key: str) -> float:
        return round(statistics.median(r[key] for r in results[name]), 3)

    summary = {
        "graph": GRAPH,
        "latency_ms_per_model_call": LATENCY_MS,
        "runs": runs,
        "median_ratio_wall_over_critical_path": median("parallel_3", "ratio"),
        "median_wall_s": median("parallel_3", "wall_s"),
        "median_critical_path_s": median("parallel_3", "critical_path_s"),
        "median_mean_task_s": median("parallel_3", "mean_task_s"),
        "median_wall_s_max_parallel_1": median("parallel_1", "wall_s"),
        "raw": results,
    }
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    summary = asyncio.run(main(args.runs))
    print(json.dumps({k: v for k, v in summary.items() if k != "raw"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
