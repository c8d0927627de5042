"""How a run's outcome becomes a repository's row."""

from __future__ import annotations

from typing import Any

import pytest

from wizard.fleet.activities import rate_limit_wait, run_result


def _proofs(*statuses: str) -> dict[str, Any]:
    return {"proofs": [{"name": f"p{i}", "status": s} for i, s in enumerate(statuses)]}


@pytest.mark.parametrize(
    ("outcome", "ended"),
    [
        ({"status": "succeeded", "verification": _proofs("proven", "proven")}, "proven"),
        ({"status": "succeeded", "verification": _proofs("proven", "not run")}, "set up"),
        ({"status": "succeeded"}, "set up"),
        ({"status": "aborted", "reason": "no stripe"}, "aborted"),
        ({"status": "not_applicable", "reason": "nothing here uses Stripe"}, "not applicable"),
        ({"status": "unverified"}, "unverified"),
        ({"status": "failed", "error_type": "WIZARD_SECURITY_VIOLATION"}, "failed"),
        ({"status": "usage_error", "reason": "a preview needs the sandbox"}, "failed"),
        ({}, "failed"),
    ],
)
def test_an_outcome_becomes_a_row(outcome: dict[str, Any], ended: str) -> None:
    result = run_result({"usage": {"cost_usd": 0.25}, **outcome}, 1.5)
    assert result.ended == ended
    assert (result.cost_usd, result.seconds) == (0.25, 1.5)
    assert result.reason == (outcome.get("reason") or "")


def test_a_rate_limited_run_waits_longer_at_each_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIZARD_FLEET_RATE_WAIT", "10")
    waits = [rate_limit_wait(attempt).total_seconds() for attempt in (1, 2, 3, 10)]
    assert waits == [10, 20, 40, 600]


def test_a_run_gets_no_credential_that_could_push() -> None:
    from wizard.fleet.activities import run_env

    worker = {
        "PATH": "/usr/bin",
        "WIZARD_GATEWAY_KEY": "k",
        "SSH_AUTH_SOCK": "/run/agent",
        "GH_TOKEN": "ghp_x",
        "GIT_ASKPASS": "/bin/askpass",
        "GIT_CONFIG_GLOBAL": "/x",
    }
    assert run_env(worker) == {"PATH": "/usr/bin", "WIZARD_GATEWAY_KEY": "k"}
