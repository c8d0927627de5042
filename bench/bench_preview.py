"""Benchmark: what `--preview` adds to a run's start-up, and to the whole run.

Run: .venv/bin/python bench/bench_preview.py [--runs 5] [--json bench/results/preview.json]

`wizard run transactional-email --ci` as a user runs it (a subprocess, the real pinned pi, the
OS sandbox), against the scripted gateway on 127.0.0.1 with a script that ends the run at once
(one `read`, "Done.", the remark). A normal run and a preview run in turn on the same project, the
ratio taken pair by pair after one warm-up of each (the journal's stat cache is warm, as on a
user's second run). Measured from the subprocess's start: to the first model request (the
start-up: the snapshot and, for a preview, the copy), and to its exit (the whole run: the
closing snapshot, which for a preview hashes the copy afresh, and the checks).

Projects: `small` (20 files), `20k-node` (2,000 app files and 18,000 in `node_modules`, which a
preview shows read-only rather than copying) and `20k-app` (20,000 app files: every one
copied, the worst case).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wizard.testing.cli import wizard_env
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply, said

# One tool call (a run without one is "no progress"), then the end.
READ = call("read", path=".claude/skills/transactional-email/SKILL.md")
SCRIPT = {"responses": [reply(READ), said("Done."), said("[WIZARD-REMARK] -")]}


def build(root: Path, app_files: int, dependency_files: int) -> Path:
    """A project of `app_files` source files (40 per folder) and a `node_modules` of
    `dependency_files` (20 per package)."""
    project = root / "project"
    for index in range(app_files):
        folder = project / "src" / f"mod{index // 40}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{index}.py").write_text(f"VALUE_{index} = {index}\n" * 20)
    for index in range(dependency_files):
        folder = project / "node_modules" / f"pkg{index // 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}.js").write_text(f"module.exports = {index};\n" * 20)
    (project / "package.json").write_text('{"name": "bench", "version": "1.0.0"}\n')
    return project


async def one_run(project: Path, env: dict[str, str], preview: bool) -> tuple[float, float]:
    """Seconds from the start of `wizard run` to its first model request, and to its exit."""
    async with ScriptedGateway(SCRIPT) as gateway:
        argv = [sys.executable, "-m", "wizard", "run", "transactional-email", "--project",
                str(project), "--ci", *(["--preview"] if preview else [])]  # fmt: skip
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            *argv,
            env={**env, "WIZARD_GATEWAY_URL": gateway.url},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        first = None
        while process.returncode is None:
            if first is None and gateway.requests:
                first = time.perf_counter() - started
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.wait()), 0.001)
        total = time.perf_counter() - started
        if process.returncode != 0:
            assert process.stderr is not None
            raise RuntimeError((await process.stderr.read()).decode()[-2000:])
        assert first is not None
    return first, total


async def measure(project: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """Normal and preview runs in turn; medians and the pairwise ratios' median."""
    await one_run(project, env, False)  # warm-ups: the engine, the journal's stat cache
    await one_run(project, env, True)
    normal: list[tuple[float, float]] = []
    preview: list[tuple[float, float]] = []
    for _ in range(runs):
        normal.append(await one_run(project, env, False))
        preview.append(await one_run(project, env, True))
    result: dict[str, Any] = {}
    for index, name in ((0, "to_first_request"), (1, "whole_run")):
        ratios = [p[index] / n[index] for n, p in zip(normal, preview, strict=True)]
        result[name] = {
            "normal_s": round(statistics.median(n[index] for n in normal), 3),
            "preview_s": round(statistics.median(p[index] for p in preview), 3),
            "ratio_median": round(statistics.median(ratios), 2),
            "ratio_min_max": [round(min(ratios), 2), round(max(ratios), 2)],
        }
    return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = {"small": (20, 0), "20k-node": (2_000, 18_000), "20k-app": (20_000, 0)}
    results: dict[str, Any] = {"runs": args.runs, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="wizard-bench-preview-") as base:
        env = wizard_env(Path(base), WIZARD_STATE_DIR=str(Path(base) / "state"))
        for name, (app, deps) in sizes.items():
            project = build(Path(base) / name, app, deps)
            results[name] = await measure(project, env, args.runs)
            print(name, json.dumps(results[name]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
