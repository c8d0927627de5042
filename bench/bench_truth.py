"""Benchmark: does "set up" tell the truth on real apps nobody here wrote?

Run: .venv/bin/python bench/bench_truth.py [CORPUS] [--apps A,B] [--no-deps]
                                           [--json bench/results/truth.json]

CORPUS is the folder of real apps (`../shared/corpus` by default; the suite runs a subset on
`tests/corpus`). For each app and the program that fits it, a scripted transcript does what an
agent would: the correct integration, or a sabotaged one (the key written into the code, the
host hard-coded to the public cloud, the capture wired to a path never called, a call site
missed, a syntax error, a run that did nothing); on the apps no program fits, the agent stops
on the program's abort case. Each transcript is a real `wizard run` on a fresh copy: the real
pi engine against the scripted gateway on 127.0.0.1, the sandbox, the journal, the checks and
the proofs. The bench prints the confusion matrix (what each run ended as, against what its
transcript deserves) and what each proof cost.

Runtime probes need the app's own dependencies: unless `--no-deps`, the bench installs them
once per app from the package registries (a virtualenv for a Python app, `npm install` for a
Node one) and copies them into each copy (`.venv`, `node_modules`); without them, a correct
integration ends "set up, not proven", truthfully. The TypeScript MCP server's transcripts
build it (`npm run build`) as an agent would, so its type check runs with real dependencies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.signals import DEFAULT_GATEWAY_MARKER
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply, said

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
Edit = Callable[[Path], list[dict[str, Any]]]  # the tool calls a transcript makes on an app

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
FASTMCP = "from mcp.server.fastmcp import FastMCP\n"
EMAIL_ENTRY = {"module": "app", "function": "send_async_email",
               "args": [{"to": "{recipient}", "subject": "Hi", "body": "Hello"}]}  # fmt: skip
TRACKER = """import os

from posthog import Posthog

posthog = Posthog(os.environ["POSTHOG_API_KEY"], host=os.environ.get("POSTHOG_HOST"))


def track(tool):
    posthog.capture("mcp tool called", distinct_id="weather-server", properties={"tool": tool})
"""
MCP_ENTRY = {
    "command": ["python", "weather.py"],
    "tool": "get_alerts",
    "arguments": {"state": "CA"},
}
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
TS_ENTRY = {"command": ["node", "build/index.js"], "tool": "get-alerts",
            "arguments": {"state": "CA"}}  # fmt: skip
TS_IMPORT = 'import { z } from "zod";\n'
TS_HANDLERS = {"get-alerts": "  async ({ state }) => {\n",
               "get-forecast": "  async ({ latitude, longitude }) => {\n"}  # fmt: skip
PY_CALL = "        checkout_session = stripe.checkout.Session.create(\n"
PY_TAGGED = PY_CALL + "            metadata={'posthog_person_distinct_id': session.get('user')},\n"
NODE_CALL = "  const session = await stripe.checkout.sessions.create({\n"
NODE_TAGGED = NODE_CALL + "    metadata: { posthog_person_distinct_id: req.body.distinctId },\n"


def _write(path: str, content: str) -> dict[str, Any]:
    return call("write", path=path, content=content)


def _edited(app: Path, path: str, old: str, new: str) -> dict[str, Any]:
    text = (app / path).read_text()
    assert old in text, (path, old)
    return _write(path, text.replace(old, new, 1))


def _email(sender: str = SENDER, wired: bool = True, broken: bool = False) -> Edit:
    def edit(app: Path) -> list[dict[str, Any]]:
        body = FLASK_API if wired else FLASK_SEND
        if broken:
            body = FLASK_API.replace("html=", "html=(")
        calls = [_write("posthog_email.py", sender),
                 _write(".posthog/email-probe.json", json.dumps(EMAIL_ENTRY))]  # fmt: skip
        if wired or broken:
            app_py = (app / "app.py").read_text().replace(FLASK_SEND, body, 1)
            app_py = app_py.replace(CELERY, f"{CELERY}\nfrom posthog_email import send_email\n")
            calls.append(_write("app.py", app_py))
        return calls

    return edit


def _mcp(tracker: str = TRACKER, called: bool = True) -> Edit:
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


def _mcp_ts(tracker: str = TS_TRACKER, called: bool = True, argument: str = "") -> Edit:
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


def _stripe(
    server: str, call_line: str, tagged: str, extra: str = "", broken: bool = False
) -> Edit:
    def edit(app: Path) -> list[dict[str, Any]]:
        text = (app / server).read_text().replace(call_line, tagged, 1) + extra
        if broken:
            text = text.replace(tagged, tagged.replace("(", "((", 1), 1)
        return [_write(server, text)]

    return edit


@dataclass(frozen=True)
class Case:
    app: str
    program: str
    name: str
    deserves: str  # proven | not proven | aborted
    edit: Edit | None = None
    abort: str | None = None
    deps: tuple[str, ...] = ()
    env_keys: tuple[str, ...] = ()


EMAIL_DEPS = ("flask", "flask-mail", "celery")
MCP_DEPS = ("mcp<2", "httpx", "posthog")
HOSTLESS = SENDER.replace('os.environ.get("EMAIL_API_HOST", "https://us.i.posthog.com")',
                          '"https://us.i.posthog.com"')  # fmt: skip
KEYED = SENDER.replace("os.environ['POSTHOG_EMAIL_API_KEY']", "'phx_live_4f9a'")
PY_SERVER, NODE_SERVER = "server/python/server.py", "server/node/server.js"
PY_MISSED = "\n\ndef new_customer(email):\n    return stripe.Customer.create(email=email)\n"
NODE_MISSED = (
    "\nasync function newCustomer(email) {\n  return stripe.customers.create({ email });\n}\n"
)
CASES = [
    *[
        Case("flask-celery-example", "transactional-email", name, deserves, edit, deps=EMAIL_DEPS)
        for name, deserves, edit in [
            ("correct", "proven", _email()),
            ("key hard-coded", "not proven", _email(KEYED)),
            ("host hard-coded to the cloud", "not proven", _email(HOSTLESS)),
            ("client never called", "not proven", _email(wired=False)),
            ("syntax error", "not proven", _email(broken=True)),
            ("did nothing", "not proven", lambda app: []),
        ]
    ],
    *[
        Case("mcp-weather-server-python", "mcp-analytics", name, deserves, edit, deps=MCP_DEPS)
        for name, deserves, edit in [
            ("correct", "proven", _mcp()),
            (
                "key hard-coded",
                "not proven",
                _mcp(TRACKER.replace('os.environ["POSTHOG_API_KEY"]', '"phc_live_77"')),
            ),
            (
                "host hard-coded to the cloud",
                "not proven",
                _mcp(
                    TRACKER.replace('os.environ.get("POSTHOG_HOST")', '"https://us.i.posthog.com"')
                ),
            ),
            ("capture never called", "not proven", _mcp(called=False)),
            ("did nothing", "not proven", lambda app: []),
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
            ("correct", "proven", _mcp_ts()),
            (
                "key hard-coded",
                "not proven",
                _mcp_ts(TS_TRACKER.replace('process.env.POSTHOG_API_KEY ?? ""', '"phc_live_77"')),
            ),
            ("capture never called", "not proven", _mcp_ts(called=False)),
            ("type error", "not proven", _mcp_ts(argument="42")),
            ("did nothing", "not proven", lambda app: []),
        ]
    ],
    *[
        Case(app, "revenue-analytics", name, deserves, edit)
        for app, server, line, tagged, missed in [
            ("stripe-checkout-python", PY_SERVER, PY_CALL, PY_TAGGED, PY_MISSED),
            ("stripe-checkout-node", NODE_SERVER, NODE_CALL, NODE_TAGGED, NODE_MISSED),
        ]
        for name, deserves, edit in [
            ("correct", "proven", _stripe(server, line, tagged)),
            ("a call site missed", "not proven", _stripe(server, line, tagged, missed)),
            ("syntax error", "not proven", _stripe(server, line, tagged, broken=True)),
            ("did nothing", "not proven", lambda app: []),
        ]
    ],
    Case(
        "tldr-python-client",
        "transactional-email",
        "no program fits",
        "aborted",
        abort="no email sending code found",
    ),
    Case(
        "todomvc-javascript-es5",
        "revenue-analytics",
        "no program fits",
        "aborted",
        abort="could not find a stripe integration",
    ),
]


@dataclass
class Result:
    case: Case
    ended: str
    exit_code: int
    seconds: float
    proofs: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""


def _ended(outcome: dict[str, Any]) -> str:
    """What a run ended as, in the matrix's words."""
    status = outcome["status"]
    if status == "succeeded":
        proofs = (outcome.get("verification") or {}).get("proofs") or []
        if proofs and all(proof["status"] == "proven" for proof in proofs):
            return "proven"
        return "set up, not proven"
    return status


def _deps(cache: Path, corpus: Path, case: Case) -> Path | None:
    """The app's dependencies, installed once: a virtualenv (`.venv`) for a Python app, the
    app's own `npm install` plus `case.deps` (`node_modules`) for a Node one; None if they
    cannot be installed."""
    node = (corpus / case.app / "package.json").is_file()
    folder = cache / case.app / ("node_modules" if node else ".venv")
    if (cache / case.app / "ready").exists():
        return folder
    shutil.rmtree(cache / case.app, ignore_errors=True)
    (cache / case.app).mkdir(parents=True)
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        if node:
            shutil.copy(corpus / case.app / "package.json", cache / case.app / "package.json")
            for command in (
                ["npm", "install", "--no-audit", "--no-fund"],
                ["npm", "install", "--no-audit", "--no-fund", *case.deps],
            ):
                subprocess.run(command, cwd=cache / case.app, check=True, capture_output=True,
                               timeout=600)  # fmt: skip
        else:
            subprocess.run([base, "-m", "venv", str(folder)], check=True, capture_output=True)
            subprocess.run([str(folder / "bin" / "pip"), "install", "-q", *case.deps],
                           check=True, capture_output=True, timeout=600)  # fmt: skip
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"  (could not install the dependencies of {case.app}: {exc})", file=sys.stderr)
        return None
    (cache / case.app / "ready").write_text("")
    return folder


async def run_case(case: Case, corpus: Path, work: Path, cache: Path | None) -> Result:
    project = work / f"{case.app}-{case.name.replace(' ', '-')}"
    shutil.copytree(corpus / case.app, project, symlinks=True)
    if case.deps and cache is not None and (installed := _deps(cache, corpus, case)):
        subprocess.run(["cp", "-a", str(installed), str(project / installed.name)], check=True)
    if case.program == "transactional-email":
        (project / ".env").write_text("POSTHOG_EMAIL_API_KEY=phx_the_users_own_key\n")
    if case.abort is not None:
        responses = [reply(call("read", path="README.md")), said(f"[ABORT] {case.abort}\n")]
    else:
        assert case.edit is not None
        # A run that did nothing still looks around first (one with no tool call at all
        # already ends failed).
        edits = case.edit(corpus / case.app) or [call("read", path="README.md")]
        responses = [reply(*edits), said("Done."), said("-")]
    outcome_file = work / f"{project.name}.json"
    started = time.monotonic()
    async with ScriptedGateway({"responses": responses}) as gateway:
        env = {**os.environ, "WIZARD_GATEWAY_URL": gateway.url, "WIZARD_GATEWAY_KEY": "",
               "WIZARD_GATEWAY_API": "anthropic-messages", "WIZARD_SKILLS_DIR": "",
               "WIZARD_GATEWAY_REFUSAL_MARKER": DEFAULT_GATEWAY_MARKER}  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "wizard", "run", case.program, "--project", str(project),
            "--ci", "--outcome-json", str(outcome_file), env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await process.communicate()
    seconds = time.monotonic() - started
    if not outcome_file.exists():
        return Result(case, "no outcome", process.returncode or -1, seconds,
                      reason=stderr.decode(errors="replace")[-500:])  # fmt: skip
    outcome = json.loads(outcome_file.read_text())
    proofs = (outcome.get("verification") or {}).get("proofs") or []
    return Result(case, _ended(outcome), outcome["exit_code"], seconds, proofs,
                  outcome.get("reason") or "")  # fmt: skip


def matrix(results: list[Result]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter[str]] = {}
    for result in results:
        table.setdefault(result.case.deserves, Counter())[result.ended] += 1
    return {row: dict(counts) for row, counts in table.items()}


def false_proven(results: list[Result]) -> list[Result]:
    return [r for r in results if r.ended == "proven" and r.case.deserves != "proven"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--apps", help="only these apps (comma-separated)")
    parser.add_argument("--no-deps", action="store_true", help="install no dependencies")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "wizard-bench")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    apps = set(args.apps.split(",")) if args.apps else None
    cases = [c for c in CASES if (apps is None or c.app in apps) and (args.corpus / c.app).is_dir()]
    work = Path(tempfile.mkdtemp(prefix="wizard-truth-", dir="/var/tmp"))
    cache = None if args.no_deps else args.cache
    results = []
    try:
        for case in cases:
            result = asyncio.run(run_case(case, args.corpus, work, cache))
            results.append(result)
            cost = ", ".join(f"{p['name']}: {p['status']} in {p['seconds']:.2f} s"
                             for p in result.proofs) or "no proof ran"  # fmt: skip
            print(
                f"{case.app:28} {case.name:30} deserves {case.deserves:10} "
                f"ended {result.ended:18} ({result.seconds:.1f} s; {cost})",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = matrix(results)
    columns = ["proven", "set up, not proven", "unverified", "aborted", "failed", "no outcome"]
    print("\ndeserves \\ ended  " + " | ".join(columns))
    for row in ("proven", "not proven", "aborted"):
        if row in table:
            print(f"{row:17} " + " | ".join(f"{table[row].get(c, 0):>{len(c)}}" for c in columns))
    wrong = false_proven(results)
    print(f"\nfalse 'proven': {len(wrong)} of {len(results)} runs")
    if args.json:
        args.json.write_text(json.dumps({
            "matrix": table, "false_proven": len(wrong),
            "runs": [{"app": r.case.app, "program": r.case.program, "case": r.case.name,
                      "deserves": r.case.deserves, "ended": r.ended, "exit_code": r.exit_code,
                      "seconds": round(r.seconds, 2), "reason": r.reason,
                      "proofs": r.proofs} for r in results],
        }, indent=2) + "\n")  # fmt: skip
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
