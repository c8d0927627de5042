"""Whether the program fits the project, decided before the agent starts: a program that
does not fit ends `not_applicable` (exit 5), nothing changed and no model asked, and the
screen names the programs that would fit (`proofs.fit` holds the rule)."""

from __future__ import annotations

from pathlib import Path

from wizard.outcome import Outro
from wizard.programs.registry import PROGRAMS
from wizard.programs.types import ProgramConfig
from wizard.runner.proofs.codebase import Codebase
from wizard.runner.proofs.fit import fits_at_root, lacks, would_fit


def unfit(program: ProgramConfig, project: Path) -> str | None:
    """Why `program` does not fit `project` (None when it does, or it asks nothing, or the
    project could not be read: a check that breaks never turns a run away)."""
    if program.fits is None:
        return None
    try:
        if fits_at_root(project, program.fits):
            return None
        return lacks(Codebase(project), program.fits)
    except Exception:
        return None


def not_applicable_outro(program: ProgramConfig, project: Path, gap: str) -> Outro:
    """The screen of a run whose program does not fit: why, and what would fit."""
    others = [p for p in PROGRAMS.values() if p.id != program.id]
    fitting = would_fit(Codebase(project), others)
    if fitting:
        named = "; ".join(f"`wizard run {p.id}` would fit ({p.fits.found})"
                          for p in fitting if p.fits is not None)  # fmt: skip
        instead = f"{named[0].upper()}{named[1:]}."
    else:
        instead = "No other program of wizard's fits it either (`wizard programs` lists them)."
    body = (
        f"{gap[0].upper()}{gap[1:]}, so {program.id} has nothing to set up in this project. "
        f"Nothing was changed, and no model was asked.\n\n{instead}"
    )
    return Outro("cancel", f"{program.label} does not fit this project", body,
                 docs_url=program.docs_url)  # fmt: skip
