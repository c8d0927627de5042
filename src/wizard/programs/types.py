"""What a program is: the skill it runs, its copy, its abort cases and its binding."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

POSTHOG_DOCS_URL = "https://posthog.com/docs"


@dataclass(frozen=True)
class AbortCase:
    """A screen for a known stop: shown when `match` (case-insensitive) finds the reason."""

    match: str
    message: str
    body: str
    docs_url: str | None = None

    def matches(self, reason: str) -> bool:
        """Whether this case is the one for `reason` (search semantics, like JS `test`)."""
        return re.search(self.match, reason, re.IGNORECASE) is not None


@dataclass(frozen=True)
class ProgramBinding:
    """How a program runs unless the user or the environment says otherwise."""

    sequence: str | None = None
    harness: str | None = None
    model: str | None = None


PostRunHook = Callable[[Path], None]


@dataclass(frozen=True)
class ProgramConfig:
    """One program: what a run is for, and what the user sees when it ends."""

    id: str
    label: str
    description: str
    skill: str
    spinner_message: str
    success_message: str
    docs_url: str = POSTHOG_DOCS_URL
    error_message: str | None = None
    abort_cases: tuple[AbortCase, ...] = ()
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    binding: ProgramBinding = field(default_factory=ProgramBinding)
    post_run: PostRunHook | None = None
    report_file: str | None = None
    prompt_intro: str = ""

    @property
    def failure_message(self) -> str:
        """The spinner's text when the run fails."""
        return self.error_message or f"{self.label} failed"

    def abort_case_for(self, reason: str) -> AbortCase | None:
        """The first declared case that matches `reason`."""
        return next((case for case in self.abort_cases if case.matches(reason)), None)
