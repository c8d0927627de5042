"""The rich consoles wizard prints to, honouring NO_COLOR."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO, cast

from rich.console import Console


class _Terminal(io.TextIOBase):
    """A terminal's stream that goes quiet once the terminal is gone: its window closed (every
    write then fails with EIO, and the run is ending on the SIGHUP) or its reader stopped
    (EPIPE). What is written from then on goes nowhere, and the descriptor is pointed at
    `/dev/null`, so that nothing at the process's exit fails on it either (Python's exit code
    would be 120, not the signal's)."""

    def __init__(self, file: TextIO) -> None:
        self.file, self.gone = file, False

    def write(self, text: str) -> int:
        if not self.gone:
            with self._unless_gone():
                self.file.write(text)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            with self._unless_gone():
                self.file.flush()

    @contextlib.contextmanager
    def _unless_gone(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            if error.errno not in (errno.EIO, errno.EPIPE):
                raise
            self.gone = True
            with contextlib.suppress(OSError, ValueError):  # a file without a descriptor
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.file.fileno())

    def isatty(self) -> bool:
        return self.file.isatty()

    def fileno(self) -> int:
        return self.file.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.file, "encoding", None) or "utf-8"


def make_console(file: TextIO | None = None, *, force_plain: bool = False) -> Console:
    """A console for `file` (stdout by default); no colour when NO_COLOR is set."""
    no_color = bool(os.environ.get("NO_COLOR")) or force_plain
    return Console(
        file=cast(TextIO, _Terminal(file or sys.stdout)),
        no_color=no_color,
        highlight=False,
        force_terminal=None if not force_plain else False,
        soft_wrap=False,
    )
