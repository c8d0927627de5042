"""The run's log file: every event as one JSON line, for the user and for bug reports.

Each run gets its own file, named with its start time and run id, created with the first
event (so a usage error before the run starts leaves no empty log behind).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from wizard.events import Event, event_record


def log_dir() -> Path:
    """Where run logs go (`WIZARD_LOG_DIR`, else the cache directory)."""
    if base := os.environ.get("WIZARD_LOG_DIR"):
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wizard" / "logs"


class RunLog:
    """An event sink that appends every event of one run to its own JSON Lines file."""

    def __init__(self, run_id: str, on_open: Callable[[Path], None] = lambda path: None) -> None:
        self.run_id = run_id
        self.path = log_dir() / time.strftime(f"run-%Y%m%d-%H%M%S-{run_id}.jsonl")
        self._on_open = on_open
        self._file: TextIO | None = None

    def __call__(self, event: Event) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("x", encoding="utf-8")
            with contextlib.suppress(OSError):  # saying where it is must not cost the log
                self._on_open(self.path)
        self._file.write(json.dumps(event_record(event, self.run_id), default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file, if the run wrote one."""
        if self._file is not None:
            self._file.close()
