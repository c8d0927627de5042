"""Importing the Claude Agent SDK lazily, with the install command when it is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from wizard.errors import UsageError

SDK_PACKAGE = "claude-agent-sdk"
SDK_VERSION = "0.2.189"
INSTALL = "pip install 'wizard[anthropic]'"


def load_sdk() -> ModuleType:
    """The `claude_agent_sdk` module; a `UsageError` with the install command if missing."""
    try:
        return importlib.import_module("claude_agent_sdk")
    except ImportError as exc:
        raise UsageError(
            f"The anthropic harness needs {SDK_PACKAGE} {SDK_VERSION}, which is not installed.",
            f"Install it with `{INSTALL}` (in wizard's own environment), or use --harness pi.",
        ) from exc
