"""How a run ended, as values: what a harness returns and what a sequence hands the CLI.

A harness returns an `AgentResult`; a sequence turns it into an `Outcome`, which carries the
outro the user saw; `exit_code` is the one mapping from an `Outcome` to a process exit code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Literal

from wizard.events import SCHEMA_VERSION
from wizard.signals import AbortSource

OutcomeStatus = Literal[
    "succeeded", "unverified", "aborted", "failed", "cancelled", "usage_error", "not_applicable"
]
OutroKind = Literal["success", "error", "cancel"]


class AgentErrorType(StrEnum):
    """Why an agent run did not succeed (the TypeScript wizard's values, plus our fence's)."""

    ABORT = "WIZARD_ABORT"
    API_ERROR = "WIZARD_API_ERROR"
    RATE_LIMIT = "WIZARD_RATE_LIMIT"
    MCP_MISSING = "WIZARD_MCP_MISSING"
    RESOURCE_MISSING = "WIZARD_RESOURCE_MISSING"
    NO_PROGRESS = "WIZARD_NO_PROGRESS"
    INCOMPLETE_TASKS = "WIZARD_INCOMPLETE_TASKS"
    SECURITY_VIOLATION = "WIZARD_SECURITY_VIOLATION"
    ENGINE_FAILURE = "WIZARD_ENGINE_FAILURE"
    BUDGET_EXCEEDED = "WIZARD_BUDGET_EXCEEDED"


@dataclass(frozen=True)
class Usage:
    """What a run (or one task of it) used: model requests and their retries, tokens, the
    agent's turns, the time a model request was in flight (`model_seconds`), the time tools
    ran, the wall time, and the cost (None for a model without a known price)."""

    model_requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    turns: int = 0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    wall_seconds: float = 0.0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        """Both together: counts and times summed; a cost only if each that made a request
        has one (an empty `Usage()`, the start of a sum, has none and needs none)."""
        costs = [u.cost_usd for u in (self, other) if u.model_requests or u.cost_usd is not None]
        cost = None
        if costs and all(c is not None for c in costs):
            cost = round(sum(c for c in costs if c is not None), 8)
        summed = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name != "cost_usd"
        }
        return replace(self, **summed, cost_usd=cost)

    def summary(self) -> str:
        """One line a user reads."""
        cost = f", ${self.cost_usd:.2f}" if self.cost_usd is not None else ""
        return (
            f"Model: {self.model_requests} request{'s' if self.model_requests != 1 else ''}, "
            f"{self.model_seconds:.0f} s working, {self.input_tokens:,} tokens in, "
            f"{self.output_tokens:,} out{cost}; {self.wall_seconds:.0f} s in all."
        )


@dataclass(frozen=True)
class AgentResult:
    """What a harness returns: success when `error` is None."""

    error: AgentErrorType | None = None
    message: str | None = None
    abort_source: AbortSource | None = None
    dashboard_url: str | None = None
    notebook_url: str | None = None
    # When the run ended itself (its stop marker latched, or the fence's violation), on the
    # monotonic clock: of several runs that stop at once, the first in time decides.
    stopped_at: float | None = field(default=None, compare=False)
    # What the run used (the driver measures it at the gateway edge).
    usage: Usage | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the run succeeded."""
        return self.error is None


@dataclass(frozen=True)
class Outro:
    """The closing screen a run showed the user."""

    kind: OutroKind
    message: str
    body: str | None = None
    docs_url: str | None = None
    report_file: str | None = None
    dashboard_url: str | None = None
    notebook_url: str | None = None


CheckStatus = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class CheckResult:
    """One check run after the agent's work: what ran, how it ended, and how it ended on the
    tree before the run (`before`: a check that failed there too does not count)."""

    name: str
    command: str
    status: CheckStatus
    before: CheckStatus | None = None
    seconds: float = 0.0
    output_tail: str = ""

    @property
    def counts(self) -> bool:
        """Whether this check fails the run: it failed, and it passed (or could not run) on
        the tree before the run."""
        return self.status == "failed" and self.before != "failed"


ProofStatus = Literal["proven", "failed", "not_run"]


@dataclass(frozen=True)
class ProofResult:
    """One proof that the integration works (`static`: a query over the project's syntax
    trees or files; `runtime`: the project's code run against a local sink): `evidence` when
    proven, `reason` when it failed or could not run."""

    name: str
    kind: Literal["static", "runtime"]
    status: ProofStatus
    evidence: str = ""
    reason: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class Verification:
    """What wizard checked, and proved, before it said a run succeeded."""

    status: CheckStatus
    checks: tuple[CheckResult, ...] = ()
    proofs: tuple[ProofResult, ...] = ()

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The checks that fail the run."""
        return tuple(check for check in self.checks if check.counts)

    @property
    def failed_proofs(self) -> tuple[ProofResult, ...]:
        """The proofs that fail the run."""
        return tuple(proof for proof in self.proofs if proof.status == "failed")

    @property
    def proven(self) -> tuple[ProofResult, ...]:
        """The proofs that passed."""
        return tuple(proof for proof in self.proofs if proof.status == "proven")

    @property
    def unproven(self) -> tuple[ProofResult, ...]:
        """The proofs that could not run: the run is set up, not proven."""
        return tuple(proof for proof in self.proofs if proof.status == "not_run")


@dataclass(frozen=True)
class Outcome:
    """How a whole run ended, as the CLI reports it."""

    status: OutcomeStatus
    program: str
    harness: str | None = None
    sequence: str | None = None
    error_type: AgentErrorType | None = None
    reason: str | None = None
    source: AbortSource | None = None
    outro: Outro | None = None
    run_id: str | None = None
    # What the run changed in the project, from its journal: the way back is `wizard undo`.
    project: str | None = None
    changed_files: tuple[str, ...] = ()
    unjournaled_changes: tuple[str, ...] = ()
    # Files of dependency and build folders the run added, changed or removed (path → which):
    # not journaled by content, so `wizard undo` removes them and says to reinstall.
    dependency_changes: Mapping[str, str] = field(default_factory=dict)
    # Git repositories (`.git` folders) that appeared during the run: their config runs on
    # the user's next git command there, until `wizard undo` removes them.
    repositories_added: tuple[str, ...] = ()
    # The signal that interrupted a cancelled run (SIGINT for Ctrl-C).
    signal: int | None = None
    # An orchestrator run's queue as it ended: id, type, label, status, attempts, error type
    # and reason, and whether a resumed run carried the task over as finished.
    tasks: tuple[Mapping[str, Any], ...] = ()
    # `wizard resume`: the interrupted run this one carried on, and whether it planned again
    # (that run was interrupted while its planner worked: its plan is never carried out).
    resumed_from: str | None = None
    replanned: bool = False
    # Whether the agent's commands ran in the OS sandbox ("on") or with the fence alone.
    sandbox: str | None = None
    # What the user was warned of, such as a run without the sandbox.
    warnings: tuple[str, ...] = ()
    # The checks run after the agent's work, on a run that would have succeeded.
    verification: Verification | None = None
    # What the run did to the files, from its journal (`journal.edits.Edits` as a dict).
    edits: Mapping[str, Any] | None = None
    # What the run used: requests, tokens, model time, cost (summed over an orchestrator's
    # runs, each task's in its `tasks` entry).
    usage: Usage | None = None
    # A preview (`--preview`): the run worked on a copy, and the project is untouched until
    # `wizard apply RUN`; `changed_files` and `edits` say what applying it would change.
    preview: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary of this outcome."""
        data = asdict(self)
        data["error_type"] = self.error_type.value if self.error_type else None
        data["exit_code"] = exit_code(self)
        data["schema_version"] = SCHEMA_VERSION
        return data

    def to_json(self) -> str:
        """This outcome as a JSON document."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


class Tally:
    """A run's outcome as far as the run has got: each stage adds its part as it learns it
    (the run: what it runs on; an orchestrator: its tasks and what they used), and whatever
    ends the run (its own ending, a signal, Ctrl-C) makes its outcome from here, so no ending
    loses what the run did."""

    def __init__(self) -> None:
        self.parts: dict[str, Any] = {}

    def add(self, **parts: Any) -> dict[str, Any]:
        """Add `parts` (fields of `Outcome`); they are returned."""
        unknown = set(parts) - _FIELDS
        assert not unknown, f"not fields of an outcome: {unknown}"
        self.parts.update(parts)
        return parts

    def outcome(self, status: OutcomeStatus, program: str, **ending: Any) -> Outcome:
        """The run's outcome, ended with `status` and `ending`'s fields."""
        return Outcome(status=status, program=program, **{**self.parts, **ending})


_FIELDS = frozenset(f.name for f in fields(Outcome))


EXIT_SUCCEEDED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ABORTED = 3
EXIT_UNVERIFIED = 4
EXIT_NOT_APPLICABLE = 5
EXIT_CANCELLED = 130

_EXIT_CODES: dict[OutcomeStatus, int] = {
    "succeeded": EXIT_SUCCEEDED,
    "unverified": EXIT_UNVERIFIED,
    "failed": EXIT_FAILED,
    "aborted": EXIT_ABORTED,
    "cancelled": EXIT_CANCELLED,
    "usage_error": EXIT_USAGE,
    "not_applicable": EXIT_NOT_APPLICABLE,
}


def exit_code(outcome: Outcome) -> int:
    """The process exit code for `outcome`: 0, 1, 2, 3, 4, 5 (the program does not fit the
    project), or 128 + the signal that interrupted it, as shells expect (130 for Ctrl-C, 143
    for SIGTERM, 129 for SIGHUP)."""
    if outcome.status == "cancelled" and outcome.signal is not None:
        return 128 + outcome.signal
    return _EXIT_CODES[outcome.status]
