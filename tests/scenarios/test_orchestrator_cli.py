"""`wizard run … --sequence orchestrator` end to end: the CLI, real pi, a gateway process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import stripe_app
from tests.scenarios.conftest import ci_lines, pi_processes_in, wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.script import call

pytestmark = pytest.mark.live


def _run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    project = stripe_app(tmp_path / "project")
    return run_wizard(
        "run",
        "revenue-analytics",
        "--project",
        str(project),
        "--sequence",
        "orchestrator",
        "--ci",
        *extra,
        env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
        timeout=240,
    )


# The checkout call tagged with the person, as revenue-analytics' proof requires.
TAGGED = (
    "import stripe\n\n\ndef checkout(user):\n"
    "    return stripe.checkout.Session.create(metadata={'posthog_person_distinct_id': user})\n"
)


def _plan(*task_ids: str) -> dict[str, Any]:
    enqueued = [
        call("enqueue_task", type="tag-customers", label=f"Tag {t}", id=t) for t in task_ids
    ]
    return {
        "match": "# Plan the setup",
        "responses": [{"blocks": enqueued}, {"blocks": [{"text": "Planned."}]}],
    }


def test_an_orchestrated_run_succeeds_with_task_events(
    tmp_path: Path, gateway_process: Any
) -> None:
    done = call("complete_task", status="done", summary="tagged", handoff="billing.py")
    tagged = call("write", path="billing.py", content=TAGGED)
    url, _ = gateway_process(
        {
            "conversations": [
                _plan("a", "b"),
                {"match": "# Task a:", "responses": [{"blocks": [tagged]}, {"blocks": [done]}]},
                {"match": "# Task b:", "responses": [{"blocks": [done]}]},
            ]
        }
    )
    outcome_file = tmp_path / "outcome.json"
    proc = _run(tmp_path, url, "--max-parallel", "1", "--outcome-json", str(outcome_file))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = ci_lines(proc.stdout)
    queue = [(line["id"], line["status"]) for line in lines if line["event"] == "queue_task"]
    assert queue == [
        ("a", "pending"), ("b", "pending"),
        ("a", "running"), ("a", "done"),
        ("b", "running"), ("b", "done"),
    ]  # fmt: skip
    outcome = json.loads(outcome_file.read_text())
    assert (outcome["sequence"], outcome["status"], outcome["exit_code"]) == (
        "orchestrator",
        "succeeded",
        0,
    )
    assert outcome["outro"]["message"] == (
        "Revenue analytics set up: 2/2 steps completed, and proven"
    )
    (proof,) = outcome["verification"]["proofs"]
    assert proof["status"] == "proven" and "billing.py:5" in proof["evidence"]
    # Priced as a linear run is: the tasks' costs summed (the sum used to start from none).
    assert outcome["usage"]["cost_usd"] is not None and outcome["usage"]["cost_usd"] > 0
    assert [t["status"] for t in outcome["tasks"]] == ["done", "done"]
    assert pi_processes_in(tmp_path / "project") == []


def test_a_spent_budget_ends_the_run_on_its_screen_and_is_never_retried(
    tmp_path: Path, gateway_process: Any
) -> None:
    """It used to end "the 'Tag a' step failed … report it to wizard@posthog.com" with no
    error type, after starting the task again once the budget was spent."""
    tagged = call("write", path="billing.py", content=TAGGED)
    more = call("read", path="billing.py")
    url, _ = gateway_process(
        {
            "conversations": [
                _plan("a"),
                {"match": "# Task a:", "responses": [{"blocks": [tagged]}, {"blocks": [more]}]},
            ]
        }
    )
    outcome_file = tmp_path / "outcome.json"
    proc = _run(tmp_path, url, "--max-turns", "2", "--outcome-json", str(outcome_file))
    assert proc.returncode == 1, proc.stderr[-3000:]
    outcome = json.loads(outcome_file.read_text())
    assert (outcome["error_type"], outcome["outro"]["message"]) == (
        "WIZARD_BUDGET_EXCEEDED",
        "The run reached its budget",
    )
    (task,) = outcome["tasks"]
    assert (task["status"], task["attempts"], task["error"]) == ("failed", 1, "budget")
    assert "report it" not in outcome["outro"]["body"]


def test_a_task_abort_exits_3_with_the_matched_case(tmp_path: Path, gateway_process: Any) -> None:
    url, _ = gateway_process(
        {
            "conversations": [
                _plan("a"),
                {
                    "match": "# Task a:",
                    "responses": [
                        {"blocks": [{"text": "[ABORT] could not find a stripe integration"}]}
                    ],
                },
            ]
        }
    )
    proc = _run(tmp_path, url)
    assert proc.returncode == 3, proc.stderr[-3000:]
    outcome = ci_lines(proc.stdout)[-1]
    assert outcome["status"] == "aborted"
    assert outcome["outro"]["message"] == "Could not find a Stripe integration"
    assert outcome["reason"] == "could not find a stripe integration"
