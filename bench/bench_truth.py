"""Benchmark: does "set up" tell the truth on real apps nobody here wrote?

Run: .venv/bin/python bench/bench_truth.py [CORPUS] [--apps A,B] [--no-deps]
                                           [--harness pi|anthropic|both]
                                           [--json bench/results/truth.json]

CORPUS is the folder of real apps (`../shared/corpus` by default; the suite runs a subset on
`tests/corpus`). For each app and the program that fits it, a scripted transcript does what an
agent would: a correct integration (of several shapes: the app's own send path or the client
it calls, PostHog's MCP wrapper or a hand-rolled capture, metadata built under a guard, a
customer tagged right after it is created, the documented snippet in a template), or a
sabotaged one: the key written into the code, the host hard-coded to the public cloud, the
capture or client never called, a call site missed, a syntax error, a run that did nothing,
and the records that fooled earlier proofs (a client recorded while the old sender stays, a
stub script or stub server recorded instead of the app, a capture sent at start-up, a
constant id, a field nothing sets, an init no page loads, goals never asked for). On the
apps no program fits, the run must end "not applicable" with nothing changed. Each transcript
is a real `wizard run` on a fresh copy: the real engine (pi, or Claude Code through the Agent
SDK) against the scripted gateway on 127.0.0.1, the sandbox, the journal, the checks and the
proofs. The bench prints the confusion matrix (what each run ended as, against what its
transcript deserves), every wrong verdict, and what each proof cost.

Runtime probes need the app's own dependencies: unless `--no-deps`, the bench installs them
once per app from the package registries (a virtualenv for a Python app, `npm install` for a
Node one) and copies them into each copy (`.venv`, `node_modules`); without them, a correct
integration ends "set up, not proven", truthfully. The TypeScript MCP server's transcripts
build it (`npm run build`) as an agent would, so its type check runs with real dependencies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truth_cases import CASES, Case

from wizard.signals import DEFAULT_GATEWAY_MARKER
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply, said

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
ENDED = ["proven", "set up, not proven", "unverified", "aborted", "not applicable", "failed",
         "no outcome"]  # fmt: skip
# What each kind of transcript may end as; anything else is a wrong verdict.
RIGHT = {
    "correct": {"proven", "set up, not proven"},
    "sabotaged": {"set up, not proven", "unverified", "aborted", "not applicable", "failed"},
    "does not fit": {"not applicable"},
}


@dataclass
class Result:
    case: Case
    harness: str
    ended: str
    exit_code: int
    seconds: float
    proofs: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    changed: list[str] = field(default_factory=list)

    @property
    def right(self) -> bool:
        fits = self.ended in RIGHT[self.case.deserves]
        # A run turned away must leave the project as it was.
        return fits and not (self.ended == "not applicable" and self.changed)


def _ended(outcome: dict[str, Any]) -> str:
    """What a run ended as, in the matrix's words."""
    status = outcome["status"]
    if status == "succeeded":
        proofs = (outcome.get("verification") or {}).get("proofs") or []
        if proofs and all(proof["status"] == "proven" for proof in proofs):
            return "proven"
        return "set up, not proven"
    return status.replace("_", " ")


def _deps(cache: Path, corpus: Path, case: Case) -> Path | None:
    """The app's dependencies, installed once: a virtualenv (`.venv`) for a Python app, the
    app's own `npm install` plus `case.deps` (`node_modules`) for a Node one; None if they
    cannot be installed."""
    node = (corpus / case.app / "package.json").is_file()
    folder = cache / case.app / ("node_modules" if node else ".venv")
    if (cache / case.app / "ready").exists():
        return folder
    shutil.rmtree(cache / case.app, ignore_errors=True)
    (cache / case.app).mkdir(parents=True)
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        if node:
            shutil.copy(corpus / case.app / "package.json", cache / case.app / "package.json")
            for command in (
                ["npm", "install", "--no-audit", "--no-fund"],
                ["npm", "install", "--no-audit", "--no-fund", *case.deps],
            ):
                subprocess.run(command, cwd=cache / case.app, check=True, capture_output=True,
                               timeout=600)  # fmt: skip
        else:
            subprocess.run([base, "-m", "venv", str(folder)], check=True, capture_output=True)
            subprocess.run([str(folder / "bin" / "pip"), "install", "-q", *case.deps],
                           check=True, capture_output=True, timeout=600)  # fmt: skip
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"  (could not install the dependencies of {case.app}: {exc})", file=sys.stderr)
        return None
    (cache / case.app / "ready").write_text("")
    return folder


def _for(harness: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls as the harness names them (Claude Code sees wizard's tools over MCP)."""
    if harness != "anthropic":
        return blocks
    return [{"tool_call": {**b["tool_call"], "name": f"mcp__wizard__{b['tool_call']['name']}"}}
            if "tool_call" in b else b for b in blocks]  # fmt: skip


async def run_case(
    case: Case, harness: str, corpus: Path, work: Path, cache: Path | None
) -> Result:
    slug = f"{case.app}-{case.program}-{case.name}-{harness}"
    project = work / "".join(c if c.isalnum() else "-" for c in slug)[:120]
    shutil.copytree(corpus / case.app, project, symlinks=True)
    if case.deps and cache is not None and (installed := _deps(cache, corpus, case)):
        subprocess.run(["cp", "-a", str(installed), str(project / installed.name)], check=True)
    if case.program == "transactional-email":
        (project / ".env").write_text("POSTHOG_EMAIL_API_KEY=phx_the_users_own_key\n")
    assert case.edit is not None
    # A run that did nothing still looks around first (one with no tool call at all
    # already ends failed).
    edits = case.edit(corpus / case.app) or [call("read", path="README.md")]
    responses = [reply(*_for(harness, edits)), said("Done."), said("-")]
    outcome_file = work / f"{project.name}.json"
    started = time.monotonic()
    async with ScriptedGateway({"responses": responses}) as gateway:
        env = {**os.environ, "WIZARD_GATEWAY_URL": gateway.url, "WIZARD_GATEWAY_KEY": "",
               "WIZARD_GATEWAY_API": "anthropic-messages", "WIZARD_SKILLS_DIR": "",
               "WIZARD_GATEWAY_REFUSAL_MARKER": DEFAULT_GATEWAY_MARKER}  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "wizard", "run", case.program, "--project", str(project),
            "--ci", "--harness", harness, *case.flags, "--outcome-json", str(outcome_file),
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await process.communicate()
    seconds = time.monotonic() - started
    if not outcome_file.exists():
        return Result(case, harness, "no outcome", process.returncode or -1, seconds,
                      reason=stderr.decode(errors="replace")[-500:])  # fmt: skip
    outcome = json.loads(outcome_file.read_text())
    proofs = (outcome.get("verification") or {}).get("proofs") or []
    return Result(case, harness, _ended(outcome), outcome["exit_code"], seconds, proofs,
                  outcome.get("reason") or "", outcome.get("changed_files") or [])  # fmt: skip


def matrix(results: list[Result]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter[str]] = {}
    for result in results:
        table.setdefault(result.case.deserves, Counter())[result.ended] += 1
    return {row: dict(counts) for row, counts in table.items()}


def _print(results: list[Result]) -> None:
    table = matrix(results)
    print("\ndeserves \\ ended  " + " | ".join(ENDED))
    for row in ("correct", "sabotaged", "does not fit"):
        if row in table:
            print(f"{row:17} " + " | ".join(f"{table[row].get(c, 0):>{len(c)}}" for c in ENDED))
    wrong = [r for r in results if not r.right]
    print(f"\nwrong verdicts: {len(wrong)} of {len(results)} runs")
    for result in wrong:
        print(f"  {result.harness}: {result.case.app} / {result.case.name}: deserves "
              f"{result.case.deserves}, ended {result.ended} ({result.reason[:200]})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--apps", help="only these apps (comma-separated)")
    parser.add_argument("--harness", choices=("pi", "anthropic", "both"), default="pi")
    parser.add_argument("--no-deps", action="store_true", help="install no dependencies")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "wizard-bench")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    apps = set(args.apps.split(",")) if args.apps else None
    cases = [c for c in CASES if (apps is None or c.app in apps) and (args.corpus / c.app).is_dir()]
    harnesses = ("pi", "anthropic") if args.harness == "both" else (args.harness,)
    work = Path(tempfile.mkdtemp(prefix="wizard-truth-", dir="/var/tmp"))
    cache = None if args.no_deps else args.cache
    results = []
    try:
        for case in cases:
            for harness in harnesses:
                result = asyncio.run(run_case(case, harness, args.corpus, work, cache))
                results.append(result)
                cost = ", ".join(f"{p['name']}: {p['status']} in {p['seconds']:.2f} s"
                                 for p in result.proofs) or "no proof ran"  # fmt: skip
                mark = "" if result.right else "  <-- WRONG"
                print(f"{harness:9} {case.app:29} {case.name:52} {case.deserves:12} "
                      f"ended {result.ended:18} ({result.seconds:.1f} s; {cost}){mark}",
                      flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _print(results)
    if args.json:
        args.json.write_text(json.dumps({
            "matrix": matrix(results), "wrong": sum(not r.right for r in results),
            "runs": [{"app": r.case.app, "program": r.case.program, "case": r.case.name,
                      "harness": r.harness, "deserves": r.case.deserves, "ended": r.ended,
                      "exit_code": r.exit_code, "seconds": round(r.seconds, 2),
                      "reason": r.reason, "proofs": r.proofs} for r in results],
        }, indent=2) + "\n")  # fmt: skip
    return 1 if any(not r.right for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
