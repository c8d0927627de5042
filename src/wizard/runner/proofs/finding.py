"""What one proof found."""

from __future__ import annotations

from dataclasses import dataclass

from wizard.outcome import ProofStatus


@dataclass(frozen=True)
class Finding:
    """A proof's answer: `text` is the evidence when proven, else why not."""

    status: ProofStatus
    text: str


def proven(text: str) -> Finding:
    return Finding("proven", text)


def failed(text: str) -> Finding:
    return Finding("failed", text)


def not_run(text: str) -> Finding:
    return Finding("not_run", text)
