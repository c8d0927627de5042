"""A representative part of the hostile suite, through the real pi engine and its bridge.

The scripted model makes the hostile calls; pi asks the host's fence through the extension's
`tool_call` hook. Nothing may change on disk, and no secret may reach the gateway: neither a
`.env` value nor a credential from wizard's own environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import run_live
from wizard.outcome import AgentErrorType
from wizard.testing.script import call
from wizard.tools.env import env_tools

pytestmark = pytest.mark.live

SECRET = "s3cr3t-live-value-never-shown"
NEVER = {"blocks": [{"text": "this response must never be requested"}]}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, project, outside = tmp_path / "home", tmp_path / "project", tmp_path / "outside"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    outside.mkdir()
    (outside / "precious.txt").write_text("precious")
    project.mkdir()
    (project / ".env").write_text(f"API_KEY={SECRET}\n")
    (project / "app.py").write_text("print('app')\n")
    monkeypatch.setenv("HOME", str(home))
    for name in ("WIZARD_GATEWAY_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.setenv(name, SECRET)
    return project, outside


def _everything_sent(live: Any) -> str:
    return json.dumps([r.body for r in live.gateway.requests])


async def test_denials_go_back_to_the_model_and_nothing_leaks(world: tuple[Path, Path]) -> None:
    project, outside = world
    show_env = "console.log(JSON.stringify(process.env))\n"
    scenario = {"responses": [
        {"blocks": [call("read", path=".env"), call("bash", command="cat .env"),
                    call("write", path="../outside/precious.txt", content="gone"),
                    call("edit", path=".env", edits=[{"oldText": "API_KEY", "newText": "X"}])]},
        {"blocks": [call("bash", command="grep -r API_KEY ."),
                    call("write", path="show_env.js", content=show_env)]},
        {"blocks": [call("bash", command="node show_env.js"),
                    call("check_env_keys", filePath=".env", keys=["API_KEY"])]},
        {"blocks": [{"text": "Done."}]},
        {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
    ]}  # fmt: skip
    live = await run_live(project, scenario, tools=env_tools)
    assert live.result.ok, live.result
    live.gateway.assert_complete()
    sent = _everything_sent(live)
    assert SECRET not in sent
    assert "environment file" in sent and "outside the project" in sent
    assert '\\"API_KEY\\": \\"present\\"' in sent  # the env tool answers without the value
    assert "PATH" in sent  # the child's environment was really printed, scrubbed
    assert (project / ".env").read_text() == f"API_KEY={SECRET}\n"
    assert (outside / "precious.txt").read_text() == "precious"
    live.assert_no_process_left()


@pytest.mark.parametrize(
    "command", ["printenv", "cat /proc/self/environ", "rm -rf ~", "cat ~/.ssh/id_rsa"]
)
async def test_a_critical_violation_ends_the_run(world: tuple[Path, Path], command: str) -> None:
    project, _ = world
    home = Path.home()
    scenario = {"responses": [
        {"blocks": [{"text": "Let me look around.\n"}, call("bash", command=command)]},
        NEVER,
    ]}  # fmt: skip
    live = await run_live(project, scenario)
    assert live.result.error is AgentErrorType.SECURITY_VIOLATION
    assert (live.result.message or "").startswith("Blocked")
    assert len(live.gateway.requests) == 1, "the run went on after a critical violation"
    assert (home / ".ssh" / "id_rsa").read_text() == SECRET
    assert SECRET not in _everything_sent(live)
    live.assert_no_process_left()
