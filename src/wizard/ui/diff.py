"""A unified diff: coloured for a terminal, or exactly as git prints it for a file or pipe."""

from __future__ import annotations

from rich.syntax import Syntax


def render_diff(diff: str) -> Syntax:
    """`diff` with diff highlighting."""
    return Syntax(diff, "diff", theme="ansi_dark", background_color="default", word_wrap=True)


_COLOURS = (("+++", "1"), ("---", "1"), ("diff --git", "1"), ("@@", "36"), ("+", "32"), ("-", "31"))


def colour_patch(patch: str) -> str:
    """`patch` with ANSI colours per line and nothing else changed: no wrapping, no padding,
    so what a terminal shows is the patch itself."""
    lines = []
    for line in patch.splitlines(keepends=True):
        code = next((c for prefix, c in _COLOURS if line.startswith(prefix)), None)
        body = line.rstrip("\n")
        lines.append(f"\x1b[{code}m{body}\x1b[0m" + line[len(body) :] if code else line)
    return "".join(lines)
