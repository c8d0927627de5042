"""What every runtime probe shares: the one host it reaches, the sink behind it, and the
forwarder inside the sandbox.

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
import re
import secrets
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.tools.paths import ProjectRoot, Refusal
from wizard.tools.shell import SandboxedShell

PROBE_HOST = "probe-sink.invalid"
# Inside the probe's own network namespace: no other process of the machine listens there.
FORWARD_PORT = 47811

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

# Where the code under probe finds the vendor: the forwarder, in its own network namespace.
PROBE_URL = f"http://127.0.0.1:{FORWARD_PORT}"
NO_SANDBOX = "a probe runs only in the OS sandbox, so that nothing leaves the machine"


@dataclass(frozen=True)
class Probe:
    """One probe's sandbox (reaching only the sink) and its values."""

    sandbox: SandboxedShell
    socket: Path
    key: str
    nonce: str

    @classmethod
    def open(cls, sandbox: SandboxedShell, private: Path) -> Probe:
        """A probe whose settings and sink socket go in a fresh folder under `private`."""
        folder = Path(tempfile.mkdtemp(prefix="probe-", dir=private))
        socket = folder / "sink.sock"
        scoped = sandbox.policy.probing(PROBE_HOST, socket).with_settings_file(folder)
        nonce = secrets.token_hex(6)
        return cls(sandbox.with_policy(scoped), socket, f"wizard_probe_key_{nonce}", nonce)

    def script(self, folder: str, variables: Mapping[str, str], command: str) -> str:
        """`command` in `folder` of the project, with `variables` set and the forwarder up."""
        # The probe leaves nothing behind in the project: no bytecode caches.
        values = {**variables, "PYTHONDONTWRITEBYTECODE": "1"}
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in values.items())
        return "\n".join((
            f"cd {shlex.quote(folder)} || exit 2",
            f"export {exports}",
            f"python3 -I -c {shlex.quote(_FORWARDER)} </dev/null >/dev/null &",
            "forwarder=$!",
            "trap 'kill $forwarder 2>/dev/null' EXIT",
            f"for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/{FORWARD_PORT}) 2>/dev/null "
            "&& break; sleep 0.05; done",
            command,
        ))  # fmt: skip


def read_record(project: Path, file: str, what: str) -> dict[str, Any] | str:
    """The JSON object the skill recorded in `file` for a probe (`what` it names), read
    through the resolver; or why there is none."""
    data = ProjectRoot(project).read_bytes(file)
    if isinstance(data, Refusal):
        return f"the skill recorded no {what} ({file} is missing)" if (
            data.kind == "missing") else data.reason  # fmt: skip
    try:
        record = json.loads(data)
    except ValueError as exc:
        return f"{file} is not JSON: {exc}"
    if not isinstance(record, dict):
        return f"{file} is not a JSON object"
    folder = Path(str(record.get("folder", ".")))
    if folder.is_absolute() or ".." in folder.parts:
        return f"{file}: the folder {str(folder)!r} is not one of the project's"
    return record


def python_in(project: Path, folder: str) -> str:
    """The project's own interpreter (its `.venv`) when it has one, else `python3`."""
    return ".venv/bin/python" if (project / folder / ".venv/bin/python").exists() else "python3"


def own_credential(said: str) -> str | None:
    """The credential of its own a server or tool says it lacks, if it says so."""
    for pattern in _CREDENTIALS:
        if found := pattern.search(said):
            return found[0].strip()[:120]
    return None


_CREDENTIALS = (
    re.compile(r"KeyError: '([A-Z][A-Z0-9_]*(KEY|TOKEN|SECRET|PASSWORD))'"),
    re.compile(
        r"\b[A-Z][A-Z0-9_]*(API_KEY|TOKEN|SECRET)\b[^\n]{0,60}\b(not set|missing|required|"
        r"undefined|must be set)",
        re.IGNORECASE,
    ),
    re.compile(
        r"(missing|no|invalid) (api[ _]?key|access token|credentials?)\b[^\n]{0,60}", re.IGNORECASE
    ),
)
