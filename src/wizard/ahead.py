"""Work taken ahead of the moment that needs it: one job type, on one timeline a run owns.

A run waits on a few slow things (pi's SDK loading in its host, the project's dependency
folders listed, the gateway client's TLS context), so each is started at an earlier moment
of the run (`Moment`) and taken by the step that needs it. Every such job is a `Job` on the
run's `Timeline`, under a `Key` that names it, the moment it starts at, and the harness it
belongs to (if any). A job is one of three things, once:

- **taken** (`Timeline.take`): the taker gets its value and owns it from then on (a process,
  to adopt or end). A shared job (the key says so) is handed to every taker and stays on the
  timeline: each waits for it (a thread, joined);
- **not there** (`take` gives None): nothing was started, or it was taken already, or it was
  for something else: the taker does the work now, itself;
- **discarded** (`Timeline.discard`, `close`): ended, and whatever it left removed.

`__main__` makes the timeline and starts on it what must start before wizard has even loaded
(pi's host, the dependency listing); the CLI hands that one value to the run (`launch`,
`Run`), which adds its own and closes the timeline as it ends: what nothing took is
discarded then, and at exit at the latest. No job keeps state at module level.
Standard library only: `__main__` imports it first thing.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

T = TypeVar("T")


class Moment(enum.Enum):
    """The moments of a run a job can be started at, in the order they come."""

    PROCESS_START = "the process starts (before wizard has loaded)"
    FIRST_STAGE = "the run's first stage"
    SEQUENCE_START = "the sequence starts"
    FIRST_SESSION = "the first session starts"
    FIRST_REQUEST = "the first model request"
    MODEL_THINKS = "the model thinks"
    TOOL_ENDS = "a tool call ends"
    LAST_TOOL_ENDS = "the last tool call ends"


@dataclass(frozen=True)
class Key(Generic[T]):
    """A job's name on a timeline, the moment it starts at, and the harness it is for
    (None: any run's). A shared job is handed to every taker; any other to the first."""

    name: str
    moment: Moment
    harness: str | None = None
    shared: bool = False


@dataclass
class Job(Generic[T]):
    """One job taken ahead: its value (a process, a thread) and how to end it."""

    key: Key[T]
    value: T
    end: Callable[[T], None]
    started: float = field(default_factory=time.monotonic)


class Timeline:
    """The jobs one run has taken ahead, by key. Thread-safe: `__main__`'s thread starts jobs,
    the run's threads take them."""

    def __init__(self) -> None:
        self._jobs: dict[Key[object], Job[object]] = {}
        self._lock = threading.Lock()
        self.said: list[str] = []  # what became of each job, in order (the run's log)

    def start(self, key: Key[T], value: T, end: Callable[[T], None] = lambda value: None) -> None:
        """Put a job started now on the timeline; one already under `key` is discarded."""
        with self._lock:
            old = self._jobs.pop(cast(Key[object], key), None)
            self._jobs[cast(Key[object], key)] = cast(Job[object], Job(key, value, end))
        if old is not None:
            self._ended(old, "replaced")

    def has(self, key: Key[T]) -> bool:
        """Whether a job is on the timeline under `key`."""
        return self.peek(key) is not None

    def peek(self, key: Key[T]) -> T | None:
        """The value of the job under `key`, left on the timeline (to look at, not to own)."""
        with self._lock:
            job = self._jobs.get(cast(Key[object], key))
        return None if job is None else cast(T, job.value)

    def take(self, key: Key[T]) -> T | None:
        """The job's value: the caller's from now (off the timeline) unless it is shared;
        None if there is none (then the caller does the work itself)."""
        with self._lock:
            job = self._jobs.get(cast(Key[object], key))
            if job is None:
                return None
            if not key.shared:
                del self._jobs[cast(Key[object], key)]
        self._note(job, "taken")
        return cast(T, job.value)

    def discard(self, key: Key[T]) -> None:
        """End the job under `key`, if there is one, and remove what it left."""
        with self._lock:
            job = self._jobs.pop(cast(Key[object], key), None)
        if job is not None:
            self._ended(job, "discarded")

    def discard_others(self, harness: str) -> None:
        """End every job that is for another harness than `harness`."""
        with self._lock:
            others = [k for k in self._jobs if k.harness not in (None, harness)]
        for key in others:
            self.discard(key)

    def close(self) -> None:
        """Discard every job nothing took (the run is over, or the process ends); one whose
        end fails does not keep the others from ending (its error is raised after)."""
        with self._lock:
            jobs = list(self._jobs.values())
            self._jobs.clear()
        failed: Exception | None = None
        for job in jobs:
            try:
                self._ended(job, "discarded")
            except Exception as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def _ended(self, job: Job[object], how: str) -> None:
        try:
            job.end(job.value)
        finally:
            self._note(job, how)

    def _note(self, job: Job[object], how: str) -> None:
        after = (time.monotonic() - job.started) * 1000
        key = job.key
        self.said.append(f"ahead: {key.name} ({key.moment.value}) {how} after {after:.0f} ms")
