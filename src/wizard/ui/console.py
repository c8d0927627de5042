"""The rich consoles wizard prints to, honouring NO_COLOR."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console


def make_console(file: TextIO | None = None, *, force_plain: bool = False) -> Console:
    """A console for `file` (stdout by default); no colour when NO_COLOR is set."""
    no_color = bool(os.environ.get("NO_COLOR")) or force_plain
    return Console(
        file=file or sys.stdout,
        no_color=no_color,
        highlight=False,
        force_terminal=None if not force_plain else False,
        soft_wrap=False,
    )
