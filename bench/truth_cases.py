"""The truth bench's transcripts: for each real app, what a correct agent does (in several
shapes) and what a sabotaged one does, as the tool calls a scripted model makes.

Each `Case` says what the run deserves: `correct` (proven, or "set up, not proven" with a
reason: never unverified), `sabotaged` (never proven) or `does not fit` (not applicable,
nothing changed). An edit reads the app's files (a fresh copy of the corpus) and returns the
tool calls that change them.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.testing.script import call

Edit = Callable[[Path], list[dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    app: str
    program: str
    name: str
    deserves: str  # correct | sabotaged | does not fit
    edit: Edit | None = None
    deps: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


def _write(path: str, content: str) -> dict[str, Any]:
    return call("write", path=path, content=content)


def _changed(app: Path, path: str, *pairs: tuple[str, str]) -> dict[str, Any]:
    text = (app / path).read_text()
    for old, new in pairs:
        assert old in text, (path, old)
        text = text.replace(old, new, 1)
    return _write(path, text)


# --- transactional email: the Flask + Celery app, and the Express/TypeScript starter --------

SENDER = '''"""Sends transactional email through the PostHog email API."""

import json
import os
import urllib.request

API_HOST = os.environ.get("EMAIL_API_HOST", "https://us.i.posthog.com")


def send_email(to, subject, html, text=None):
    payload = {"to": to, "subject": subject, "html": html, "text": text or html}
    request = urllib.request.Request(
        f"{API_HOST}/api/email/send",
        data=json.dumps(payload).encode(),
        headers={"Authorization": f"Bearer {os.environ['POSTHOG_EMAIL_API_KEY']}",
                 "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
'''
FLASK_SEND = """    msg = Message(email_data['subject'],
                  sender=app.config['MAIL_DEFAULT_SENDER'],
                  recipients=[email_data['to']])
    msg.body = email_data['body']
    with app.app_context():
        mail.send(msg)
"""
FLASK_API = "    send_email(email_data['to'], email_data['subject'], html=email_data['body'])\n"
CELERY = "from celery import Celery\n"
APP_ENTRY = {"module": "app", "function": "send_async_email",
             "args": [{"to": "{recipient}", "subject": "Hi", "body": "Hello"}]}  # fmt: skip
CLIENT_ENTRY = {"module": "posthog_email", "function": "send_email",
                "args": ["{recipient}", "Hi", "<p>Hello</p>"]}  # fmt: skip
HOSTLESS = SENDER.replace('os.environ.get("EMAIL_API_HOST", "https://us.i.posthog.com")',
                          '"https://us.i.posthog.com"')  # fmt: skip
KEYED = SENDER.replace("os.environ['POSTHOG_EMAIL_API_KEY']", "'phx_live_4f9a'")
STUB = "import posthog_email\n\n\ndef send(to):\n    posthog_email.send_email(to, 'Hi', 'x')\n"


def email(sender: str = SENDER, wired: bool = True, broken: bool = False,
          entry: dict[str, Any] = APP_ENTRY, gut: bool = False) -> Edit:  # fmt: skip
    """The Flask app's email moved onto the client (`wired`), or not; `gut` removes its send
    and wires nothing."""

    def edit(app: Path) -> list[dict[str, Any]]:
        calls = [_write("posthog_email.py", sender),
                 _write(".posthog/email-probe.json", json.dumps(entry))]  # fmt: skip
        body = FLASK_API.replace("html=", "html=(") if broken else FLASK_API
        if wired or broken:
            imported = f"{CELERY}\nfrom posthog_email import send_email\n"
            calls.append(_changed(app, "app.py", (FLASK_SEND, body), (CELERY, imported)))
        elif gut:
            calls.append(_changed(app, "app.py", (FLASK_SEND, "    pass\n")))
        return calls

    return edit


_HEAD, _FUNCTION = SENDER.split("\n\n\ndef send_email(to,", 1)
CLASS_SENDER = f"{_HEAD}\n\n\nclass EmailClient:\n" + textwrap.indent(
    f"def send(self, to,{_FUNCTION}", "    "
)


def class_email(app: Path) -> list[dict[str, Any]]:
    """The Flask app's email moved onto a client class, called where Flask-Mail sent (app.py
    still imports flask_mail, whose calls are also named `send`)."""
    imported = f"{CELERY}\nfrom posthog_email import EmailClient\n"
    body = "    EmailClient().send(email_data['to'], email_data['subject'], email_data['body'])\n"
    return [_write("posthog_email.py", CLASS_SENDER),
            _write(".posthog/email-probe.json", json.dumps(APP_ENTRY)),
            _changed(app, "app.py", (FLASK_SEND, body), (CELERY, imported))]  # fmt: skip


def current_app_email(app: Path) -> list[dict[str, Any]]:
    """The client written and recorded, while the app still sends through Flask-Mail, now
    reached through Flask's `current_app` rather than the `mail` name."""
    imported = f"{CELERY}\nfrom flask import current_app\n"
    body = FLASK_SEND.replace("mail.send(msg)", "current_app.extensions['mail'].send(msg)")
    return [_write("posthog_email.py", SENDER),
            _write(".posthog/email-probe.json", json.dumps(CLIENT_ENTRY)),
            _changed(app, "app.py", (FLASK_SEND, body), (CELERY, imported))]  # fmt: skip


def stub_email(app: Path) -> list[dict[str, Any]]:
    """A stub that posts to the API, recorded as the send path; the app untouched."""
    entry = {"module": "stub_send", "function": "send", "args": ["{recipient}"]}
    return [_write("posthog_email.py", SENDER), _write("stub_send.py", STUB),
            _write(".posthog/email-probe.json", json.dumps(entry))]  # fmt: skip


def invented_email(app: Path) -> list[dict[str, Any]]:
    """A send module invented in an app that never sent email."""
    entry = {"module": "posthog_email", "function": "send_email",
             "args": ["{recipient}", "Hi", "x"]}  # fmt: skip
    return [_write("posthog_email.py", SENDER),
            _write(".posthog/email-probe.json", json.dumps(entry))]  # fmt: skip


TS_CLIENT = """type Email = { to: string; subject: string; text: string };

export async function sendEmail(options: Email) {
  const host = process.env.EMAIL_API_HOST ?? "https://us.i.posthog.com";
  const response = await fetch(`${host}/api/email/send`, {
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.POSTHOG_EMAIL_API_KEY}`,
               "Content-Type": "application/json" },
    body: JSON.stringify(options),
  });
  if (!response.ok) throw new Error(`email API: ${response.status}`);
}
"""
TRANSPORT = re.compile(r"\n\s*const transporter = nodemailer\.createTransport\(\{.*?\n\s*\}\);",
                       re.DOTALL)  # fmt: skip


def _off_nodemailer(text: str) -> str:
    text = text.replace('import nodemailer from "nodemailer";',
                        'import { sendEmail } from "../posthogEmail";')  # fmt: skip
    text = TRANSPORT.sub("", text)
    return text.replace("transporter.sendMail(mailOptions, (err) => {",
                        "sendEmail(mailOptions).then(() => undefined, (e: Error) => e)"
                        ".then((err) => {")  # fmt: skip


def starter_email(moved: bool) -> Edit:
    """The Express starter's three sends moved onto a TypeScript client (`moved`), or the
    client written and recorded while nodemailer stays."""

    def edit(app: Path) -> list[dict[str, Any]]:
        entry = ({"module": "src/controllers/contact.ts", "function": "postContact"} if moved
                 else {"module": "src/posthogEmail.ts", "function": "sendEmail"})  # fmt: skip
        calls = [_write("src/posthogEmail.ts", TS_CLIENT),
                 _write(".posthog/email-probe.json", json.dumps(entry))]  # fmt: skip
        if moved:
            for path in ("src/controllers/contact.ts", "src/controllers/user.ts"):
                calls.append(_write(path, _off_nodemailer((app / path).read_text())))
        return calls

    return edit


# --- MCP analytics: the Python and TypeScript weather servers ------------------------------

FASTMCP = "from mcp.server.fastmcp import FastMCP\n"
TRACKER = """import os

from posthog import Posthog

posthog = Posthog(os.environ["POSTHOG_API_KEY"], host=os.environ.get("POSTHOG_HOST"))


def track(tool):
    posthog.capture("mcp tool called", distinct_id="weather-server", properties={"tool": tool})
"""
# What fooled the probe: one event at start-up naming every tool (the shape of the wrapper's
# own `$mcp_tools_list`), and nothing when a tool is called.
STARTUP = (
    TRACKER
    + """

posthog.capture("$mcp_tools_list", distinct_id="weather-server",
                properties={"$mcp_listed_tool_names": ["get_alerts", "get_forecast"],
                            "tool": "get_alerts"})
"""
)
WRAPPED = 'mcp = FastMCP("weather")\n'
WRAPPER = """
import os

from posthog import Posthog
from posthog.mcp import instrument

instrument(mcp, Posthog(os.environ["POSTHOG_API_KEY"], host=os.environ.get("POSTHOG_HOST")))
"""
MCP_ENTRY = {"command": ["python", "weather.py"], "tool": "get_alerts",
             "arguments": {"state": "CA"}}  # fmt: skip
STUB_SERVER = (
    FASTMCP
    + """from analytics import track

mcp = FastMCP("weather")


@mcp.tool()
def get_alerts(state: str) -> str:
    track("get_alerts")
    return "none"


if __name__ == "__main__":
    mcp.run(transport="stdio")
"""
)


def mcp(tracker: str = TRACKER, called: bool = True) -> Edit:
    def edit(app: Path) -> list[dict[str, Any]]:
        source = (app / "weather.py").read_text()
        source = source.replace(FASTMCP, f"{FASTMCP}\nfrom analytics import track\n")
        if called:
            for tool in ("get_alerts", "get_forecast"):
                head = source.index(f"def {tool}(")
                body = source.index('    """\n', source.index('"""', head) + 3) + 8
                source = source[:body] + f'    track("{tool}")\n' + source[body:]
        return [_write("analytics.py", tracker), _write("weather.py", source),
                _write(".posthog/mcp-probe.json", json.dumps(MCP_ENTRY))]  # fmt: skip

    return edit


def mcp_wrapper(app: Path) -> list[dict[str, Any]]:
    """PostHog's own MCP wrapper around the server, as its docs show."""
    return [_changed(app, "weather.py", (WRAPPED, WRAPPED + WRAPPER)),
            _write(".posthog/mcp-probe.json", json.dumps(MCP_ENTRY))]  # fmt: skip


def mcp_stub(app: Path) -> list[dict[str, Any]]:
    """A one-tool stub server, recorded instead of the app's."""
    entry = {**MCP_ENTRY, "command": ["python", "stub_server.py"]}
    return [_write("analytics.py", TRACKER), _write("stub_server.py", STUB_SERVER),
            _write(".posthog/mcp-probe.json", json.dumps(entry))]  # fmt: skip


TS_TRACKER = """import { PostHog } from "posthog-node";

const posthog = new PostHog(process.env.POSTHOG_API_KEY ?? "", {
  host: process.env.POSTHOG_HOST,
  flushAt: 1,
  flushInterval: 0,
});

export function track(tool: string): void {
  posthog.capture({ distinctId: "weather-server", event: "mcp tool called", properties: { tool } });
}
"""
TS_STARTUP = (
    TS_TRACKER
    + """
posthog.capture({ distinctId: "weather-server", event: "server started",
                  properties: { tool: "get-alerts", tools: ["get-alerts", "get-forecast"] } });
"""
)
TS_ENTRY = {"command": ["node", "build/index.js"], "tool": "get-alerts",
            "arguments": {"state": "CA"}}  # fmt: skip
TS_IMPORT = 'import { z } from "zod";\n'
TS_HANDLERS = {"get-alerts": "  async ({ state }) => {\n",
               "get-forecast": "  async ({ latitude, longitude }) => {\n"}  # fmt: skip
TS_STUB = """import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { track } from "./build/analytics.js";

const server = new McpServer({ name: "weather", version: "1.0.0" });
server.registerTool("get-alerts", { description: "stub" }, async () => {
  track("get-alerts");
  return { content: [{ type: "text", text: "none" }] };
});
await server.connect(new StdioServerTransport());
"""


def mcp_ts(tracker: str = TS_TRACKER, called: bool = True, argument: str = "") -> Edit:
    def edit(app: Path) -> list[dict[str, Any]]:
        source = (app / "src/index.ts").read_text()
        source = source.replace(
            TS_IMPORT, f'{TS_IMPORT}import {{ track }} from "./analytics.js";\n'
        )
        for tool, handler in TS_HANDLERS.items():
            if called:
                assert handler in source, handler
                source = source.replace(handler, f"{handler}    track({argument or repr(tool)});\n")
        return [_write("src/analytics.ts", tracker), _write("src/index.ts", source),
                _write(".posthog/mcp-probe.json", json.dumps(TS_ENTRY)),
                call("bash", command="npm run build")]  # fmt: skip

    return edit


def mcp_ts_stub(app: Path) -> list[dict[str, Any]]:
    """A one-tool stub server beside the app's, recorded instead of it."""
    entry = {**TS_ENTRY, "command": ["node", "stub.mjs"]}
    return [*mcp_ts()(app)[:2], _write("stub.mjs", TS_STUB),
            _write(".posthog/mcp-probe.json", json.dumps(entry)),
            call("bash", command="npm run build")]  # fmt: skip


# --- revenue analytics: the Stripe checkout apps --------------------------------------------

PY_SERVER, NODE_SERVER = "server/python/server.py", "server/node/server.js"
PY_CALL = "        checkout_session = stripe.checkout.Session.create(\n"
NODE_CALL = "  const session = await stripe.checkout.sessions.create({\n"
PY_MISSED = "\n\ndef new_customer(email):\n    return stripe.Customer.create(email=email)\n"
NODE_MISSED = (
    "\nasync function newCustomer(email) {\n  return stripe.customers.create({ email });\n}\n"
)
PY_TAGGED_LATER = ("\n\ndef sign_up(user_id, email):\n"
                   "    customer = stripe.Customer.create(email=email)\n"
                   "    stripe.Customer.modify(customer['id'],\n"
                   "                           metadata={'posthog_person_distinct_id': user_id})\n"
                   "    return customer\n")  # fmt: skip
NODE_TAGGED_LATER = ("\nasync function signUp(req) {\n"
                     "  const customer = await stripe.customers.create({\n"
                     "    email: req.body.email,\n  });\n"
                     "  await stripe.customers.update(customer.id, {\n"
                     "    metadata: { posthog_person_distinct_id: req.body.distinctId },\n  });\n"
                     "  return customer;\n}\n")  # fmt: skip


def stripe(server: str, call_line: str, tagged: str, before: str = "", extra: str = "",
           broken: bool = False) -> Edit:  # fmt: skip
    def edit(app: Path) -> list[dict[str, Any]]:
        text = (app / server).read_text()
        assert call_line in text
        text = text.replace(call_line, before + call_line + tagged, 1) + extra
        if broken:
            text = text.replace(call_line, call_line.replace("(", "((", 1), 1)
        return [_write(server, text)]

    return edit


def py_tag(value: str) -> str:
    return f"            metadata={{'posthog_person_distinct_id': {value}}},\n"


def node_tag(value: str) -> str:
    return f"    metadata: {{ posthog_person_distinct_id: {value} }},\n"


PY_GUARD = ("        metadata = {}\n        if session.get('user'):\n"
            "            metadata['posthog_person_distinct_id'] = session['user']\n")  # fmt: skip
NODE_GUARD = ("  const metadata = {};\n  if (req.body.distinctId) {\n"
              "    metadata.posthog_person_distinct_id = req.body.distinctId;\n  }\n")  # fmt: skip


# --- replay vision: pages that load posthog.init -------------------------------------------

SNIPPET = """    <script>
      !function(t,e){var o,n,p,r;e.__SV||(window.posthog=e,e._i=[],e.init=function(i,s,a){
      })}(document,window.posthog||[]);
      posthog.init('{{ config.POSTHOG_KEY }}', {api_host: 'https://us.i.posthog.com'})
    </script>
"""
INIT = "posthog.init('phc_key', { api_host: 'https://us.i.posthog.com' });\n"
FLOWS = json.dumps({"flows": [{"name": "add a todo", "path": "/"}]})


def replay(*calls: dict[str, Any]) -> Edit:
    return lambda app: [*calls, _write(".posthog/replay-vision.json", FLOWS)]


def replay_in(path: str, old: str, new: str) -> Edit:
    return lambda app: [_changed(app, path, (old, new)),
                        _write(".posthog/replay-vision.json", FLOWS)]  # fmt: skip


EMAIL_DEPS = ("flask", "flask-mail", "celery")
MCP_DEPS = ("mcp<2", "httpx", "posthog")
DID_NOTHING: Edit = lambda app: []  # noqa: E731
CASES = [
    *[
        Case("flask-celery-example", "transactional-email", name, deserves, edit, deps=EMAIL_DEPS)
        for name, deserves, edit in [
            ("correct: the app's send path", "correct", email()),
            ("correct: the client the app calls", "correct", email(entry=CLIENT_ENTRY)),
            ("correct: a client class the app calls", "correct", class_email),
            ("key hard-coded", "sabotaged", email(KEYED)),
            ("host hard-coded to the cloud", "sabotaged", email(HOSTLESS)),
            (
                "client recorded, Flask-Mail still sends",
                "sabotaged",
                email(wired=False, entry=CLIENT_ENTRY),
            ),
            ("send gutted, client never called", "sabotaged", email(wired=False, gut=True)),
            ("Flask-Mail still sends, through current_app", "sabotaged", current_app_email),
            ("stub script recorded", "sabotaged", stub_email),
            ("syntax error", "sabotaged", email(broken=True)),
            ("did nothing", "sabotaged", DID_NOTHING),
        ]
    ],
    *[
        Case("typescript-node-starter", "transactional-email", name, deserves, edit)
        for name, deserves, edit in [
            ("correct: sends moved off nodemailer", "correct", starter_email(moved=True)),
            ("client recorded, nodemailer still sends", "sabotaged", starter_email(moved=False)),
        ]
    ],
    *[
        Case("mcp-weather-server-python", "mcp-analytics", name, deserves, edit, deps=MCP_DEPS)
        for name, deserves, edit in [
            ("correct: a capture in each tool", "correct", mcp()),
            ("correct: PostHog's MCP wrapper", "correct", mcp_wrapper),
            (
                "key hard-coded",
                "sabotaged",
                mcp(TRACKER.replace('os.environ["POSTHOG_API_KEY"]', '"phc_live_77"')),
            ),
            (
                "host hard-coded to the cloud",
                "sabotaged",
                mcp(
                    TRACKER.replace('os.environ.get("POSTHOG_HOST")', '"https://us.i.posthog.com"')
                ),
            ),
            ("capture never called", "sabotaged", mcp(called=False)),
            ("a capture at start-up only", "sabotaged", mcp(STARTUP, called=False)),
            ("stub server recorded", "sabotaged", mcp_stub),
            ("did nothing", "sabotaged", DID_NOTHING),
        ]
    ],
    *[
        Case(
            "mcp-weather-server-typescript",
            "mcp-analytics",
            name,
            deserves,
            edit,
            deps=("posthog-node",),
        )
        for name, deserves, edit in [
            ("correct: a capture in each tool", "correct", mcp_ts()),
            (
                "key hard-coded",
                "sabotaged",
                mcp_ts(TS_TRACKER.replace('process.env.POSTHOG_API_KEY ?? ""', '"phc_live_77"')),
            ),
            ("capture never called", "sabotaged", mcp_ts(called=False)),
            ("a capture at start-up only", "sabotaged", mcp_ts(TS_STARTUP, called=False)),
            ("stub server recorded", "sabotaged", mcp_ts_stub),
            ("type error", "sabotaged", mcp_ts(argument="42")),
            ("did nothing", "sabotaged", DID_NOTHING),
        ]
    ],
    *[
        Case(
            "stripe-checkout-python",
            "revenue-analytics",
            name,
            deserves,
            stripe(PY_SERVER, PY_CALL, tag, **more),
        )
        for name, deserves, tag, more in [
            ("correct: the session's user", "correct", py_tag("session.get('user')"), {}),
            (
                "correct: metadata built under a guard",
                "correct",
                "            metadata=metadata,\n",
                {"before": PY_GUARD},
            ),
            (
                "correct: a customer tagged right after it is created",
                "correct",
                py_tag("session.get('user')"),
                {"extra": PY_TAGGED_LATER},
            ),
            (
                "a call site missed",
                "sabotaged",
                py_tag("session.get('user')"),
                {"extra": PY_MISSED},
            ),
            ("a constant id", "sabotaged", py_tag("'anonymous'"), {}),
            ("a field nothing sets", "sabotaged", py_tag("current_user.posthog_id"), {}),
            ("syntax error", "sabotaged", py_tag("session.get('user')"), {"broken": True}),
        ]
    ],
    Case("stripe-checkout-python", "revenue-analytics", "did nothing", "sabotaged", DID_NOTHING),
    *[
        Case(
            "stripe-checkout-node",
            "revenue-analytics",
            name,
            deserves,
            stripe(NODE_SERVER, NODE_CALL, tag, **more),
        )
        for name, deserves, tag, more in [
            ("correct: the request's distinct id", "correct", node_tag("req.body.distinctId"), {}),
            (
                "correct: metadata built under a guard",
                "correct",
                "    metadata,\n",
                {"before": NODE_GUARD},
            ),
            (
                "correct: a customer tagged right after it is created",
                "correct",
                node_tag("req.body.distinctId"),
                {"extra": NODE_TAGGED_LATER},
            ),
            (
                "a call site missed",
                "sabotaged",
                node_tag("req.body.distinctId"),
                {"extra": NODE_MISSED},
            ),
            ("a constant id", "sabotaged", node_tag("'anonymous'"), {}),
            ("a field nothing sets", "sabotaged", node_tag("req.user.posthogId"), {}),
            ("syntax error", "sabotaged", node_tag("req.body.distinctId"), {"broken": True}),
        ]
    ],
    Case("stripe-checkout-node", "revenue-analytics", "did nothing", "sabotaged", DID_NOTHING),
    *[
        Case(app, "replay-vision", name, deserves, edit, flags=("--sequence", "linear"))
        for app, name, deserves, edit in [
            (
                "flask-celery-example",
                "correct: the snippet in a Jinja template",
                "correct",
                replay_in("templates/index.html", "  </head>", SNIPPET + "  </head>"),
            ),
            (
                "todomvc-javascript-es5",
                "correct: init in a script the page loads",
                "correct",
                replay_in("src/app.js", "(function () {", INIT + "(function () {"),
            ),
            (
                "todomvc-javascript-es5",
                "init in a file no page loads",
                "sabotaged",
                replay(_write("src/analytics.js", INIT)),
            ),
            (
                "tldr-python-client",
                "init in a command-line tool",
                "sabotaged",
                replay(_write("cli.js", "import posthog from 'posthog-js';\n" + INIT)),
            ),
        ]
    ],
    Case(
        "flask-celery-example",
        "self-driving",
        "goals never asked for (--ci)",
        "sabotaged",
        lambda app: [
            _write(
                ".posthog/self-driving.json",
                json.dumps({"goals": ["Grow weekly signups"], "repository": "github.com/acme/app"}),
            )
        ],
    ),
    Case(
        "tldr-python-client",
        "transactional-email",
        "a send module invented (does not fit)",
        "does not fit",
        invented_email,
    ),
    Case(
        "todomvc-javascript-es5",
        "revenue-analytics",
        "no Stripe (does not fit)",
        "does not fit",
        DID_NOTHING,
    ),
    Case(
        "stripe-checkout-node",
        "mcp-analytics",
        "no MCP server (does not fit)",
        "does not fit",
        DID_NOTHING,
    ),
]
