"""Importing the Claude Agent SDK lazily, with the install command when it is missing, and
checking the CLI it bundles is the one its wheel installed."""

from __future__ import annotations

import importlib
import importlib.util
from importlib import metadata
from pathlib import Path
from types import ModuleType

from wizard.engines.integrity import file_matches_record
from wizard.errors import EngineChanged, UsageError
from wizard.layout import state_root

SDK_PACKAGE = "claude-agent-sdk"
SDK_VERSION = "0.2.189"
INSTALL = "pip install 'wizard[anthropic]'"


def load_sdk() -> ModuleType:
    """The `claude_agent_sdk` module; a `UsageError` with the install command if missing."""
    try:
        return importlib.import_module("claude_agent_sdk")
    except ImportError as exc:
        raise _missing() from exc


def check_sdk_installed() -> None:
    """Whether the SDK is there, without importing it (that takes a second, which a run
    spends while it gets ready instead); a `UsageError` with the install command if not."""
    if importlib.util.find_spec("claude_agent_sdk") is None:
        raise _missing()


def _missing() -> UsageError:
    return UsageError(
        f"The anthropic harness needs {SDK_PACKAGE} {SDK_VERSION}, which is not installed.",
        f"Install it with `{INSTALL}` (in wizard's own environment), or use --harness pi.",
    )


def bundled_cli() -> Path | None:
    """The Claude CLI the SDK's wheel put beside it; None for an SDK built without one (that
    one runs the CLI on PATH), or none installed."""
    entry = _bundled_entry()
    path = None if entry is None else Path(str(entry.locate()))
    return path if path is not None and path.is_file() else None


def check_bundled_cli() -> None:
    """The Claude CLI the SDK ships is byte for byte the one in its wheel's RECORD;
    `EngineChanged` with the reinstall command otherwise."""
    entry = _bundled_entry()
    if entry is None or entry.hash is None or entry.hash.mode != "sha256":
        return  # no SDK (load_sdk names the fix), or one that uses the CLI on PATH
    path = Path(str(entry.locate()))
    cache = state_root() / "engines" / "claude-cli.json"
    if not path.is_file() or not file_matches_record(path, entry.hash.value, cache):
        raise EngineChanged(
            f"The Claude CLI in {path} is not the one {SDK_PACKAGE} {SDK_VERSION} installed; "
            "wizard does not run a changed engine.",
            f"Reinstall it: `pip install --force-reinstall '{SDK_PACKAGE}=={SDK_VERSION}'`.",
        )


def _bundled_entry() -> metadata.PackagePath | None:
    try:
        files = metadata.distribution(SDK_PACKAGE).files or []
    except metadata.PackageNotFoundError:
        return None
    return next((f for f in files if f.name == "claude" and "_bundled" in f.parts), None)
