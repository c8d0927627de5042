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
    lines += _way_back(outcome)
    title = f"{outcome.program} · {outcome.status} (exit {exit_code(outcome)})"
    return Panel(Group(*lines), title=title, border_style=colour, expand=False)


def _way_back(outcome: Outcome) -> list[RenderableType]:
    """For a run that changed files: how to review them, and the way back."""
    lines: list[RenderableType] = []
    if outcome.changed_files and outcome.run_id:
        count = len(outcome.changed_files)
        target = (
            f"{outcome.run_id} --project {outcome.project}" if outcome.project else outcome.run_id
        )
        lines += [
            Text(""),
            Text(f"This run changed {count} file{'s' if count != 1 else ''}."),
            Text(f"Review: wizard diff {target}"),
            Text(f"Undo:   wizard undo {target}"),
        ]
    if outcome.unjournaled_changes:
        folders = ", ".join(outcome.unjournaled_changes)
        lines.append(Text(f"Also changed, and not journaled (undo leaves them): {folders}"))
    lines += [Text(f"Warning: {warning}", style="yellow") for warning in outcome.warnings]
    return lines
