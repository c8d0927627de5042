"""What the agent records for a probe is a claim: on real apps, an entry or a server the app
never had (a stub, a client nothing calls, a function added for the probe) is refused before
anything runs, and so is a run that left the old way of sending in place; the app's own send
path and server, in several shapes, pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.runner.proofs.apps import after_run, changed, replacing
from wizard.programs.registry import get_program
from wizard.programs.types import SendProof
from wizard.runner.proofs.claims import calls_left, entry_is_apps, server_is_apps
from wizard.runner.proofs.codebase import Codebase
from wizard.runner.proofs.finding import Finding

(SEND,) = get_program("transactional-email").proofs
assert isinstance(SEND, SendProof)
FLASK = "flask-celery-example"
FLASK_SEND = """    msg = Message(email_data['subject'],
                  sender=app.config['MAIL_DEFAULT_SENDER'],
                  recipients=[email_data['to']])
    msg.body = email_data['body']
    with app.app_context():
        mail.send(msg)
"""
FLASK_API = "    send_email(email_data['to'], email_data['subject'], html=email_data['body'])\n"
IMPORTED = "from celery import Celery\n"
CLIENT = "import os\nimport urllib.request\n\n\ndef send_email(to, subject, html):\n    pass\n"


def _wired(text: str) -> str:
    """app.py moved onto the client: the Flask-Mail send replaced by a call of it."""
    text = replacing(FLASK_SEND, FLASK_API)(text)
    return replacing(IMPORTED, f"{IMPORTED}from posthog_email import send_email\n")(text)


def _claim(code: Codebase, module: str, function: str) -> Finding | str:
    return entry_is_apps(code, module, function, ".", SEND.replaces)


def test_the_apps_own_send_path_moved_to_the_api_is_the_apps(tmp_path: Path) -> None:
    code = after_run(tmp_path, FLASK, {"posthog_email.py": CLIENT, "app.py": _wired})
    assert calls_left(code, SEND.replaces) == []
    assert _claim(code, "app", "send_async_email") == (
        "app:send_async_email is a function the app had before the run"
    )
    assert _claim(code, "posthog_email", "send_email") == (
        "posthog_email:send_email is called by app.py's send_async_email, which sent the "
        "app's email before the run"
    )
    # Where nothing says how the app sent, code the app had calling it is enough.
    assert entry_is_apps(code, "posthog_email", "send_email", ".") == (
        "posthog_email:send_email is called by app.py, which the app had"
    )


def test_a_client_recorded_while_the_app_still_sends_through_flask_mail_fails(
    tmp_path: Path,
) -> None:
    code = after_run(tmp_path, FLASK, {"posthog_email.py": CLIENT})
    assert calls_left(code, SEND.replaces) == ["app.py:42 mail.send"]
    claim = _claim(code, "posthog_email", "send_email")
    assert isinstance(claim, Finding) and claim.status == "failed"
    assert "it is not called where the app sent before the run" in claim.text


CLASS_CLIENT = (
    "import urllib.request\n\n\nclass EmailClient:\n"
    "    def send(self, to, subject, body):\n        pass\n"
)
FLASK_MAIL = "from flask_mail import Mail\nmail = Mail()\n"


def _sent_through(client: str, call: str) -> Callable[[str], str]:
    """app.py's Flask-Mail send replaced by `call`, of a name imported as `client` says."""

    def edit(text: str) -> str:
        text = replacing(FLASK_SEND, f"    {call}(email_data['to'], 'Hi', email_data['body'])\n")(
            text
        )
        return replacing(IMPORTED, f"{IMPORTED}{client}\n")(text)

    return edit


@pytest.mark.parametrize(
    ("edits", "left"),
    [
        # A client class the run added, called where Flask-Mail sent: its `send` is not
        # Flask-Mail's, though app.py still imports flask_mail.
        ({"posthog_email.py": CLASS_CLIENT,
          "app.py": _sent_through("from posthog_email import EmailClient", "EmailClient().send")},
         []),
        # The same client under another name, and a module of the app that no longer sends
        # through Flask-Mail, imported whole.
        ({"posthog_email.py": CLASS_CLIENT, "app.py": _sent_through(
            "from posthog_email import EmailClient as Client", "Client().send")}, []),
        ({"mailer.py": "def send(to, subject, body):\n    pass\n",
          "app.py": _sent_through("import mailer", "mailer.send")}, []),
        # Flask-Mail's `mail` moved into an app module (or re-exported through a second one)
        # and still sending: named.
        ({"extensions.py": FLASK_MAIL, "app.py": _sent_through("from extensions import mail",
                                                                "mail.send")},
         ["app.py:38 mail.send"]),
        ({"extensions.py": FLASK_MAIL, "helpers.py": "from extensions import mail\n",
          "app.py": _sent_through("from helpers import mail as m", "m.send")},
         ["app.py:38 m.send"]),
        # ... or re-exported through more app modules than are followed.
        ({"extensions.py": FLASK_MAIL, "h1.py": "from extensions import mail\n",
          **{f"h{n}.py": f"from h{n - 1} import mail\n" for n in range(2, 6)},
          "app.py": _sent_through("from h5 import mail as m", "m.send")},
         ["app.py:38 m.send"]),
        # Flask-Mail reached through another package's name.
        ({"app.py": _sent_through("from flask import current_app",
                                  "current_app.extensions['mail'].send")},
         ["app.py:38 current_app.extensions['mail'].send"]),
        # A module named like the client that still uses Flask-Mail.
        ({"posthog_email.py": "from flask_mail import Message\n" + CLASS_CLIENT,
          "app.py": _sent_through("from posthog_email import EmailClient", "EmailClient().send")},
         ["app.py:38 EmailClient().send"]),
    ],
)  # fmt: skip
def test_a_send_is_the_old_way_only_when_its_name_comes_from_the_old_way(
    tmp_path: Path, edits: dict[str, object], left: list[str]
) -> None:
    code = after_run(tmp_path, FLASK, edits)  # type: ignore[arg-type]
    assert calls_left(code, SEND.replaces) == left
    if not left:
        assert _claim(code, "app", "send_async_email") == (
            "app:send_async_email is a function the app had before the run"
        )


@pytest.mark.parametrize(
    ("client", "left"),
    [("export const mailer = { sendMail: async (o: object) => o };\n", False),
     ('import nodemailer from "nodemailer";\n'
      "export const mailer = nodemailer.createTransport({});\n", True)],
)  # fmt: skip
def test_a_typescript_send_is_the_old_way_when_its_module_uses_nodemailer(
    tmp_path: Path, client: str, left: bool
) -> None:
    """contact.ts keeps importing nodemailer but sends through `mailer` from a module."""
    edit = replacing("transporter.sendMail(", "mailer.sendMail(")
    contact = lambda text: 'import { mailer } from "../mailer";\n' + edit(text)  # noqa: E731
    code = after_run(tmp_path, "typescript-node-starter",
                     {"src/mailer.ts": client, "src/controllers/contact.ts": contact})  # fmt: skip
    named = [line for line in calls_left(code, SEND.replaces) if "mailer.sendMail" in line]
    assert named == (["src/controllers/contact.ts:47 mailer.sendMail"] if left else [])


@pytest.mark.parametrize(
    ("edits", "module", "function"),
    [
        # A stub that posts to the API, the app untouched but for its send gone.
        ({"stub.py": CLIENT, "app.py": replacing(FLASK_SEND, "    pass\n")}, "stub", "send_email"),
        # The client imported by the app, never called.
        ({"posthog_email.py": CLIENT, "app.py": lambda t: _wired(t).replace(FLASK_API, "")},
         "posthog_email", "send_email"),
        # A function added to the app's own file for the probe alone.
        ({"posthog_email.py": CLIENT, "app.py": lambda t: _wired(t).replace(FLASK_API, "")
          + "\n\ndef probe_me(to):\n    send_email(to, 'a', 'b')\n"}, "app", "probe_me"),
        # The client called from code the app had, but not where it sent: its send gutted.
        ({"posthog_email.py": CLIENT, "app.py": lambda t: _wired(t).replace(FLASK_API, "")
          + "\n\ndef health():\n    send_email('ops@example.com', 'ok', 'ok')\n"},
         "posthog_email", "send_email"),
    ],
)  # fmt: skip
def test_an_entry_the_app_never_had_nor_calls_fails(
    tmp_path: Path, edits: dict[str, object], module: str, function: str
) -> None:
    claim = _claim(after_run(tmp_path, FLASK, edits), module, function)  # type: ignore[arg-type]
    assert isinstance(claim, Finding) and claim.status == "failed", claim
    assert f"{module}:{function} is not the app's" in claim.text


@pytest.mark.parametrize(
    "defined",
    [
        "exports.sendReset = async function (to) {\n  return transport(to);\n};\n",
        "module.exports.sendReset = (to) => transport(to);\n",
        "export async function sendReset(to) {\n  return transport(to);\n}\n",
        "const sendReset = async (to) => transport(to);\nmodule.exports = { sendReset };\n",
    ],
)
def test_a_javascript_send_function_the_app_had_is_the_apps(tmp_path: Path, defined: str) -> None:
    project = tmp_path / "app"
    project.mkdir()
    (project / "mailer.js").write_text(defined)
    code = changed(project, {"mailer.js": lambda text: text.replace("transport", "api")})
    assert _claim(code, "mailer.js", "sendReset") == (
        "mailer.js:sendReset is a function the app had before the run"
    )


def test_an_entry_that_is_no_file_of_the_app_fails(tmp_path: Path) -> None:
    claim = _claim(after_run(tmp_path, FLASK, {}), "nowhere", "send")
    assert isinstance(claim, Finding) and "is not a file of the app" in claim.text


def test_without_a_journal_nothing_says_what_is_the_apps(tmp_path: Path) -> None:
    code = after_run(tmp_path, FLASK, {})
    unjournaled = Codebase(code.root)
    claim = _claim(unjournaled, "app", "send_async_email")
    assert isinstance(claim, Finding) and claim.status == "not_run"
    assert "not journaled" in claim.text


def test_nodemailer_left_in_the_express_starter_is_named(tmp_path: Path) -> None:
    code = after_run(tmp_path, "typescript-node-starter", {})
    left = calls_left(code, SEND.replaces)
    assert "src/controllers/contact.ts:46 transporter.sendMail" in left
    assert any(line.startswith("src/controllers/user.ts:") for line in left)


def test_a_send_module_invented_in_an_app_that_never_sent_email_proves_nothing(
    tmp_path: Path,
) -> None:
    """tldr's client sends no email: whatever the agent adds, the program did not fit it."""
    from wizard.runner.proofs import _unfit

    code = after_run(tmp_path, "tldr-python-client", {"mailer.py": CLIENT})
    program = get_program("transactional-email")
    unfit = _unfit(code, program.fits)
    assert unfit is not None and unfit.status == "failed"
    assert unfit.text.startswith("before the run no code here sends email")
    assert _unfit(after_run(tmp_path / "b", FLASK, {}), program.fits) is None


PYTHON_MCP, TS_MCP = "mcp-weather-server-python", "mcp-weather-server-typescript"
STUB = "from mcp.server.fastmcp import FastMCP\nm = FastMCP('x')\n"


@pytest.mark.parametrize(
    ("app", "edits", "command", "tool", "why"),
    [
        (PYTHON_MCP, {"analytics.py": "x = 1\n"}, ["python", "weather.py"], "get_alerts",
         "the server weather.py was in the project before the run"),
        (PYTHON_MCP, {}, ["uv", "run", "weather.py"], "get_forecast",
         "the server weather.py was in the project before the run"),
        (PYTHON_MCP, {}, ["python", "-m", "weather"], "get_alerts",
         "the server weather.py was in the project before the run"),
        # Its build's output, which package.json's `bin` names.
        (TS_MCP, {}, ["node", "build/index.js"], "get-alerts",
         "the project's package.json starts build/index.js"),
        (TS_MCP, {}, ["npx", "tsx", "src/index.ts"], "get-forecast",
         "the server src/index.ts was in the project before the run"),
        # Names the project's own manifests give: a console script, a package's bin.
        (PYTHON_MCP, {}, ["uv", "run", "weather"], "get_alerts",
         "the server weather.py was in the project before the run"),
        (TS_MCP, {}, ["npx", "weather"], "get-alerts",
         "the project's package.json starts build/index.js"),
    ],
)  # fmt: skip
def test_the_apps_own_server_passes(
    tmp_path: Path, app: str, edits: dict[str, str], command: list[str], tool: str, why: str
) -> None:
    code = after_run(tmp_path, app, edits)
    if app == TS_MCP:
        (code.root / "build").mkdir()
        (code.root / "build" / "index.js").write_text("// built\n")
    found = server_is_apps(code, code.root, command, ".", tool)
    assert found == f"{why}, and its tool {tool} was in the app's code"


def test_an_npm_script_is_the_apps_as_the_project_had_it(tmp_path: Path) -> None:
    """`npm start` runs the project's own start script; one the run added or changed to
    start something else is not the app's."""
    code = after_run(tmp_path / "a", TS_MCP, {})
    manifest = json.loads((code.root / "package.json").read_text())
    manifest["scripts"]["start"] = "node build/index.js"
    (code.root / "package.json").write_text(json.dumps(manifest))  # as the app had it
    (code.root / "build").mkdir()
    (code.root / "build" / "index.js").write_text("// built\n")
    found = server_is_apps(code, code.root, ["npm", "start"], ".", "get-alerts")
    assert isinstance(found, str) and "starts build/index.js" in found
    manifest["scripts"]["start"] = "node stub.mjs"
    code = changed(code.root, {"package.json": json.dumps(manifest), "stub.mjs": "export {}\n"})
    claim = server_is_apps(code, code.root, ["npm", "run", "start"], ".", "get-alerts")
    assert isinstance(claim, Finding) and "names no file of the app" in claim.text


def test_a_build_of_a_source_the_app_had_is_the_apps(tmp_path: Path) -> None:
    code = after_run(tmp_path, TS_MCP, {})
    manifest = json.loads((code.root / "package.json").read_text())
    del manifest["bin"]  # as the app had it: nothing in its manifest names the built file
    manifest["scripts"] = {"build": "tsc"}
    (code.root / "package.json").write_text(json.dumps(manifest))
    (code.root / "build").mkdir()
    (code.root / "build" / "index.js").write_text("// built\n")
    found = server_is_apps(code, code.root, ["node", "build/index.js"], ".", "get-alerts")
    assert isinstance(found, str) and found.startswith(
        "build/index.js is the build of src/index.ts, which the app had"
    )


@pytest.mark.parametrize(
    ("app", "edits", "command", "tool", "reason"),
    [
        (PYTHON_MCP, {"stub.py": STUB}, ["python", "stub.py"], "get_alerts",
         "the recorded server stub.py is not the app's"),
        (TS_MCP, {"stub.mjs": "export {}\n"}, ["node", "stub.mjs"], "get-alerts",
         "the recorded server stub.mjs is not the app's"),
        (PYTHON_MCP, {}, ["python", "weather.py"], "ping",
         "the recorded tool 'ping' is not one the app had"),
        (PYTHON_MCP, {}, ["python", "-c", "import weather"], "get_alerts", "names no file"),
    ],
)  # fmt: skip
def test_a_server_or_tool_the_app_never_had_fails(
    tmp_path: Path, app: str, edits: dict[str, str], command: list[str], tool: str, reason: str
) -> None:
    code = after_run(tmp_path, app, edits)
    claim = server_is_apps(code, code.root, command, ".", tool)
    assert isinstance(claim, Finding) and claim.status == "failed" and reason in claim.text
