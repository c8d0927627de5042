"""The truth benchmark's subset in the suite: real `wizard run`s on real apps (tests/corpus)
with scripted transcripts: correct integrations of several shapes, sabotaged ones (a call
missed, a constant id, a field nothing sets, an init no page loads...), and programs that do
not fit. Not one may end in the wrong verdict: "proven" only when its transcript deserves it,
a correct one never unverified, one that does not fit "not applicable"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.testing.cli import wizard_env

pytestmark = pytest.mark.live

ROOT = Path(__file__).parents[2]


def test_the_truth_bench_on_real_apps_gives_every_run_its_right_verdict(tmp_path: Path) -> None:
    out = tmp_path / "truth.json"
    apps = "stripe-checkout-node,todomvc-javascript-es5"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_truth.py"), str(ROOT / "tests" / "corpus"),
         "--apps", apps, "--no-deps", "--json", str(out)],
        capture_output=True, text=True, env=wizard_env(tmp_path), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["wrong"] == 0
    ended = {(run["app"], run["case"]): run["ended"] for run in report["runs"]}
    node, todomvc = "stripe-checkout-node", "todomvc-javascript-es5"
    assert ended == {
        (node, "correct: the request's distinct id"): "proven",
        (node, "correct: metadata built under a guard"): "proven",
        (node, "correct: a customer tagged right after it is created"): "proven",
        (node, "a call site missed"): "unverified",
        (node, "a constant id"): "unverified",
        (node, "a field nothing sets"): "unverified",
        (node, "syntax error"): "unverified",
        (node, "did nothing"): "unverified",
        (node, "no MCP server (does not fit)"): "not applicable",
        (todomvc, "correct: init in a script the page loads"): "proven",
        (todomvc, "init in a file no page loads"): "unverified",
        (todomvc, "no Stripe (does not fit)"): "not applicable",
    }
    assert report["matrix"] == {"correct": {"proven": 4}, "sabotaged": {"unverified": 6},
                                "does not fit": {"not applicable": 2}}  # fmt: skip
    reasons = {run["case"]: run["reason"] for run in report["runs"] if run["app"] == node}
    assert "posthog_person_distinct_id is the constant 'anonymous'" in reasons["a constant id"]
    assert ("req.user.posthogId, a field nothing in the app sets"
            in reasons["a field nothing sets"])  # fmt: skip
