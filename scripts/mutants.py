"""Hand-made semantic mutants of wizard's core, and whether the tests kill each one.

Each mutant replaces one snippet of one module (it must occur exactly once), runs the tests
that cover that module, and puts the file back, whatever happens. A mutant the tests do not
notice is a behaviour no test pins. Usage, from the checkout (tests must already pass):

    .venv/bin/python scripts/mutants.py [--only MODULE] [--json FILE]

Prints one line per mutant, then the kill rate per module. Not part of the test command: a
full pass runs the covering tests once per mutant.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "wizard"


@dataclass(frozen=True)
class Mutant:
    """One change to one module, and the tests that should notice it."""

    module: str
    name: str
    old: str
    new: str
    tests: tuple[str, ...]


LATCH = ("tests/harness/test_latch.py", "tests/runner/sequence/test_orchestrator.py")
DRIVER = ("tests/harness", "tests/runner/sequence", "tests/faults")
GATE = ("tests/harness", "tests/tools")
EXECUTOR = ("tests/runner/sequence",)
QUEUE = ("tests/runner/sequence",)
FENCE = ("tests/tools", "tests/harness/pi")
VERIFY = ("tests/runner", "tests/security/test_hostile_verification.py")
PROOFS = ("tests/runner/test_proofs_static.py", "tests/live/test_proofs_live.py")
BUDGET = ("tests/harness/test_budget.py", "tests/harness/test_usage.py", "tests/runner")

MUTANTS = [
    Mutant("runner/harness/latch.py", "armed ignores until()",
           "return self._armed and not self._until()", "return self._armed", LATCH),
    Mutant("runner/harness/driver.py", "proxy fault wins over a halt",
           "if self.proxy.fault is not None and not run.halt.is_set():",
           "if self.proxy.fault is not None:", DRIVER),
    Mutant("runner/harness/driver.py", "a cancelled latched run raises",
           "if (latched := endings.interrupted(run)) is None:", "if True:", DRIVER),
    Mutant("runner/harness/gate.py", "host-tool failure not logged",
           'log.exception("host tool %s failed", name)', "pass", GATE),
    Mutant("runner/sequence/orchestrator/executor.py", "retry ignores retryable",
           'if task.status == "failed" and task.retryable:', 'if task.status == "failed":',
           EXECUTOR),
    Mutant("runner/sequence/orchestrator/executor.py", "run enders not special",
           "    if result.error in _RUN_ENDERS:\n        error = TaskError(",
           "    if False:\n        error = TaskError(", EXECUTOR),
    Mutant("runner/sequence/orchestrator/executor.py", "max_parallel slice widened",
           "[: max(0, max_parallel - len(running))]",
           "[: max(0, max_parallel + 1 - len(running))]", EXECUTOR),
    Mutant("runner/sequence/orchestrator/executor.py", "stops of stopped runs dropped",
           "stops += await _stop_running(queue, running)", "await _stop_running(queue, running)",
           EXECUTOR),
    Mutant("runner/sequence/orchestrator/queue.py", "failed optional does not satisfy",
           'return task.status in ("done", "not needed") or (task.optional and task.status == '
           '"failed")', 'return task.status in ("done", "not needed")', QUEUE),
    Mutant("runner/sequence/orchestrator/queue.py", "carry over only done",
           'done = raw.get("status") in ("done", "not needed")',
           'done = raw.get("status") == "done"', QUEUE),
    Mutant("runner/sequence/orchestrator/sequence.py", "optional-failed plural",
           'plural = "s" if optional_failed != 1 else ""', 'plural = "s"', QUEUE),
    Mutant("tools/fence.py", "shrink guard >= as >",
           "if old >= SHRINK_GUARD_MIN_CHARS and", "if old > SHRINK_GUARD_MIN_CHARS and", FENCE),
    Mutant("tools/fence.py", "shrink guard < as <=",
           "and new < old * (1 - SHRINK_GUARD_LOSS):", "and new <= old * (1 - SHRINK_GUARD_LOSS):",
           FENCE),
    Mutant("tools/paths.py", "read size check skipped",
           "if refusal is None and info.st_size > max_bytes:", "if False:", FENCE),
    Mutant("tools/paths.py", "O_NONBLOCK dropped",
           "flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC",
           "flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC", FENCE),
    Mutant("runner/verification.py", "compare ignored on a failed check",
           "compared = [c.compare and not (c.needs_dependencies and dependencies_changed)",
           "compared = [not (c.needs_dependencies and dependencies_changed)", VERIFY),
    Mutant("runner/verification.py", "results kept from before the comparison",
           "results = await _before_the_run(", "await _before_the_run(", VERIFY),
    Mutant("runner/verification.py", "all-skipped branch gone",
           '    elif all(result.status == "skipped" for result in results):\n'
           '        status = "skipped"  # nothing could be checked\n', "", VERIFY),
    Mutant("runner/verification.py", "status gate gone",
           '    if outcome.status != "succeeded":\n        return outcome\n', "", VERIFY),
    Mutant("runner/verification.py", "a program check compared on the tree before",
           'if result.status == "failed" and compare:', 'if result.status == "failed":',
           VERIFY),
    Mutant("runner/checks.py", "a program command check compared",
           "return Check(check.name, check.value, compare=False)",
           "return Check(check.name, check.value)", VERIFY),
    Mutant("runner/harness/usage.py", "cost budget >= as >",
           "if spent >= budget.max_cost:", "if spent > budget.max_cost:", BUDGET),
    Mutant("runner/harness/usage.py", "turn budget >= as >",
           "if budget.max_turns is not None and turns >= budget.max_turns:",
           "if budget.max_turns is not None and turns > budget.max_turns:", BUDGET),
    Mutant("runner/harness/usage.py", "in-flight count ignored",
           "        if self._in_flight == 0:\n            self._since = time.monotonic()\n",
           "        self._since = time.monotonic()\n", BUDGET),
    Mutant("runner/harness/usage.py", "unknown cost ignored",
           "            if any(cost is None for cost in costs):\n"
           "                return None  # no price for this model: a cost budget cannot be kept\n",
           "", BUDGET),
    Mutant("runner/proofs/static.py", "a call without the key passes",
           "has_key = mapping is not None and proof.key in _entries(mapping)",
           "has_key = mapping is not None", PROOFS),
    Mutant("runner/proofs/static.py", "no call site proves it",
           "    if not passing:\n", "    if False:\n", PROOFS),
    Mutant("runner/proofs/send.py", "the key is not asked for",
           'if key not in hit.header("authorization") and key not in hit.header("x-api-key"):',
           "if False:", PROOFS),
    Mutant("runner/proofs/send.py", "two requests are one send",
           "    if len(hits) > 1:\n", "    if len(hits) > 2:\n", PROOFS),
    Mutant("runner/proofs/mcp.py", "any request to the sink is a capture",
           "return [r for r in received if tool.encode() in _body(r) and key.encode() in _body(r)]",
           "return list(received)", PROOFS),
    Mutant("runner/verification.py", "a failed proof does not fail the run",
           "    if result.failures or result.failed_proofs:\n", "    if result.failures:\n",
           VERIFY),
    Mutant("runner/verification.py", "a run that changed nothing is set up",
           "    if not app_changed and not any(proof.status == \"proven\" for proof in "
           "result.proofs):\n", "    if False:\n", VERIFY),
    Mutant("runner/verification.py", "could not compare excuses",
           'result = replace(result, before="skipped" if ran_after and not ran_before else status)',
           "result = replace(result, before=status)", VERIFY),
]  # fmt: skip


def run_one(mutant: Mutant, python: str) -> dict[str, object]:
    """Apply `mutant`, run its tests, restore the module; whether the tests killed it."""
    path = SRC / mutant.module
    original = path.read_text()
    if original.count(mutant.old) != 1:
        return {**asdict(mutant), "result": "stale (snippet not found once)"}
    started = time.monotonic()
    try:
        path.write_text(original.replace(mutant.old, mutant.new))
        done = subprocess.run(
            [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--timeout", "120",
             *mutant.tests],
            cwd=ROOT, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
    finally:
        path.write_text(original)
    result = "killed" if done.returncode != 0 else "survived"
    return {**asdict(mutant), "result": result, "seconds": round(time.monotonic() - started, 1)}


def main() -> None:
    """Run every mutant (or those of one module) and print the kill rate per module."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="only the mutants of modules whose path contains this")
    parser.add_argument("--json", type=Path, help="write every result here")
    options = parser.parse_args()
    chosen = [m for m in MUTANTS if not options.only or options.only in m.module]
    results = []
    for mutant in chosen:
        outcome = run_one(mutant, sys.executable)
        results.append(outcome)
        print(f"{outcome['result']:9} {mutant.module}: {mutant.name}", flush=True)
    by_module: dict[str, list[bool]] = {}
    for outcome in results:
        by_module.setdefault(str(outcome["module"]), []).append(outcome["result"] == "killed")
    print()
    for module, kills in by_module.items():
        print(f"{sum(kills)}/{len(kills)} killed  {module}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
