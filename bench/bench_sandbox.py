"""Benchmark: what the OS sandbox costs each command the agent runs.

Run: .venv/bin/python bench/bench_sandbox.py [--runs 20] [--json FILE]
(the run in the README: `--json bench/results/sandbox.json`)

In one Node process, with the pinned sandbox runtime started once on a run's policy (as
wizard's pi host does), each command runs `--runs` times through `bash -c`, wrapped and
unwrapped in turn: `true`, `ls`, `npm --version`. Reported: the median and p90 wall time of
each, and the ratio of the medians. The project is a small folder with a `node_modules` of
2,000 files, since the runtime scans the project for `.env*` files at every wrap.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from wizard.engines.bundle import ensure_bundle
from wizard.tools.sandbox import build_policy

COMMANDS = ["true", "ls", "npm --version"]

DRIVER = r"""
import { pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";
const [entry, specFile, runs, cwd] = process.argv.slice(2);
const { readFileSync } = await import("node:fs");
const spec = JSON.parse(readFileSync(specFile, "utf8"));
const { SandboxManager } = await import(pathToFileURL(entry).href);
await SandboxManager.initialize(spec.config);
const commands = JSON.parse(process.env.COMMANDS);
const timing = {};
const time = (command) => {
  const start = process.hrtime.bigint();
  execFileSync("bash", ["-c", command], { cwd, stdio: "ignore" });
  return Number(process.hrtime.bigint() - start) / 1e6;
};
for (const command of commands) {
  timing[command] = { plain: [], sandboxed: [] };
  for (let i = 0; i < Number(runs); i++) {
    timing[command].plain.push(time(command));
    const start = process.hrtime.bigint(); // the wrap (a scan for .env files) counts too
    const wrapped = spec.prefix + (await SandboxManager.wrapWithSandbox(command));
    execFileSync("bash", ["-c", wrapped], { cwd, stdio: "ignore" });
    timing[command].sandboxed.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
}
await SandboxManager.reset();
console.log(JSON.stringify(timing));
"""


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": round(ordered[len(ordered) // 2], 1),
        "p90_ms": round(ordered[int(len(ordered) * 0.9) - 1], 1),
    }


def main(runs: int) -> dict[str, Any]:
    engine = ensure_bundle(print)
    with tempfile.TemporaryDirectory(prefix="wizard-bench-sandbox-") as temp:
        folder = Path(temp)
        project = folder / "project"
        for n in range(2000):
            package = project / "node_modules" / f"pkg{n // 20}"
            package.mkdir(parents=True, exist_ok=True)
            (package / f"file{n}.js").write_text("module.exports = 1;\n")
        (project / ".env").write_text("SECRET=1\n")
        policy = build_policy(project, folder / "tmp").reading(engine.prefix)  # as the host
        (folder / "tmp").mkdir()
        spec = folder / "spec.json"
        spec.write_text(json.dumps(policy.host_spec()))
        driver = folder / "driver.mjs"
        driver.write_text(DRIVER)
        out = subprocess.run(
            [str(engine.node), str(driver), str(engine.sandbox_entry), str(spec), str(runs),
             str(project)],
            capture_output=True, text=True, check=True,
            env={**os.environ, "COMMANDS": json.dumps(COMMANDS)},
        )  # fmt: skip
    timing = json.loads(out.stdout.strip().splitlines()[-1])
    results = {}
    for command, series in timing.items():
        plain, boxed = _stats(series["plain"]), _stats(series["sandboxed"])
        ratio = round(boxed["median_ms"] / plain["median_ms"], 1)
        results[command] = {"plain": plain, "sandboxed": boxed, "ratio_of_medians": ratio}
        extra = boxed["median_ms"] - plain["median_ms"]
        print(
            f"{command:16} plain {plain['median_ms']:7.1f} ms  sandboxed "
            f"{boxed['median_ms']:7.1f} ms  ×{ratio}  (+{extra:.0f} ms)"
        )
    return {"runs": runs, "commands": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    summary = main(args.runs)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
