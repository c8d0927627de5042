"""What a new pi release must keep for wizard's host (`host.mjs`), checked against the engine
installed: the first file an engine bump runs (the procedure: docs/internals.md, "Adopting
a new pi release"; the boundary, stop and sandbox tests it names come next).

Read from `host.mjs` itself, so a host that starts using more of pi is held to it too:

- every export of pi's SDK the host calls, and the static member it calls on it
  (`pi.SessionManager.inMemory`), exists, as what the host calls it as (a function, a
  class);
- every option the host gives `DefaultResourceLoader`, `createAgentSession`,
  `ModelRuntime.create` and `SettingsManager.inMemory` is one pi's code still reads: an
  option renamed away would be ignored without a word, and those are the `no*` switches
  that keep a project's own extensions, skills, prompts and context files from loading,
  and the settings that keep pi from requests wizard did not ask for (catalog refreshes,
  cache warming, telemetry headers);
- every event type the host reads from a session (`compact`) is one pi still emits.

`WIZARD_ENGINE_PREFIX` points it at another install (a candidate release in a scratch
folder) instead of wizard's own engine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from wizard.engines.bundle import installed_bundle, wheel_node
from wizard.runner.harness.pi.early import HOST_SCRIPT

pytestmark = pytest.mark.live
HOST = HOST_SCRIPT.read_text()


def _engine() -> tuple[Path, Path]:
    """pi's SDK entry and the Node that runs it."""
    if (prefix := os.environ.get("WIZARD_ENGINE_PREFIX")) is not None:
        (package,) = (Path(prefix) / "node_modules").glob("@*/pi-coding-agent")
        main = json.loads((package / "package.json").read_text())["main"]
        return package / main, wheel_node() or Path("node")  # a candidate may need a newer Node
    engine = installed_bundle()
    if engine is None:
        pytest.skip("pi is not installed: `wizard engines install pi`")
    return engine.sdk_entry, engine.node


def _called() -> dict[str, set[str]]:
    """The SDK's exports the host calls (`pi.X`), each with the members it calls on it."""
    called: dict[str, set[str]] = {}
    for name, member in re.findall(r"\bpi\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?", HOST):
        called.setdefault(name, set()).update([member] if member else [])
    return called


def _options(call: str) -> set[str]:
    """The option names of the object literal the host passes to `call`."""
    body = HOST.split(call + "({", 1)[1].split("});", 1)[0]
    return set(re.findall(r"^\s*([A-Za-z_]\w*)\s*[:,]", body, re.MULTILINE)) | set(
        re.findall(r"^\s*([A-Za-z_]\w*),?\s*$", body, re.MULTILINE)
    )


def _sdk_code(entry: Path) -> str:
    """Every JavaScript file of pi's packages (the SDK's and those beside it in its scope:
    its agent core emits the session's events)."""
    scope = next(p for p in entry.parents if p.name.startswith("@"))
    return "\n".join(path.read_text(errors="replace")
                     for path in scope.glob("*/dist/**/*.js"))  # fmt: skip


def test_the_host_reads_what_it_checks() -> None:
    """The reading of `host.mjs` finds what it calls: a check over nothing would pass."""
    called = _called()
    assert {"createAgentSession", "DefaultResourceLoader", "createBashToolDefinition"} <= set(
        called
    )
    assert "inMemory" in called["SessionManager"]
    assert {"noExtensions", "noSkills", "noContextFiles", "systemPromptOverride"} <= _options(
        "new pi.DefaultResourceLoader"
    )
    assert {"resourceLoader", "sessionManager", "customTools"} <= _options("pi.createAgentSession")
    assert {"credentials", "modelsPath", "refreshOnCreate"} <= _options("pi.ModelRuntime.create")
    assert {"retry", "cacheWarming", "enableInstallTelemetry"} <= _options(
        "pi.SettingsManager.inMemory"
    )


def test_every_export_the_host_calls_is_there() -> None:
    entry, node = _engine()
    called = _called()
    script = (
        "const m = await import(process.argv[1]); const asked = JSON.parse(process.argv[2]);"
        "const found = {}; for (const [name, members] of Object.entries(asked)) {"
        " const v = m[name]; found[name] = v === undefined ? null : { type: typeof v,"
        " members: Object.fromEntries(members.map((k) => [k, typeof v[k]])) }; }"
        "console.log(JSON.stringify(found));"
    )
    asked = {name: sorted(members) for name, members in called.items()}
    done = subprocess.run(
        [str(node), "--input-type=module", "-e", script, entry.as_uri(), json.dumps(asked)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    missing = sorted(name for name, what in found.items() if what is None)
    assert not missing, f"pi no longer exports: {missing}"
    not_callable = sorted(
        f"{name}.{member}" for name, what in found.items()
        for member, kind in what["members"].items() if kind != "function"
    )  # fmt: skip
    assert not not_callable, f"pi no longer has: {not_callable}"
    assert all(what["type"] == "function" for what in found.values())


@pytest.mark.parametrize(
    "call",
    [
        "new pi.DefaultResourceLoader",
        "pi.createAgentSession",
        "pi.ModelRuntime.create",
        "pi.SettingsManager.inMemory",
    ],
)
def test_every_option_the_host_gives_is_one_pi_reads(call: str) -> None:
    entry, _ = _engine()
    code = _sdk_code(entry)
    unread = sorted(name for name in _options(call) if not re.search(rf"\b{name}\b", code))
    assert not unread, f"pi's code no longer reads {call}'s options {unread}"


def test_every_event_the_host_reads_is_one_pi_emits() -> None:
    entry, _ = _engine()
    code = _sdk_code(entry)
    compact = HOST.split("function compact", 1)[1].split("\n}\n", 1)[0]
    read = set(re.findall(r'case "(\w+)"', compact))
    assert {"message_update", "message_end", "tool_execution_start", "tool_execution_end"} <= read
    missing = sorted(kind for kind in read if f'"{kind}"' not in code)
    assert not missing, f"pi no longer emits {missing}"
