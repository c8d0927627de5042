"""Outro panels: a pure function from an `Outcome` to what the user sees last."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from wizard.outcome import Outcome, exit_code

_STYLE = {"success": ("✔", "green"), "error": ("✘", "red"), "cancel": ("■", "yellow")}


def render_outro(outcome: Outcome) -> RenderableType:
    """The closing panel for `outcome`."""
    outro = outcome.outro
    if outro is None:
        kind = "success" if outcome.status == "succeeded" else "error"
        message = outcome.reason or outcome.status
    else:
        kind, message = outro.kind, outro.message
    icon, colour = _STYLE[kind]
    lines: list[RenderableType] = [Text(f"{icon} {message}", style=f"bold {colour}")]
    if outro is not None:
        if outro.body:
            lines += [Text(""), Text(outro.body)]
        if outro.report_file:
            lines.append(Text(f"Check ./{outro.report_file} for details"))
        for label, url in (("Dashboard", outro.dashboard_url), ("Notebook", outro.notebook_url)):
            if url:
                lines.append(Text(f"{label}: {url}"))
        if outro.docs_url:
            lines.append(Text(f"Docs: {outro.docs_url}", style="dim"))
    title = f"{outcome.program} · {outcome.status} (exit {exit_code(outcome)})"
    return Panel(Group(*lines), title=title, border_style=colour, expand=False)
