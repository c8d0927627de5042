"""`wizard doctor`: what a run needs, checked in one place, as rows the CLI prints.

Each check is a value (`Check`): what was looked at, whether it is fine, what was found, and
the fix when it is not. Nothing here changes the machine.
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Mapping
from dataclasses import dataclass

from wizard.engines import bundle as engine
from wizard.errors import ConfigError, WizardError
from wizard.runner.gateway import GatewayFlags, resolve_gateway
from wizard.tools.sandbox import check_sandbox, sandbox_enabled


@dataclass(frozen=True)
class Check:
    """One line of the report; `ok` None means informational (it fails nothing)."""

    name: str
    ok: bool | None
    detail: str
    fix: str = ""


def _node() -> Check:
    try:
        node = engine.node_runtime()
    except WizardError as exc:
        return Check("Node.js", False, exc.message, exc.hint or "")
    detail = f"{node.version} ({node.path}), {node.why}; pi needs ≥ {engine.MIN_NODE_TEXT}"
    return Check("Node.js", True, detail)


def _pi() -> Check:
    prefix = engine.pi_prefix()
    if engine.pi_files_installed():
        try:  # what a run checks before it starts the engine
            engine.check_unchanged(prefix)
        except WizardError as exc:
            return Check("pi engine", False, exc.message, exc.hint or "")
        detail = (
            f"{engine.PI_VERSION} with the sandbox runtime {engine.SANDBOX_VERSION}, in {prefix}"
        )
        return Check("pi engine", True, detail)
    return Check(
        "pi engine",
        None,  # not a failure: the first run installs it
        f"not installed yet: the first run installs {engine.PI_VERSION} (about a minute)",
        "or now: wizard engines install pi",
    )


def _sandbox(environ: Mapping[str, str]) -> Check:
    if not sandbox_enabled(environ, False):
        return Check("OS sandbox", False, "off (WIZARD_SANDBOX=off)", "unset WIZARD_SANDBOX")
    try:
        check_sandbox()
    except WizardError as exc:
        return Check("OS sandbox", False, exc.message, exc.hint or "")
    tools = "sandbox-exec" if platform.system() == "Darwin" else "bubblewrap, socat, ripgrep"
    return Check("OS sandbox", True, f"ready ({tools})")


def _sdk() -> Check:
    try:
        version = importlib.metadata.version("claude-agent-sdk")
    except importlib.metadata.PackageNotFoundError:
        return Check("Claude Agent SDK", None, "not installed (only the anthropic harness uses it)")
    return Check("Claude Agent SDK", None, version)


def _gateway(environ: Mapping[str, str], flags: GatewayFlags) -> Check:
    try:
        gateway = resolve_gateway(flags, environ)
    except WizardError as exc:
        return Check("gateway", False, exc.message, exc.hint or "")
    key = "a key is set" if gateway.key else "no key"
    detail = f"{gateway.url} ({gateway.api}, {key})"
    try:
        ok, said, fix = _ask(gateway.url, gateway.api, gateway.key)
    except ConfigError as exc:  # the CA bundle the environment names cannot be read
        return Check("gateway", False, f"{detail}: {exc.message}", exc.hint or "")
    return Check("gateway", ok, f"{detail}: {said}", fix)


def _ask(url: str, api: str, key: str | None) -> tuple[bool, str, str]:
    """Ask the gateway for its model list, as a run would reach it: whether that went well,
    what it showed, and the fix if it did not."""
    from wizard.runner.harness.proxy import ask_for_models, gateway_answer, unreachable_fix

    status, body, unreachable = ask_for_models(url, api, key)
    if unreachable is not None or status is None:
        reason = unreachable or "no answer"
        return False, f"could not connect ({reason})", unreachable_fix(reason)
    secure = "over TLS, its certificate trusted; " if url.startswith("https:") else ""
    if status == 200:
        return True, f"{secure}the key was accepted (GET /v1/models)", ""
    if status in (404, 405):
        return True, f"{secure}the key was not checked (the gateway has no model list)", ""
    answered, check = gateway_answer(status, body)
    return False, answered, check


def run_checks(environ: Mapping[str, str], gateway: GatewayFlags | None = None) -> list[Check]:
    """Every check, in the order a run needs them (`gateway`: the command line's settings)."""
    return [_node(), _pi(), _sandbox(environ), _sdk(), _gateway(environ, gateway or GatewayFlags())]
