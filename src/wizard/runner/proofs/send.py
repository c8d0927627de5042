"""The send probe: wizard calls the send path the skill recorded, in the run's sandbox, with the
vendor's host on a local sink (`forwarding`), and asserts the sink received exactly one
request carrying the probe's recipient and key.

Before it calls anything, the record is tested as a claim (`claims`): the entry must be the
app's (a function it had, or one that code it had calls), and the calls of the way the app
sent before (`SendProof.replaces`: SMTP, an email SDK) must be gone."""

from __future__ import annotations

import asyncio
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.programs.types import SendProof
from wizard.runner.proofs.claims import calls_left, entry_is_apps
from wizard.runner.proofs.codebase import Codebase
from wizard.runner.proofs.finding import Finding, failed, not_run, proven
from wizard.runner.proofs.forwarding import (
    NO_SANDBOX,
    PROBE_URL,
    Probe,
    own_credential,
    python_in,
    read_record,
)
from wizard.runner.proofs.sink import ProbeSink, Received
from wizard.tools.shell import COULD_NOT_RUN, SandboxedShell, run_command

PROBE_TIMEOUT_S = 45.0
MISSING = "WIZARD-PROBE-MISSING"
UNIMPORTABLE = "WIZARD-PROBE-UNIMPORTABLE"

# Calls the entry; a module the project does not have is a missing dependency (exit 3), and
# one that cannot be imported alone (it needs the app's settings) says so (exit 4).
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
except SyntaxError:  # the app's code is broken: that is the integration's failure
    raise
except Exception as error:
    import traceback
    traceback.print_exc()
    print("{UNIMPORTABLE}", type(error).__name__, error, flush=True)
    sys.exit(4)
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
  if (error instanceof SyntaxError) throw error;  // the app's code is broken
  console.log("{UNIMPORTABLE}", String(error && error.stack || error));
  process.exit(4);
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
    spec = read_record(project, file, "entry to call")
    if isinstance(spec, str):
        return spec
    try:
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


def _call(entry: Entry, project: Path, recipient: str) -> str:
    spec = {"module": entry.module, "function": entry.function,
            "args": _substitute(entry.args, recipient),
            "kwargs": _substitute(entry.kwargs, recipient)}  # fmt: skip
    if entry.node:
        call = f"node --input-type=module -e {shlex.quote(_CALL_NODE)}"
    else:
        call = f"{python_in(project, entry.folder)} -c {shlex.quote(_CALL_PYTHON)}"
    return f"{call} {shlex.quote(json.dumps(spec))}"


async def send_probe(
    proof: SendProof,
    code: Codebase,
    sandbox: SandboxedShell | None,
    private: Path,
    unsandboxable: str | None = None,
) -> Finding:
    """Call the recorded entry with the vendor's host on a local sink; proven when exactly
    one request reached `proof.path` carrying the probe's recipient and key."""
    project = code.root
    entry = read_entry(project, proof.entry_file)
    if isinstance(entry, str):
        return failed(entry)
    claim = await asyncio.to_thread(_claim, proof, code, entry)
    if isinstance(claim, Finding):
        return claim
    if sandbox is None or unsandboxable is not None:
        return not_run(unsandboxable or NO_SANDBOX)
    if entry.typescript:
        return not_run(f"{entry.module} is TypeScript: build it, and record the built file")
    probe = Probe.open(sandbox, private)
    recipient = f"probe-{probe.nonce}@wizard-probe.invalid"
    variables = {proof.host_variable: PROBE_URL, proof.key_variable: probe.key}
    command = probe.script(entry.folder, variables, _call(entry, project, recipient))
    async with ProbeSink(probe.socket) as sink:
        ended, output = await run_command(command, probe.sandbox, project, PROBE_TIMEOUT_S)
    found = _judge(proof, entry, sink.received, ended, output, recipient, probe.key)
    return proven(f"{found.text}; {claim}") if found.status == "proven" else found


def _claim(proof: SendProof, code: Codebase, entry: Entry) -> Finding | str:
    """What ties the record to the app, or a finding: why it proves nothing about it."""
    if left := calls_left(code, proof.replaces):
        more = f" (and {len(left) - 3} more)" if len(left) > 3 else ""
        return failed(f"the app still sends the old way: {'; '.join(left[:3])}{more}")
    why = entry_is_apps(code, entry.module, entry.function, entry.folder, proof.replaces)
    if isinstance(why, Finding) or not proof.replaces:
        return why
    return f"{why}, and no call of the old way of sending is left"


def _judge(proof: SendProof, entry: Entry, received: list[Received], code: int | None,
           output: str, recipient: str, key: str) -> Finding:  # fmt: skip
    called = f"{entry.module}:{entry.function}"
    if code == 3 and MISSING in output:
        name = (output.split(MISSING, 1)[1].split() or ["?"])[0]
        return not_run(f"a dependency is missing: {name} (install the project's dependencies "
                       "to prove it)")  # fmt: skip
    if code in COULD_NOT_RUN and not received:
        tail = " ".join(output.strip().splitlines()[-2:])[:200]
        return not_run(f"the probe could not start ({tail or f'exit {code}'})")
    if code == 4 and UNIMPORTABLE in output and not received:
        why = output.split(UNIMPORTABLE, 1)[1].strip().splitlines()[0][:200]
        return not_run(f"{entry.module} cannot be imported alone ({why}): it needs more of "
                       "the app than the probe gives, so the send cannot be tried")  # fmt: skip
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
    if code != 0 and (credential := own_credential(output)) is not None:
        return not_run(f"the send reached {proof.path} with the probe's recipient and key, "
                       f"then {called} failed on a credential of the app's own ({credential}) "
                       "the probe does not have: cannot tell whether it completes")  # fmt: skip
    if code != 0:
        return failed(f"the send reached {proof.path}, but calling {called} then failed "
                      f"({ended}): {tail or 'no output'}")  # fmt: skip
    return proven(f"calling {called} sent one {hit.method} {proof.path} carrying the probe's "
                  f"recipient and the key from {proof.key_variable}")  # fmt: skip
