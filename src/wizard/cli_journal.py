"""The journal's commands: list runs, show a run's patch, undo a run, and apply or discard a
preview. `wizard.cli` registers them on its app; like it, they never exit but through Typer."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from wizard.cli_options import JournalProject, RunArg
from wizard.cli_refusals import usage_exit
from wizard.errors import WizardError

if TYPE_CHECKING:
    from wizard.journal import Journal, RunRecord, Undone

_T = TypeVar("_T")
PreviewArg = Annotated[
    str | None,
    typer.Argument(help="The preview's run id, or a prefix of it (default: the latest preview)."),
]


def runs(
    project: JournalProject = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array of the runs.")] = False,
) -> None:
    """List the journaled runs and previews of a project, newest first."""
    import json

    from wizard.journal import Journal
    from wizard.ui.console import make_console
    from wizard.ui.tables import runs_table

    records, unreadable = Journal(project).read_records()
    for path, why in unreadable:
        typer.echo(f"warning: left out {path}, a run record that cannot be read ({why}). "
                   "Remove it, or put back the file it was.", err=True)  # fmt: skip
    if as_json:
        exclude = {"before_modes", "after_modes"}
        typer.echo(json.dumps([r.model_dump(exclude=exclude) for r in records], indent=1))
        return
    if not records:
        typer.echo(f"No journaled runs of {project.resolve()} yet: `wizard run` records each one.")
        return
    make_console().print(runs_table(records, str(project.resolve())))


def diff(
    run: RunArg = None,
    project: JournalProject = Path("."),
    stat: Annotated[bool, typer.Option("--stat", help="A summary: files and line counts.")] = False,
) -> None:
    """Show what a run (or a preview) changed, as a patch `git apply` takes (default: the
    latest run)."""
    import sys

    from wizard.journal import Journal
    from wizard.ui.diff import colour_patch

    journal = Journal(project)
    try:
        record = journal.find(run, undoable=False)
    except WizardError as exc:
        raise usage_exit(exc) from exc
    patch = journal.patch(record, stat=stat)
    notes = _unjournaled_notes(record)
    if not patch and not notes:
        typer.echo(f"Run {record.run_id} changed no files.", err=True)
        return
    coloured = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    out = sys.stdout.buffer
    out.write((colour_patch(patch) if coloured else patch).encode(errors="surrogateescape"))
    out.flush()
    for note in notes:  # beside the patch, which stays one `git apply` takes
        typer.echo(note, err=not stat)


def _unjournaled_notes(record: RunRecord) -> list[str]:
    """What the run changed that is not in its patch: repositories, dependency files."""
    from wizard.names import shown

    notes = [f" {shown(repo)} | a git repository made by the run" for repo in record.repos_added]
    notes += [
        f" {shown(path)} | {change} in a dependency folder (not journaled)"
        for path, change in record.dependency_changes.items()
    ]
    return notes


def undo(
    run: RunArg = None,
    project: JournalProject = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Undo even files that changed after the run.")
    ] = False,
) -> None:
    """Put back every file a run changed (default: the latest run not undone yet)."""

    def undo_it(journal: Journal, undo_id: str) -> tuple[RunRecord, Undone]:
        target = journal.find(run)
        return target, journal.undo(target, undo_id, force=force)

    target, done = _locked(project, undo_it)
    _print_lines(done)
    typer.echo(
        f"Undid run {target.run_id} ({len(done.restored)} change(s)); this undo is run "
        f"{done.record.run_id}, and `wizard undo {done.record.run_id}` takes it back."
    )


def apply(
    run: PreviewArg = None,
    project: JournalProject = Path("."),
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Apply even over files changed since the preview started, or a preview "
            "that did not succeed.",
        ),
    ] = False,
) -> None:
    """Bring a preview's changes into the project, as one run `wizard undo` takes back."""

    def apply_it(journal: Journal, apply_id: str) -> tuple[RunRecord, Undone]:
        preview = journal.pending_preview(run)
        return preview, journal.apply(preview, apply_id, force=force)

    preview, done = _locked(project, apply_it)
    _print_lines(done)
    for note in _not_applied(preview):
        typer.echo(f"warning: {note}", err=True)
    typer.echo(
        f"Applied preview {preview.run_id} ({len(done.restored)} change(s)) as run "
        f"{done.record.run_id}; `wizard undo {done.record.run_id}` takes it back."
    )


def discard(run: PreviewArg = None, project: JournalProject = Path(".")) -> None:
    """Remove a preview and its copy of the project; the project is not touched."""

    def discard_it(journal: Journal, _: str) -> RunRecord:
        preview = journal.pending_preview(run, finished=False)
        return journal.close_preview(preview, "discarded")

    preview = _locked(project, discard_it)
    typer.echo(f"Discarded preview {preview.run_id}; the project was not touched.")


def _locked(project: Path, work: Callable[[Journal, str], _T]) -> _T:
    """Do `work` on the project's journal, with a new run id, while no run works on the
    project; a refusal is exit 1 with its reason, any other usage error exit 2."""
    from wizard.journal import ApplyRefused, Journal, UndoRefused
    from wizard.journal.lock import project_lock
    from wizard.launch import new_run_id

    journal, run_id = Journal(project), new_run_id()
    try:
        with project_lock(project, run_id):
            done = work(journal, run_id)
    except (UndoRefused, ApplyRefused) as exc:
        typer.echo(f"error: {exc.message}", err=True)
        typer.echo(exc.hint or "", err=True)
        raise typer.Exit(1) from exc
    except WizardError as exc:
        raise usage_exit(exc) from exc
    return done


def _print_lines(done: Undone) -> None:
    from wizard.names import shown

    for line in done.restored:
        typer.echo(f"  {shown(line)}")


def _not_applied(preview: RunRecord) -> list[str]:
    """What the preview changed that an apply cannot bring over."""
    from wizard.names import shown

    notes = []
    if preview.large_changed:
        listed = ", ".join(map(shown, preview.large_changed))
        notes.append(f"not applied, over the journal's size limit: {listed}")
    if preview.heavy_changed:
        listed = ", ".join(map(shown, preview.heavy_changed))
        notes.append(f"not applied (dependency and build folders): {listed}; reinstall there")
    return notes


COMMANDS: dict[str, tuple[Callable[..., None], str | None]] = {
    "runs": (runs, None),
    "diff": (diff, "Show a run's changes as a patch."),
    "undo": (undo, "Undo a run's changes."),
    "apply": (apply, "Apply a preview to the project."),
    "discard": (discard, "Discard a preview."),
}
