"""A fleet's values: what it was asked to do, and how each repository ended.

Plain frozen dataclasses of JSON types, because Temporal carries them through its history
(its default converter reads and writes dataclasses). Nothing here may hold a secret.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# What a repository's row says, in the burndown's order.
RowStatus = Literal[
    "queued", "running", "proven", "set up", "aborted", "not applicable", "unverified", "failed",
    "skipped", "cancelled",
]  # fmt: skip
FINISHED: frozenset[str] = frozenset({
    "proven", "set up", "aborted", "not applicable", "unverified", "failed", "skipped",
    "cancelled",
})  # fmt: skip
SUCCEEDED: frozenset[str] = frozenset({"proven", "set up"})
TASK_QUEUE = "wizard-fleet"
# The burndown's JSON (`wizard fleet status --json`; `wizard schema fleet`): fields are only
# added within a major version, as the outcome's.
FLEET_SCHEMA_VERSION = "1.2"


@dataclass(frozen=True)
class Target:
    """Which Temporal to use: an address and namespace, or the embedded server (None)."""

    address: str | None = None
    namespace: str = "default"
    tls: bool = False


@dataclass(frozen=True)
class Repo:
    """One line of the repositories file: where it is, which branch, and its id in the
    fleet (unique, safe as a folder name and in a workflow id)."""

    id: str
    source: str  # an absolute local path, or a git URL (with no credentials)
    branch: str | None = None
    seal: str = ""  # its job's, signed by the fleet's owner (`seal`)


@dataclass(frozen=True)
class RunOptions:
    """What each repository's `wizard run` is given: the per-run budgets and choices."""

    harness: str | None = None
    model: str | None = None
    verify: str | None = None
    max_turns: int | None = None
    max_time: str | None = None
    max_cost: float | None = None

    def arguments(self) -> list[str]:
        """These options as `wizard run` flags."""
        flags = {"--harness": self.harness, "--model": self.model, "--verify": self.verify,
                 "--max-turns": self.max_turns, "--max-time": self.max_time,
                 "--max-cost": self.max_cost}  # fmt: skip
        return [part for flag, value in flags.items() if value is not None
                for part in (flag, str(value))]  # fmt: skip


@dataclass(frozen=True)
class Carried:
    """What a fleet's next generation (after a continue-as-new) starts from: which
    repositories were admitted so far (the spec keeps only those still to admit), what was
    spent, the pace. A repository's row is its own workflow's result, so it is not carried
    (`earlier` names it), except where the fleet wrote the row itself (`rows`): a fleet's
    payload stays small however many repositories it has run."""

    rows: tuple[Row, ...]
    cost: float = 0.0
    gap: float = 0.0
    last_start: str | None = None  # ISO 8601, the workflow clock's
    generation: int = 1
    earlier: tuple[str, ...] = ()  # the repositories admitted before, in order


@dataclass(frozen=True)
class FleetSpec:
    """One fleet: a program across repositories, with its bounds."""

    fleet_id: str
    program: str
    repos: tuple[Repo, ...]
    run: RunOptions = field(default_factory=RunOptions)
    max_parallel: int = 2
    max_cost: float | None = None  # USD, fleet-wide: no repository starts once it is spent
    rate_per_minute: float | None = None  # repositories started per minute at most
    publish: Literal["none", "branch", "pull-request"] = "none"
    # The fleet workflow's history, in events, past which it admits no more repositories,
    # lets those running end, and continues as new (Temporal refuses a history of 51,200).
    history_limit: int = 5000
    # Where this run of the fleet's workflow starts from, after a continue-as-new.
    carried: Carried | None = None

    @property
    def branch(self) -> str:
        """The branch a published result goes to."""
        return f"wizard/{self.program}"

    def job(self, repo: Repo) -> RepoJob:
        """What `repo`'s child workflow is given."""
        return RepoJob(self.fleet_id, self.program, repo, self.run, self.publish != "none",
                       self.branch, self.publish == "pull-request")  # fmt: skip


def repo_workflow_id(fleet_id: str, repo_id: str) -> str:
    """The id of repository `repo_id`'s workflow in fleet `fleet_id`."""
    return f"{fleet_id}/{repo_id}"


@dataclass(frozen=True)
class RepoJob:
    """What a repository's child workflow is given."""

    fleet_id: str
    program: str
    repo: Repo
    run: RunOptions
    publish: bool
    branch: str
    pull_request: bool = False  # and a pull request opened (or updated) from the branch

    @property
    def workflow_id(self) -> str:
        """The repository's workflow id, and its key on a worker (its slot, its run)."""
        return repo_workflow_id(self.fleet_id, self.repo.id)


@dataclass(frozen=True)
class Workspace:
    """Where a worker took a repository: its own task queue, and the workspace's folder."""

    task_queue: str
    folder: str
    base_commit: str = ""


@dataclass(frozen=True)
class RunResult:
    """How one repository's `wizard run` ended, from its outcome file."""

    status: str  # the outcome's: succeeded, aborted, unverified, failed, cancelled
    exit_code: int
    ended: str  # the row's words: proven, set up, aborted, unverified, failed
    reason: str = ""
    error_type: str | None = None
    source: str | None = None
    cost_usd: float | None = None
    seconds: float = 0.0
    proofs: tuple[str, ...] = ()  # "name: status"
    changed_files: tuple[str, ...] = ()
    attempt: int = 1  # which attempt of the run step this was


@dataclass(frozen=True)
class Published:
    """What publishing a result did: the branch, its commit, what it left out, and the pull
    request opened or updated from it."""

    branch: str
    commit: str
    state: Literal["created", "updated", "unchanged", "nothing to publish"]
    left_out: tuple[str, ...] = ()
    pull_request: str | None = None  # its web address


@dataclass(frozen=True)
class Row:
    """One repository in the burndown."""

    repo: str
    source: str
    status: str = "queued"
    reason: str = ""
    cost_usd: float | None = None
    seconds: float = 0.0
    attempts: int = 0
    worker: str = ""  # the task queue of the worker that ran it
    branch: str | None = None
    commit: str | None = None
    published: str | None = None  # created, updated, unchanged, nothing to publish
    left_out: tuple[str, ...] = ()
    proofs: tuple[str, ...] = ()
    pull_request: str | None = None  # the web address of the one opened or updated


@dataclass(frozen=True)
class Burndown:
    """A fleet as it stands: one row per repository, and what it has spent."""

    fleet_id: str
    program: str
    rows: tuple[Row, ...]
    cost_usd: float = 0.0
    budget_spent: bool = False
    cancelled: bool = False
    finished: bool = False
    pace_seconds: float = 0.0  # between two starts: the --rate, slowed by rate limits
    generation: int = 1  # which run of the fleet's workflow: one more at each continue-as-new
    # The repositories earlier runs of the workflow admitted, in order; the rows of those
    # not in `rows` are their repository workflows' results (`service.whole` reads them).
    earlier: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """How many rows have each status."""
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.status] = counts.get(row.status, 0) + 1
        return counts

    @property
    def succeeded(self) -> bool:
        """Whether every repository ended set up (proven or not)."""
        return all(row.status in SUCCEEDED for row in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """The burndown for machines: its rows and totals (`temporal_ui` is always null now:
        the embedded server has no UI, and it stays for the schema's 1.x readers)."""
        whole = {key: value for key, value in asdict(self).items() if key != "earlier"}
        return {**whole, "counts": self.counts(), "succeeded": self.succeeded,
                "temporal_ui": None, "schema_version": FLEET_SCHEMA_VERSION}  # fmt: skip
