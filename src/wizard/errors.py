"""Exceptions for bugs, misconfiguration and broken infrastructure.

Expected endings of a run (an abort, a refusal, no progress) are values in `outcome.py`,
never exceptions. What is here is raised when the run cannot happen as asked, and each
error carries a `hint` that names the fix::

    WizardError
    ├── UsageError          bad flags, unknown program/harness/sequence (exit 2)
    ├── ConfigError         no gateway configured, malformed skill or scenario
    └── EngineError         the agent engine is missing, fails to start, or breaks
        └── EngineInstallError   installing the engine failed
"""

from __future__ import annotations


class WizardError(Exception):
    """Base of every error `wizard` raises on purpose; `hint` says what to do about it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n{self.hint}" if self.hint else self.message


class UsageError(WizardError):
    """The command line asked for something that does not exist."""


class ConfigError(WizardError):
    """Configuration or input files are missing or malformed."""


class JournalError(WizardError):
    """The run journal could not record a snapshot: the run cannot be undone."""


class EngineError(WizardError):
    """The agent engine is missing, could not start, or broke during a run."""


class EngineInstallError(EngineError):
    """Installing the agent engine failed."""


class EngineChanged(EngineError):
    """An installed engine's files changed since wizard installed them: it is not run."""
