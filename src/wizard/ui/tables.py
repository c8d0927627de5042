"""Tables the CLI prints."""

from __future__ import annotations

from rich.table import Table

from wizard.journal import RunRecord
from wizard.programs.types import ProgramConfig
from wizard.skills.sources import SkillEntry


def programs_table(programs: list[ProgramConfig], skills: list[SkillEntry]) -> Table:
    """Programs with their skill and abort cases."""
    table = Table(title="Programs (wizard run ID)", title_justify="left")
    table.add_column("id", style="bold")
    table.add_column("what it does")
    table.add_column("abort cases", justify="right")
    for program in programs:
        table.add_row(program.id, program.description, str(len(program.abort_cases)))
    names = ", ".join(entry.id for entry in skills)
    table.caption = f"Bundled skills (wizard skill NAME): {names}"
    return table


def runs_table(records: list[RunRecord], project: str) -> Table:
    """A project's journaled runs, newest first."""
    table = Table(title=f"Runs of {project} (newest first)", title_justify="left")
    for column in ("run", "started", "program", "harness", "sequence", "outcome", "files"):
        table.add_column(column, justify="right" if column == "files" else "left")
    for record in records:
        outcome = record.status or "(running)"
        if record.kind == "undo":
            outcome = f"undo of {record.undoes}"
        elif record.undone_by:
            outcome += f", undone by {record.undone_by}"
        started = record.started_at[:19].replace("T", " ")
        table.add_row(
            record.run_id, started, record.program, record.harness or "-",
            record.sequence or "-", outcome, str(len(record.changed)),
        )  # fmt: skip
    return table
