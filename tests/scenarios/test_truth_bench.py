"""The truth benchmark's subset in the suite: real `wizard run`s on real apps (tests/corpus)
with scripted transcripts, the correct integration, sabotaged ones, and an app no program
fits. Not one may end "proven" unless its transcript deserves it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.testing.cli import wizard_env

pytestmark = pytest.mark.live

ROOT = Path(__file__).parents[2]


def test_the_truth_bench_on_real_apps_proves_only_the_correct_integration(
    tmp_path: Path,
) -> None:
    out = tmp_path / "truth.json"
    apps = "stripe-checkout-node,todomvc-javascript-es5"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_truth.py"), str(ROOT / "tests" / "corpus"),
         "--apps", apps, "--no-deps", "--json", str(out)],
        capture_output=True, text=True, env=wizard_env(tmp_path), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["false_proven"] == 0
    ended = {(run["app"], run["case"]): run["ended"] for run in report["runs"]}
    assert ended == {
        ("stripe-checkout-node", "correct"): "proven",
        ("stripe-checkout-node", "a call site missed"): "unverified",
        ("stripe-checkout-node", "syntax error"): "unverified",
        ("stripe-checkout-node", "did nothing"): "unverified",
        ("todomvc-javascript-es5", "no program fits"): "aborted",
    }
    assert report["matrix"] == {"proven": {"proven": 1}, "not proven": {"unverified": 3},
                                "aborted": {"aborted": 1}}  # fmt: skip
