"""Benchmark: what the OS sandbox costs each command the agent runs.

Run: .venv/bin/python bench/bench_sandbox.py [--runs 20] [--json FILE]
(the run in the README: `--json bench/results/sandbox.json`)

In one Node process, with the pinned sandbox runtime started once on a run's policy (as
wizard's pi host does), each command runs `--runs` times through `bash -c` in turn: plain,
in a sandbox wrapped for it then, and in the sandbox made ahead for it and kept
(`sandbox_ahead.mjs`, as the pi host runs commands: made while the model thinks, or kept from
the command before, so only the check that nothing it saw changed, the hand-over and the
command count; the runtime starts its seccomp helper through wizard's launcher, as in a run).
Commands: `true`, `ls`, `npm --version`.
Reported: the median and p90 wall time of each, and the ratio of the medians to plain. The
project is a small folder with a `node_modules` of 2,000 files, since the runtime scans the
project for `.env*` files at every wrap and the hand-over looks at every folder.
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
AHEAD = Path(__file__).parents[1] / "src" / "wizard" / "tools" / "sandbox_ahead.mjs"

DRIVER = r"""
import { pathToFileURL } from "node:url";
import { spawn } from "node:child_process";
const [entry, specFile, runs, cwd, aheadModule, own] = process.argv.slice(2);
const { readFileSync } = await import("node:fs");
const spec = JSON.parse(readFileSync(specFile, "utf8"));
const { SandboxManager } = await import(pathToFileURL(entry).href);
const ahead = await import(pathToFileURL(aheadModule).href);
await SandboxManager.initialize(await ahead.keepingConfig(spec.config, own, entry));
process.chdir(cwd);
const env = { ...process.env, ...spec.env };
const made = new ahead.SandboxAhead({
  sandbox: SandboxManager, shell: { shell: "/bin/bash", args: ["-c"] }, prefix: spec.prefix,
  cwd, roots: ahead.watchedRoots(spec.config, cwd), env,
});
const commands = JSON.parse(process.env.COMMANDS);
const timing = {};
// As pi's shell runs a line: a process of its own, waited for without blocking.
const exec = (line) => new Promise((resolve) => {
  const options = { cwd, env, stdio: "ignore", detached: true };
  spawn("/bin/bash", ["-c", line], options).on("close", resolve);
});
const since = (start) => Number(process.hrtime.bigint() - start) / 1e6;
for (const command of commands) {
  timing[command] = { plain: [], sandboxed: [], ahead: [] };
  for (let i = 0; i < Number(runs); i++) {
    const plain = process.hrtime.bigint();
    await exec(command);
    timing[command].plain.push(since(plain));
    const start = process.hrtime.bigint(); // the wrap (a scan for .env files) counts too
    await exec(spec.prefix + (await SandboxManager.wrapWithSandbox(command)));
    timing[command].sandboxed.push(since(start));
    SandboxManager.cleanupAfterCommand();
    made.prepare();
    await made.current.ready; // made while the model thinks
    const handed = process.hrtime.bigint();
    const prepared = await made.take(cwd, env, command);
    if (!prepared) throw new Error("the sandbox made ahead was not taken");
    await prepared.run(command, cwd, { onData: () => {}, timeout: 0 });
    timing[command].ahead.push(since(handed)); // its clean-up is its own, when it goes
  }
}
await made.discard(); // the sandbox kept after the last command
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
        own = folder / "own"  # the run's private folder, closed to commands
        own.mkdir()
        policy = build_policy(project, folder / "tmp").reading(engine.prefix).denying(own)
        (folder / "tmp").mkdir()
        spec = folder / "spec.json"
        spec.write_text(json.dumps(policy.host_spec()))
        driver = folder / "driver.mjs"
        driver.write_text(DRIVER)
        out = subprocess.run(
            [str(engine.node), str(driver), str(engine.sandbox_entry), str(spec), str(runs),
             str(project), str(AHEAD), str(own)],
            capture_output=True, text=True, check=True,
            env={**os.environ, "COMMANDS": json.dumps(COMMANDS)},
        )  # fmt: skip
    timing = json.loads(out.stdout.strip().splitlines()[-1])
    results = {}
    for command, series in timing.items():
        plain = _stats(series["plain"])
        results[command] = {"plain": plain}
        shown = f"{command:16} plain {plain['median_ms']:7.1f} ms"
        for kind in ("sandboxed", "ahead"):
            figures = _stats(series[kind])
            ratio = round(figures["median_ms"] / plain["median_ms"], 1)
            extra = figures["median_ms"] - plain["median_ms"]
            results[command][kind] = {**figures, "ratio_of_medians": ratio}
            shown += f"  {kind} {figures['median_ms']:7.1f} ms ×{ratio} (+{extra:.0f} ms)"
        print(shown)
    return {"runs": runs, "commands": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    summary = main(args.runs)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
