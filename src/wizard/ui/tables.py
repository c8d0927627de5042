"""Tables the CLI prints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from rich import box
from rich.console import Console
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
    table = Table(
        title=f"Runs of {project} (newest first)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("run", no_wrap=True)
    table.add_column("started (UTC)", no_wrap=True)
    table.add_column("program (harness · sequence)", no_wrap=True)
    table.add_column("outcome", min_width=12)
    table.add_column("files", justify="right", no_wrap=True)
    for record in records:
        outcome = record.status or "(running)"
        if record.kind == "undo":
            outcome = f"undo of {record.undoes}"
        elif record.undone_by:
            outcome += f", undone by {record.undone_by}"
        if record.kind == "preview":
            by = f" by {record.applied_by}" if record.applied_by else ""
            outcome = f"preview, {record.preview_state}{by}\n{outcome}"
        elif record.applies:
            outcome = f"apply of {record.applies}\n{outcome}"
        how = f"{record.program}\n{record.harness or '-'} · {record.sequence or '-'}"
        started = record.started_at[:16].replace("T", " ")
        if record.usage:  # its time and cost, below how it ended
            outcome += f"\n{_spent(record.usage)}"
        table.add_row(record.run_id, started, how, outcome, str(len(record.changed)))
    return table


class DoctorLine(Protocol):
    """One line of `wizard doctor` (`doctor.Check`): `ok` None is informational."""

    @property
    def name(self) -> str: ...
    @property
    def ok(self) -> bool | None: ...
    @property
    def detail(self) -> str: ...
    @property
    def fix(self) -> str: ...


def print_doctor(console: Console, checks: Sequence[DoctorLine]) -> None:
    """The checks of `wizard doctor`, one line each and the fix below, never wrapped by rich
    (a path or a command copies whole)."""
    console.print("wizard doctor", style="bold")
    marks = {True: "ok", False: "FAIL", None: "-"}
    width = max(len(check.name) for check in checks)
    for check in checks:
        console.print(f"  {marks[check.ok]:<5}{check.name:<{width + 2}}{check.detail}",
                      soft_wrap=True, markup=False, highlight=False)  # fmt: skip
        if check.fix:
            console.print(f"  {'':<5}{'':<{width + 2}}fix: {check.fix}",
                          soft_wrap=True, markup=False, highlight=False)  # fmt: skip


def _spent(usage: dict[str, Any]) -> str:
    """A run's wall time and cost, as `wizard runs` shows them."""
    cost = usage.get("cost_usd")
    return f"{usage.get('wall_seconds', 0):.0f}s · " + (f"${cost:.2f}" if cost is not None else "-")
