"""A unified diff, coloured."""

from __future__ import annotations

from rich.syntax import Syntax


def render_diff(diff: str) -> Syntax:
    """`diff` with diff highlighting."""
    return Syntax(diff, "diff", theme="ansi_dark", background_color="default", word_wrap=True)
