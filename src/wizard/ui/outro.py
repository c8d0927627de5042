"""Outro panels: a pure function from an `Outcome` to what the user sees last."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from wizard.layout import SKILL_FILES
from wizard.names import shown
from wizard.outcome import Outcome, exit_code

_STYLE = {"success": ("✔", "green"), "error": ("✘", "red"), "cancel": ("■", "yellow")}


def print_outro(console: Console, outcome: Outcome) -> None:
    """Print the closing panel for `outcome`, then the paths and commands to use next, below
    it and never wrapped by rich, so a long path copies whole (no border, no break in it)."""
    panel, after = render_outro(outcome)
    console.print(panel)
    for line in after:
        console.print(line, soft_wrap=True)


def render_outro(outcome: Outcome) -> tuple[RenderableType, list[Text]]:
    """The closing panel for `outcome`, and the lines that follow it."""
    outro = outcome.outro
    if outro is None:
        kind = "success" if outcome.status == "succeeded" else "error"
        message = outcome.reason or outcome.status
    else:
        kind, message = outro.kind, outro.message
    icon, colour = _STYLE[kind]
    lines: list[RenderableType] = [Text(f"{icon} {message}", style=f"bold {colour}")]
    after: list[Text] = []
    if outro is not None:
        if outro.body:
            lines += [Text(""), Text(outro.body)]
        if outro.report_file:
            where = Path(outcome.project) / outro.report_file if outcome.project else None
            after.append(Text(f"Check {where or './' + outro.report_file} for details"))
        for label, url in (("Dashboard", outro.dashboard_url), ("Notebook", outro.notebook_url)):
            if url:
                after.append(Text(f"{label}: {url}"))
        if outro.docs_url:
            after.append(Text(f"Docs: {outro.docs_url}", style="dim"))
    after += _way_back(outcome)
    title = f"{outcome.program} · {outcome.status} (exit {exit_code(outcome)})"
    return Panel(Group(*lines), title=title, border_style=colour, expand=False), after


def _way_back(outcome: Outcome) -> list[Text]:
    """For a run that changed files: how to review them, and the way back (for a preview:
    how to apply or discard it)."""
    lines: list[Text] = []
    target = f"{outcome.run_id} --project {outcome.project}" if outcome.project else outcome.run_id
    if outcome.changed_files and outcome.run_id:
        lines.append(Text(changed_summary(outcome.changed_files, preview=outcome.preview)))
        if removed := (outcome.edits or {}).get("removed_from_existing"):
            lines.append(Text(lines_removed(removed), style="yellow"))
        lines.append(Text(f"Review:  wizard diff {target}"))
        if outcome.preview:
            force = "" if outcome.status == "succeeded" else " --force"
            lines += [
                Text(f"Apply:   wizard apply {target}{force}"),
                Text(f"Discard: wizard discard {target}"),
            ]
        else:
            lines.append(Text(f"Undo:    wizard undo {target}"))
    elif outcome.preview and outcome.run_id:
        lines += [
            Text("The preview changed no files."),
            Text(f"Discard: wizard discard {target}"),
        ]
    lines += _unjournaled(outcome)
    lines += [Text(f"Warning: {warning}", style="yellow") for warning in outcome.warnings]
    if outcome.usage is not None and outcome.usage.model_requests:
        lines.append(Text(outcome.usage.summary(), style="dim"))
    return lines


def _unjournaled(outcome: Outcome) -> list[Text]:
    """What the run changed that the journal holds no copy of: repositories it made, files
    it changed in dependency folders, big files."""
    lines = []
    undo = f"`wizard undo {outcome.run_id}`"
    if outcome.repositories_added:
        repos = ", ".join(shown(repo) for repo in outcome.repositories_added)
        lines.append(Text(
            f"Warning: a git repository appeared during the run: {repos}. A git command in "
            f"that folder runs its configuration; {undo} removes it.", style="bold red",
        ))  # fmt: skip
    if outcome.dependency_changes:
        lines.append(Text(dependency_summary(outcome.dependency_changes, undo), style="yellow"))
    listed = outcome.dependency_changes  # a folder whose files are listed is not named again
    other = [
        path
        for path in outcome.unjournaled_changes
        if not any(name == path or name.startswith(f"{path}/") for name in listed)
    ]
    if other:
        folders = ", ".join(shown(path) for path in other)
        lines.append(Text(f"Also changed, and not journaled (undo leaves them): {folders}"))
    return lines


def dependency_summary(changes: Mapping[str, str], undo: str) -> str:
    """One line on the files a run changed in dependency folders, those changed in place
    (where a payload hides) named first."""
    counts = Counter(changes.values())
    told = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    ordered = sorted(changes, key=lambda path: changes[path] != "changed")
    named = ", ".join(f"{shown(path)} ({changes[path]})" for path in ordered[:3])
    more = f" and {len(changes) - 3} more" if len(changes) > 3 else ""
    return (
        f"Dependency folders changed during the run ({told}), not journaled: {named}{more}. "
        f"{undo} removes what was added or changed; reinstall after it."
    )


def changed_summary(changed: tuple[str, ...] | list[str], *, preview: bool = False) -> str:
    """What a run changed (a preview: would change), in one count split as the user reads it:
    the app's files, and the skill wizard installed for the run (`.claude/skills/`)."""
    skill = sum(1 for path in changed if path.startswith(SKILL_FILES))
    app = len(changed) - skill
    parts = [f"{app} app file{'s' if app != 1 else ''}"]
    if skill:
        parts.append(f"the installed skill ({skill} file{'s' if skill != 1 else ''})")
    verb = "Applying this preview would change" if preview else "This run changed"
    return f"{verb} {' and '.join(parts)}."


def lines_removed(removed: dict[str, int]) -> str:
    """Which of the user's files lose the most lines (deleted configuration shows here)."""
    top = ", ".join(f"{shown(path)} ({count})" for path, count in list(removed.items())[:3])
    more = f" and {len(removed) - 3} more" if len(removed) > 3 else ""
    return f"Lines removed from files you had: {top}{more}. Review them before you keep them."
