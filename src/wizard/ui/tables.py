"""Tables the CLI prints."""

from __future__ import annotations

from rich import box
from rich.table import Table

from wizard.doctor import Check
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
    table = Table(
        title=f"Runs of {project} (newest first)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("run", no_wrap=True)
    table.add_column("started (UTC)", no_wrap=True)
    table.add_column("program (harness · sequence)", overflow="fold")
    table.add_column("outcome", min_width=12)
    table.add_column("files", justify="right", no_wrap=True)
    for record in records:
        outcome = record.status or "(running)"
        if record.kind == "undo":
            outcome = f"undo of {record.undoes}"
        elif record.undone_by:
            outcome += f", undone by {record.undone_by}"
        how = f"{record.program}\n{record.harness or '-'} · {record.sequence or '-'}"
        started = record.started_at[:16].replace("T", " ")
        table.add_row(record.run_id, started, how, outcome, str(len(record.changed)))
    return table


def doctor_table(checks: list[Check]) -> Table:
    """The checks of `wizard doctor`: what was found, and the fix where one is needed."""
    table = Table(title="wizard doctor", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("", no_wrap=True)
    table.add_column("check", style="bold", no_wrap=True)
    table.add_column("found", overflow="fold")
    table.add_column("fix", overflow="fold")
    marks = {True: "ok", False: "FAIL", None: "-"}
    for check in checks:
        table.add_row(marks[check.ok], check.name, check.detail, check.fix)
    return table
