"""`wizard run … --harness anthropic` end to end: the CLI, the SDK's CLI, a gateway process."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import stripe_app
from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.testing.cli import run_wizard

pytestmark = pytest.mark.live


def _run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    project = stripe_app(tmp_path / "project")
    return run_wizard(
        "run",
        "revenue-analytics",
        "--project",
        str(project),
        "--harness",
        "anthropic",
        "--ci",
        env=env,
        timeout=240,
    )


def test_an_abort_on_the_anthropic_harness_exits_3(tmp_path: Path, gateway_process: Any) -> None:
    pytest.importorskip("claude_agent_sdk")
    stop = {"blocks": [{"text": "[ABORT] could not find a stripe integration\n"}]}
    url, _ = gateway_process({"responses": [stop]})
    proc = _run(tmp_path, wizard_env(tmp_path, WIZARD_GATEWAY_URL=url))
    assert proc.returncode == 3, proc.stderr[-2000:]
    outcome = ci_lines(proc.stdout)[-1]
    assert (outcome["harness"], outcome["status"]) == ("anthropic", "aborted")
    assert outcome["outro"]["message"] == "Could not find a Stripe integration"


def test_an_openai_gateway_with_the_anthropic_harness_is_a_usage_error(tmp_path: Path) -> None:
    env = wizard_env(
        tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9", WIZARD_GATEWAY_API="openai-completions"
    )
    proc = _run(tmp_path, env)
    assert proc.returncode == 2
    assert "--harness pi" in proc.stderr


def test_wizard_skill_on_the_anthropic_harness_ignores_the_marker(
    tmp_path: Path, gateway_process: Any
) -> None:
    pytest.importorskip("claude_agent_sdk")
    ls = {"tool_call": {"name": "mcp__wizard__bash", "arguments": {"command": "ls"}}}
    url, _ = gateway_process(
        {
            "responses": [
                {"blocks": [{"text": "[ABORT] could not find a stripe integration\n"}, ls]},
                {"blocks": [{"text": "Done anyway."}]},
                {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
            ]
        }
    )
    project = tmp_path / "project"
    project.mkdir()
    proc = run_wizard(
        "skill",
        "revenue-analytics",
        "--project",
        str(project),
        "--harness",
        "anthropic",
        "--ci",
        env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert ci_lines(proc.stdout)[-1]["status"] == "succeeded"
