"""Runtime proofs: wizard runs the project's own code, in the run's OS sandbox, against a local
sink, and asserts what the sink receives.

The probe's command reaches one host, `PROBE_HOST`, which the sandbox runtime's proxy hands to
the sink (`SandboxPolicy.probing`): the package registries, the vendor's real hosts and the
gateway are all out of reach, so nothing leaves the machine. Inside the sandbox a small
forwarder listens on the loopback of the command's own network namespace, where the variable
the code reads for the vendor's host points, and passes each request through the proxy to the
sink, so code that ignores proxy settings (Node's `fetch`) reaches it too. The variables hold
probe values, never the user's: `.env` files stay closed to the probe as to every command.
"""

from __future__ import annotations

import json
import secrets
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.programs.types import SendProof
from wizard.runner.proofs.finding import Finding, failed, not_run, proven
from wizard.runner.proofs.sink import ProbeSink, Received
from wizard.tools.paths import ProjectRoot, Refusal
from wizard.tools.sandbox import SandboxPolicy
from wizard.tools.shell import run_command

PROBE_HOST = "probe-sink.invalid"
# Inside the probe's own network namespace: no other process of the machine listens there.
FORWARD_PORT = 47811
PROBE_TIMEOUT_S = 45.0
MISSING = "WIZARD-PROBE-MISSING"

_FORWARDER = f"""
import http.server, sys, urllib.error, urllib.request
class Forward(http.server.BaseHTTPRequestHandler):
    def handle_any(self):
        size = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(size) if size else None
        skip = ("host", "content-length", "connection", "transfer-encoding")
        headers = {{k: v for k, v in self.headers.items() if k.lower() not in skip}}
        request = urllib.request.Request("http://{PROBE_HOST}" + self.path, data=body,
                                         headers=headers, method=self.command)
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                status, data = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
        except Exception as error:
            status, data = 502, f"wizard's probe forwarder: {{error}}".encode()
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", {FORWARD_PORT}), Forward).serve_forever()
"""
# Calls the entry; a module the project does not have is a missing dependency (exit 3).
_CALL_PYTHON = f"""
import asyncio, importlib, json, os, sys
spec = json.loads(sys.argv[1])
sys.path.insert(0, os.getcwd())
try:
    module = importlib.import_module(spec["module"])
except ModuleNotFoundError as error:
    top = (error.name or "").split(".")[0]
    if not (os.path.exists(top + ".py") or os.path.isdir(top)):
        print("{MISSING}", top, flush=True)
        sys.exit(3)
    raise
result = getattr(module, spec["function"])(*spec.get("args", []), **spec.get("kwargs", {{}}))
if asyncio.iscoroutine(result):
    asyncio.run(result)
sys.stdout.flush()
os._exit(0)
"""
_CALL_NODE = f"""
const {{ pathToFileURL }} = await import("node:url");
const {{ resolve }} = await import("node:path");
const spec = JSON.parse(process.argv[1]);
let mod;
try {{
  mod = await import(pathToFileURL(resolve(spec.module)).href);
}} catch (error) {{
  if (error && ["ERR_MODULE_NOT_FOUND", "MODULE_NOT_FOUND"].includes(error.code)) {{
    const found = /Cannot find (?:package|module) '([^']+)'/.exec(error.message);
    console.log("{MISSING}", found ? found[1] : error.message);
    process.exit(3);
  }}
  throw error;
}}
const fn = mod[spec.function] ?? mod.default?.[spec.function];
await fn(...(spec.args ?? []));
process.exit(0);
"""
_NODE_SUFFIXES = (".js", ".mjs", ".cjs")
_TYPESCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts")


@dataclass(frozen=True)
class Entry:
    """The entry a skill recorded: where the code sends, and how to call it."""

    module: str
    function: str
    args: list[Any]
    kwargs: dict[str, Any]
    folder: str = "."

    @property
    def node(self) -> bool:
        return self.module.endswith(_NODE_SUFFIXES)

    @property
    def typescript(self) -> bool:
        return self.module.endswith(_TYPESCRIPT_SUFFIXES)


def read_entry(project: Path, file: str) -> Entry | str:
    """The entry recorded in `file`, or why there is none."""
    data = ProjectRoot(project).read_bytes(file)
    if isinstance(data, Refusal):
        return f"the skill recorded no entry to call ({file} is missing)" if (
            data.kind == "missing") else data.reason  # fmt: skip
    try:
        spec = json.loads(data)
        entry = Entry(str(spec["module"]), str(spec["function"]), list(spec.get("args", [])),
                      dict(spec.get("kwargs", {})), str(spec.get("folder", ".")))  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        return f"{file} is not an entry (module, function, args): {exc}"
    if not entry.function.isidentifier():
        return f"{file}: {entry.function!r} is not a function name"
    return entry


def _substitute(value: Any, recipient: str) -> Any:
    if isinstance(value, str):
        return value.replace("{recipient}", recipient)
    if isinstance(value, list):
        return [_substitute(item, recipient) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, recipient) for key, item in value.items()}
    return value


def _command(entry: Entry, project: Path, variables: dict[str, str], recipient: str) -> str:
    spec = {"module": entry.module, "function": entry.function,
            "args": _substitute(entry.args, recipient),
            "kwargs": _substitute(entry.kwargs, recipient)}  # fmt: skip
    if entry.node:
        call = f"node --input-type=module -e {shlex.quote(_CALL_NODE)}"
    else:
        venv = project / entry.folder / ".venv" / "bin" / "python"
        python = ".venv/bin/python" if venv.exists() else "python3"
        call = f"{python} -c {shlex.quote(_CALL_PYTHON)}"
    # The probe leaves nothing behind in the project: no bytecode caches.
    variables = {**variables, "PYTHONDONTWRITEBYTECODE": "1"}
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in variables.items())
    return "\n".join((
        f"cd {shlex.quote(entry.folder)} || exit 2",
        f"export {exports}",
        f"python3 -I -c {shlex.quote(_FORWARDER)} &",
        "forwarder=$!",
        "trap 'kill $forwarder 2>/dev/null' EXIT",
        f"for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/{FORWARD_PORT}) 2>/dev/null "
        "&& break; sleep 0.05; done",
        f"{call} {shlex.quote(json.dumps(spec))}",
    ))  # fmt: skip


async def send_probe(
    proof: SendProof,
    project: Path,
    sandbox: tuple[SandboxPolicy, Path, Path] | None,
    private: Path,
) -> Finding:
    """Call the recorded entry with the vendor's host on a local sink; proven when exactly
    one request reached `proof.path` carrying the probe's recipient and key."""
    if sandbox is None:
        return not_run("a probe runs only in the OS sandbox, so that nothing leaves the machine")
    entry = read_entry(project, proof.entry_file)
    if isinstance(entry, str):
        return failed(entry)
    if entry.typescript:
        return not_run(f"{entry.module} is TypeScript: build it, and record the built file")
    nonce = secrets.token_hex(6)
    recipient = f"probe-{nonce}@wizard-probe.invalid"
    key = f"wizard_probe_key_{nonce}"
    base = f"http://127.0.0.1:{FORWARD_PORT}"
    folder = Path(tempfile.mkdtemp(prefix="probe-", dir=private))
    policy, node, cli = sandbox
    scoped = policy.probing(PROBE_HOST, folder / "sink.sock").with_settings_file(folder)
    command = _command(entry, project, {proof.host_variable: base, proof.key_variable: key},
                       recipient)  # fmt: skip
    async with ProbeSink(folder / "sink.sock") as sink:
        code, output = await run_command(command, (scoped, node, cli), project, PROBE_TIMEOUT_S)
    return _judge(proof, entry, sink.received, code, output, recipient, key)


def _judge(proof: SendProof, entry: Entry, received: list[Received], code: int | None,
           output: str, recipient: str, key: str) -> Finding:  # fmt: skip
    called = f"{entry.module}:{entry.function}"
    if code == 3 and MISSING in output:
        name = (output.split(MISSING, 1)[1].split() or ["?"])[0]
        return not_run(f"a dependency is missing: {name} (install the project's dependencies "
                       "to prove it)")  # fmt: skip
    hits = [r for r in received if r.path.rstrip("/").endswith(proof.path.rstrip("/"))]
    tail = " ".join(output.strip().splitlines()[-3:])[:300]
    ended = "it timed out" if code is None else f"it exited {code}"
    if not hits:
        others = f" ({len(received)} request(s) to other paths)" if received else ""
        return failed(f"calling {called} sent nothing to {proof.path} at the host in "
                      f"{proof.host_variable}{others}; {ended}: {tail or 'no output'}")  # fmt: skip
    if len(hits) > 1:
        return failed(f"calling {called} sent {len(hits)} requests to {proof.path}, not one")
    hit = hits[0]
    if key not in hit.header("authorization") and key not in hit.header("x-api-key"):
        return failed(f"the request to {proof.path} did not carry the key from "
                      f"{proof.key_variable} (a key written into the code?)")  # fmt: skip
    if recipient.encode() not in hit.body:
        return failed(f"the request to {proof.path} did not carry the recipient it was given")
    if code != 0:
        return failed(f"the send reached {proof.path}, but calling {called} then failed "
                      f"({ended}): {tail or 'no output'}")  # fmt: skip
    return proven(f"calling {called} sent one {hit.method} {proof.path} carrying the probe's "
                  f"recipient and the key from {proof.key_variable}")  # fmt: skip
