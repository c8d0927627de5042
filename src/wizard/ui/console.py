"""The rich consoles wizard prints to, honouring NO_COLOR."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO

from rich.console import Console


class _Console(Console):
    """A console that goes quiet when its terminal goes away (a closed window, a reader that
    stopped): rich's own answer is to exit the process, which would end the run unfinished
    and without its outcome."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        with contextlib.suppress(OSError, ValueError):  # a file without a descriptor: done
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.file.fileno())


def make_console(file: TextIO | None = None, *, force_plain: bool = False) -> Console:
    """A console for `file` (stdout by default); no colour when NO_COLOR is set."""
    no_color = bool(os.environ.get("NO_COLOR")) or force_plain
    return _Console(
        file=file or sys.stdout,
        no_color=no_color,
        highlight=False,
        force_terminal=None if not force_plain else False,
        soft_wrap=False,
    )
