"""Proofs: what shows that a program's integration works, beyond the checks that the
project still parses, compiles and passes its tests.

A program declares its proofs (`ProgramConfig.proofs`): *static* ones query the app's syntax
trees or the files its skill writes (`static`); *runtime* ones run the app's own code in the
run's sandbox against a local sink (`send`, `mcp`). What the agent recorded for a probe is a
claim (`claims`), tied to the app as it was before the run (`codebase.Before`); values are
followed to what reaches the vendor (`values`), code to the pages and entry points that run
it (`reach`). Each proof ends `proven` (with its evidence: what was checked), `failed` (the
run is unverified) or `not_run` (cannot tell: the run is set up, not proven). A project that
did not fit the program before the run (`fit`) proves nothing, whatever the agent wrote.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wizard.outcome import ProofResult
from wizard.programs.types import (
    CallSiteProof,
    ConfigProof,
    Fit,
    InitOptionProof,
    McpProof,
    ProgramProof,
)
from wizard.runner.proofs.codebase import Before, Codebase
from wizard.runner.proofs.finding import Finding, failed, not_run
from wizard.runner.proofs.fit import lacks
from wizard.runner.proofs.mcp import mcp_probe
from wizard.runner.proofs.send import send_probe
from wizard.runner.proofs.static import call_sites, config_file, init_option
from wizard.tools.shell import SandboxedShell

__all__ = ["Before", "RunFacts", "prove"]


@dataclass(frozen=True)
class RunFacts:
    """What the proofs know of the run besides the project as it left it: the project before
    it (None when the run was not journaled), the user's answers to `wizard_ask` in it,
    whether anyone could answer, and what the program needs of a project."""

    before: Before | None = None
    answers: tuple[tuple[str, str], ...] = ()
    interactive: bool = False
    fits: Fit | None = None


async def prove(
    proofs: Sequence[ProgramProof],
    project: Path,
    sandbox: SandboxedShell | None,
    private: Path,
    unsandboxable: str | None = None,
    facts: RunFacts = RunFacts(),
) -> tuple[ProofResult, ...]:
    """Each proof's result on `project`; a runtime probe's sandbox settings and sink go in
    `private` (a folder no command may open)."""
    code = Codebase(project, facts.before)
    unfit = await asyncio.to_thread(_unfit, code, facts.fits)
    results = []
    for proof in proofs:
        started = time.monotonic()
        try:
            finding = unfit or await _finding(proof, code, sandbox, private, unsandboxable, facts)
        except Exception as exc:  # a proof that breaks proves nothing, and says why
            finding = not_run(f"the proof could not run: {type(exc).__name__}: {exc}")
        seconds = round(time.monotonic() - started, 3)
        evidence, reason = (finding.text, "") if finding.status == "proven" else ("", finding.text)
        results.append(ProofResult(proof.name, proof.kind, finding.status, evidence, reason,
                                   seconds))  # fmt: skip
    return tuple(results)


def _unfit(code: Codebase, fits: Fit | None) -> Finding | None:
    """A failure for every proof when the project did not fit the program before the run:
    what the agent added to it is not the app's integration."""
    prior = code.before()
    if fits is None or prior is None or (gap := lacks(prior, fits)) is None:
        return None
    return failed(f"before the run {gap}: there was nothing for the program to set up")


async def _finding(
    proof: ProgramProof,
    code: Codebase,
    sandbox: SandboxedShell | None,
    private: Path,
    unsandboxable: str | None,
    facts: RunFacts,
) -> Finding:
    if isinstance(proof, CallSiteProof):
        return await asyncio.to_thread(call_sites, code, proof)
    if isinstance(proof, InitOptionProof):
        return await asyncio.to_thread(init_option, code, proof)
    if isinstance(proof, ConfigProof):
        return await asyncio.to_thread(config_file, code, proof, facts.answers, facts.interactive)
    if isinstance(proof, McpProof):
        return await mcp_probe(proof, code, sandbox, private, unsandboxable)
    return await send_probe(proof, code, sandbox, private, unsandboxable)
