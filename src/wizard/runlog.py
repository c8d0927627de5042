"""The run's log file: every event, one line each, for the user and for bug reports."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from wizard.events import Event


def default_log_path() -> Path:
    """A fresh log file under the cache directory (`WIZARD_LOG_DIR` overrides it)."""
    base = os.environ.get("WIZARD_LOG_DIR")
    root = (
        Path(base)
        if base
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wizard" / "logs"
    )
    root.mkdir(parents=True, exist_ok=True)
    return root / time.strftime("run-%Y%m%d-%H%M%S.log")


class RunLog:
    """An event sink that appends every event to a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO = path.open("a", encoding="utf-8")

    def __call__(self, event: Event) -> None:
        data = asdict(event)
        kind = data.pop("kind")
        self._file.write(f"{time.strftime('%H:%M:%S')} {kind} {data}\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()
