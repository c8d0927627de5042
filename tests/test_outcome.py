"""Outcomes, their JSON form, and the one exit-code mapping."""

from __future__ import annotations

import json

import pytest

from wizard.outcome import AgentErrorType, AgentResult, Outcome, Outro, exit_code


@pytest.mark.parametrize(
    ("status", "code"), [("succeeded", 0), ("failed", 1), ("aborted", 3), ("cancelled", 130)]
)
def test_exit_codes(status: str, code: int) -> None:
    assert exit_code(Outcome(status=status, program="p")) == code  # type: ignore[arg-type]


def test_agent_error_types_keep_the_typescript_values() -> None:
    assert AgentErrorType.ABORT == "WIZARD_ABORT"
    assert AgentErrorType.INCOMPLETE_TASKS == "WIZARD_INCOMPLETE_TASKS"
    assert AgentErrorType.SECURITY_VIOLATION == "WIZARD_SECURITY_VIOLATION"
    assert AgentResult().ok and not AgentResult(error=AgentErrorType.ABORT).ok


def test_outcome_json_round_trip() -> None:
    outcome = Outcome(
        status="aborted",
        program="transactional-email",
        harness="pi",
        sequence="linear",
        error_type=AgentErrorType.ABORT,
        reason="the api is not enabled for this project",
        source="skill",
        outro=Outro(
            kind="error", message="Email API not enabled", body="Enable it.", docs_url="https://x"
        ),
    )
    data = json.loads(outcome.to_json())
    assert data["status"] == "aborted" and data["exit_code"] == 3
    assert data["error_type"] == "WIZARD_ABORT" and data["source"] == "skill"
    assert data["outro"]["message"] == "Email API not enabled"


def test_a_sum_of_usages_starts_from_nothing_and_keeps_the_cost() -> None:
    """An orchestrator sums its tasks' usage from an empty `Usage()`, which has no cost: the
    sum used to have none either, so orchestrator and resumed runs never showed one."""
    from wizard.outcome import Usage

    task = Usage(model_requests=2, cost_usd=0.01)
    assert (Usage() + task + task).cost_usd == 0.02
    assert (task + Usage(model_requests=1)).cost_usd is None  # one request with no price
    assert (Usage() + Usage()).cost_usd is None
