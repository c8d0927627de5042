"""Tables the CLI prints."""

from __future__ import annotations

from rich.table import Table

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
