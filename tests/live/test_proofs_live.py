"""Runtime proofs, executed for real: wizard calls the send path the skill recorded, in the OS
sandbox, with the email API's host on a local sink; only a send that reaches the sink with the
probe's recipient and key is proven, and nothing reaches any other host."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.integrations import ENTRY as ENTRY_RECORD
from tests.integrations import SENDER
from tests.runner.proofs.apps import after_run, replacing
from wizard.outcome import ProofResult
from wizard.programs.registry import get_program
from wizard.runner.proofs import Before, RunFacts, prove
from wizard.runner.verification import check_runner
from wizard.tools.sandbox import build_policy

pytestmark = pytest.mark.live
# Every file of these projects was there before the run: the app's own (the probes' claims
# against the tree before the run are tested in tests/runner/proofs).
APPS_OWN = RunFacts(before=Before({}))

CORPUS = Path(__file__).parents[1] / "corpus"
EMAIL = get_program("transactional-email").proofs
ENTRY = ".posthog/email-probe.json"
NODE_SENDER = """export async function sendReset(to) {
  const response = await fetch(`${process.env.EMAIL_API_HOST}/api/email/send`, {
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.POSTHOG_EMAIL_API_KEY}` },
    body: JSON.stringify({ to, subject: "Reset" }),
  });
  if (!response.ok) throw new Error(`email API: ${response.status}`);
}
"""


async def _prove(
    project: Path, *, sandboxed: bool = True, facts: RunFacts = APPS_OWN
) -> ProofResult:
    run_tmp = Path(tempfile.mkdtemp(prefix="wizard-run-"))
    workspace = Path(tempfile.mkdtemp(prefix="wizard-verify-"))
    try:
        policy = build_policy(project, run_tmp) if sandboxed else None
        runner = check_runner(policy, workspace)
        (result,) = await prove(EMAIL, project, runner.sandbox, workspace, runner.unsandboxable,
                                facts)  # fmt: skip
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)
        shutil.rmtree(workspace, ignore_errors=True)
    return result


def _project(tmp_path: Path, sender: str = SENDER, entry: dict[str, object] | None = None) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mailer.py").write_text(sender)
    entry = entry or ENTRY_RECORD
    (project / ".posthog").mkdir()
    (project / ENTRY).write_text(json.dumps(entry))
    return project


async def test_a_send_that_reaches_the_api_is_proven_and_leaves_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / ".env").write_text("POSTHOG_EMAIL_API_KEY=phx_the_users_real_key\n")
    before = sorted(p.name for p in project.iterdir())
    result = await _prove(project)
    assert (result.kind, result.status) == ("runtime", "proven"), result.reason
    assert "mailer:send_welcome sent one POST /api/email/send" in result.evidence
    assert sorted(p.name for p in project.iterdir()) == before  # no bytecode, nothing else


@pytest.mark.parametrize(
    ("sabotage", "reason"),
    [
        # The key written into the code instead of read from the environment.
        (('os.environ["POSTHOG_EMAIL_API_KEY"]', '"phx_hardcoded"'), "did not carry the key"),
        # The host hard-coded to the public cloud: the sandbox lets nothing out.
        (('os.environ["EMAIL_API_HOST"]', '"https://us.i.posthog.com"'), "sent nothing"),
        # The client written, but the send path never calls it.
        (("    urllib.request.urlopen(request, timeout=10).read()\n", "    pass\n"),
         "sent nothing"),
        # One send, two requests.
        (("def send_welcome(to):\n", "def send_welcome(to):\n    _send(to)\n    _send(to)\n\n\n"
          "def _send(to):\n"), "2 requests"),
    ],
)  # fmt: skip
async def test_a_sabotaged_send_is_not_proven(
    tmp_path: Path, sabotage: tuple[str, str], reason: str
) -> None:
    old, new = sabotage
    assert old in SENDER
    result = await _prove(_project(tmp_path, SENDER.replace(old, new)))
    assert result.status == "failed" and reason in result.reason, result.reason


@pytest.mark.parametrize(
    ("change", "status", "said"),
    [
        # The app's module needs its settings to be imported at all (a Django-style app):
        # nothing could be tried, so nothing is blamed.
        (("import json\n", "import json\nimport os\nSETTINGS = os.environ['APP_SETTINGS']\n"),
         "not_run", "cannot be imported alone (KeyError 'APP_SETTINGS')"),
        # The send went out right, then the app needed a key of its own the probe lacks.
        (("    urllib.request.urlopen(request, timeout=10).read()\n",
          "    urllib.request.urlopen(request, timeout=10).read()\n"
          "    os.environ['CRM_API_KEY']\n"), "not_run", "a credential of the app's own"),
        # The app's code does not even parse: no send path at all.
        (("def send_welcome(to):\n", "def send_welcome(to:\n"), "failed", "SyntaxError"),
        # The send went out, then the send path broke on the answer: the app's flow fails.
        (("    urllib.request.urlopen(request, timeout=10).read()\n",
          "    json.loads(urllib.request.urlopen(request, timeout=10).read())['missing']\n"),
         "failed", "then failed"),
    ],
)  # fmt: skip
async def test_what_the_app_needs_beyond_the_probe_is_not_blamed_on_the_integration(
    tmp_path: Path, change: tuple[str, str], status: str, said: str
) -> None:
    assert change[0] in SENDER
    # The app's mailer as it was before the run, and as the run left it.
    facts = RunFacts(before=Before({"mailer.py": SENDER.encode()}))
    result = await _prove(_project(tmp_path, SENDER.replace(*change)), facts=facts)
    assert result.status == status, result
    assert said in result.reason


async def test_a_node_send_with_fetch_is_proven(tmp_path: Path) -> None:
    """Node's fetch ignores proxy settings: the forwarder inside the sandbox carries it."""
    project = _project(tmp_path)
    (project / "mailer.mjs").write_text(NODE_SENDER)
    entry = {"module": "mailer.mjs", "function": "sendReset", "args": ["{recipient}"]}
    (project / ENTRY).write_text(json.dumps(entry))
    result = await _prove(project)
    assert result.status == "proven", result.reason


async def test_a_real_app_whose_dependencies_are_missing_is_not_proven_and_says_why(
    tmp_path: Path,
) -> None:
    """flask-celery-example, its send moved onto the client, imports Flask-Mail and Celery,
    not installed here: the probe cannot run it, so the run is set up, not proven, never
    proven."""
    sender = (
        '"""Sends email through the API."""\n\n\ndef send_email(to, subject, html):\n    pass\n'
    )
    entry = {"module": "app", "function": "send_async_email",
             "args": [{"to": "{recipient}", "subject": "Hi", "body": "Hello"}]}  # fmt: skip
    code = after_run(tmp_path, "flask-celery-example", {
        "posthog_email.py": sender,
        "app.py": replacing("        mail.send(msg)\n", "        send_email(msg.recipients[0], "
                            "msg.subject, msg.body)\n"),
        ENTRY: json.dumps(entry),
    })  # fmt: skip
    assert code.changes is not None
    result = await _prove(code.root, facts=RunFacts(before=code.changes))
    assert result.status == "not_run", result
    assert result.reason.startswith("a dependency is missing: ")


async def test_no_entry_fails_and_no_sandbox_or_typescript_does_not_run(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert (await _prove(project, sandboxed=False)).status == "not_run"
    (project / "src").mkdir()
    (project / "src" / "mailer.ts").write_text("export async function send(to: string) {}\n")
    (project / ENTRY).write_text(json.dumps({"module": "src/mailer.ts", "function": "send"}))
    assert (await _prove(project)).status == "not_run"
    outside = {**ENTRY_RECORD, "folder": "../.."}
    (project / ENTRY).write_text(json.dumps(outside))
    escaped = await _prove(project)
    assert escaped.status == "failed" and "is not one of the project's" in escaped.reason
    (project / ENTRY).unlink()
    missing = await _prove(project)
    assert missing.status == "failed" and "recorded no entry" in missing.reason


MCP = get_program("mcp-analytics").proofs
# The installed `mcp`'s major version: the probe's client and the servers below speak 1.x and
# 2.x alike (the test command runs them on the range's floor, 1.x, too).
MCP_MAJOR = int(importlib.metadata.version("mcp").split(".")[0])
# PostHog's MCP wrapper came with its SDK's later releases.
HAS_WRAPPER = importlib.util.find_spec("posthog.mcp") is not None
SERVER = """import os

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x: the same server, under its old name
    from mcp.server.fastmcp import FastMCP as MCPServer
from posthog import Posthog

posthog = Posthog(os.environ["POSTHOG_API_KEY"], host=os.environ["POSTHOG_HOST"],
                  flush_interval=0.5)
server = MCPServer("weather")


@server.tool()
def get_alerts(state: str) -> str:
    posthog.capture("mcp tool called", distinct_id="mcp", properties={"tool": "get_alerts"})
    return f"No alerts for {state}"


if __name__ == "__main__":
    server.run("stdio")
"""


def _with_dependencies(project: Path) -> Path:
    """The project's own `.venv`, holding what the server imports (`mcp`, `posthog`): this
    test's, reached through a `.pth` file; the sandbox must be able to read it."""
    import subprocess
    import sys
    import sysconfig

    venv = project / ".venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = Path(sysconfig.get_paths()["purelib"])
    (next(venv.glob("lib/python3*/site-packages")) / "wizard-test.pth").write_text(f"{packages}\n")
    return packages


async def _prove_mcp(project: Path, packages: Path) -> ProofResult:
    run_tmp = Path(tempfile.mkdtemp(prefix="wizard-run-"))
    workspace = Path(tempfile.mkdtemp(prefix="wizard-verify-"))
    try:
        runner = check_runner(build_policy(project, run_tmp).reading(packages), workspace)
        (result,) = await prove(MCP, project, runner.sandbox, workspace, runner.unsandboxable,
                                APPS_OWN)  # fmt: skip
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)
        shutil.rmtree(workspace, ignore_errors=True)
    return result


@pytest.mark.parametrize(
    ("sabotage", "status", "reason"),
    [
        (None, "proven", ""),
        (('os.environ["POSTHOG_API_KEY"]', '"phc_hardcoded"'), "failed", "did not carry the key"),
        (('os.environ["POSTHOG_HOST"]', '"https://us.i.posthog.com"'), "failed", "no capture"),
        (("    posthog.capture(", "    if False: posthog.capture("), "failed", "no capture"),
        (("def get_alerts(", "def get_weather_alerts("), "failed", "has no tool 'get_alerts'"),
    ],
)  # fmt: skip
async def test_an_mcp_servers_tool_call_must_be_captured(
    tmp_path: Path, sabotage: tuple[str, str] | None, status: str, reason: str
) -> None:
    """wizard starts the server itself over stdio, lists its tools, calls the recorded one
    with the `mcp` client, and looks for the capture at the sink."""
    project = tmp_path / "project"
    project.mkdir()
    packages = _with_dependencies(project)
    source = SERVER if sabotage is None else SERVER.replace(*sabotage)
    (project / "server.py").write_text(source)
    (project / ".posthog").mkdir()
    entry = {"command": ["python", "server.py"], "tool": "get_alerts", "arguments": {"state": "CA"}}
    (project / ".posthog" / "mcp-probe.json").write_text(json.dumps(entry))
    result = await _prove_mcp(project, packages)
    assert (result.kind, result.status) == ("runtime", status), result
    assert reason in result.reason
    if status == "proven":
        assert "called the tool get_alerts over stdio" in result.evidence


# PostHog's own MCP wrapper (`posthog.mcp.instrument`), as its docs show it: it sends a
# `$mcp_tools_list` event naming every tool when the client lists them, and `$mcp_tool_call`
# with `$mcp_tool_name` on each call.
WRAPPED = """import os

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x: the same server, under its old name
    from mcp.server.fastmcp import FastMCP as MCPServer
from posthog import Posthog
from posthog.mcp import instrument

server = MCPServer("weather")
instrument(server, Posthog(os.environ["POSTHOG_API_KEY"], host=os.environ["POSTHOG_HOST"],
                           flush_interval=0.5))


@server.tool()
def get_alerts(state: str) -> str:
    return f"No alerts for {state}"


if __name__ == "__main__":
    server.run("stdio")
"""
# A capture sent once, at start-up, naming the tool, and none when it is called.
AT_START = SERVER.replace(
    'server = MCPServer("weather")\n',
    'server = MCPServer("weather")\nposthog.capture("server ready", distinct_id="mcp", '
    'properties={"tool": "get_alerts", "tools": ["get_alerts"]})\n',
).replace("    posthog.capture(", "    if False: posthog.capture(")
# The tool needs a key of its own, which the probe does not have: its call is captured, then
# it fails; a server that needs one to start cannot be proven either way.
OWN_KEY_IN_TOOL = SERVER.replace(
    '    return f"No alerts for {state}"', '    return os.environ["WEATHER_API_KEY"]'
)
OWN_KEY_TO_START = SERVER.replace('server = MCPServer("weather")\n',
                                  'WEATHER = os.environ["WEATHER_API_KEY"]\n'
                                  'server = MCPServer("weather")\n')  # fmt: skip


@pytest.mark.parametrize(
    ("source", "status", "said"),
    [
        pytest.param(
            WRAPPED,
            "proven",
            "after the call an event naming it arrived",
            marks=pytest.mark.skipif(not HAS_WRAPPER, reason="no posthog.mcp here"),
        ),
        (AT_START, "failed", "sent no capture naming it"),
        (OWN_KEY_IN_TOOL, "proven", "the tool itself failed"),
        (OWN_KEY_TO_START, "not_run", "KeyError: 'WEATHER_API_KEY'"),
    ],
)
async def test_only_a_capture_the_call_caused_counts_and_an_apps_own_key_is_not_blamed(
    tmp_path: Path, source: str, status: str, said: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    packages = _with_dependencies(project)
    (project / "server.py").write_text(source)
    (project / ".posthog").mkdir()
    entry = {"command": ["python", "server.py"], "tool": "get_alerts", "arguments": {"state": "CA"}}
    (project / ".posthog" / "mcp-probe.json").write_text(json.dumps(entry))
    result = await _prove_mcp(project, packages)
    assert result.status == status, result
    assert said in (result.evidence or result.reason)


async def test_the_real_weather_server_without_its_dependencies_is_not_proven(
    tmp_path: Path,
) -> None:
    """The quickstart weather server imports `mcp.server.fastmcp` (mcp 1.x); the project's
    environment here has mcp 2.x: the server cannot start, and the run is not proven."""
    if MCP_MAJOR < 2:
        pytest.skip("its premise is an environment with mcp 2.x")
    project = tmp_path / "project"
    shutil.copytree(CORPUS / "mcp-weather-server-python", project)
    packages = _with_dependencies(project)
    (project / ".posthog").mkdir()
    entry = {
        "command": ["python", "weather.py"],
        "tool": "get_alerts",
        "arguments": {"state": "CA"},
    }
    (project / ".posthog" / "mcp-probe.json").write_text(json.dumps(entry))
    result = await _prove_mcp(project, packages)
    assert result.status == "not_run", result
    assert "a dependency is missing" in result.reason and "fastmcp" in result.reason
