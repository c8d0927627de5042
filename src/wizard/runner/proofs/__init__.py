"""Proofs: what shows that a program's integration works, beyond the checks that the
project still parses, compiles and passes its tests.

A program declares its proofs (`ProgramConfig.proofs`): *static* ones query the project's
syntax trees or the files its skill writes (`static`); *runtime* ones run the project's own
code in the run's sandbox against a local sink (`probe`). Each ends `proven` (with its
evidence), `failed` (the run is unverified) or `not_run` (the run is set up, not proven).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

from wizard.outcome import ProofResult
from wizard.programs.types import (
    CallSiteProof,
    ConfigProof,
    InitOptionProof,
    McpProof,
    ProgramProof,
)
from wizard.runner.proofs.finding import Finding, not_run
from wizard.runner.proofs.mcp import mcp_probe
from wizard.runner.proofs.send import send_probe
from wizard.runner.proofs.static import call_sites, config_file, init_option
from wizard.tools.shell import SandboxedShell


async def prove(
    proofs: Sequence[ProgramProof],
    project: Path,
    sandbox: SandboxedShell | None,
    private: Path,
    unsandboxable: str | None = None,
) -> tuple[ProofResult, ...]:
    """Each proof's result on `project`; a runtime probe's sandbox settings and sink go in
    `private` (a folder no command may open)."""
    results = []
    for proof in proofs:
        started = time.monotonic()
        try:
            finding = await _finding(proof, project, sandbox, private, unsandboxable)
        except Exception as exc:  # a proof that breaks proves nothing, and says why
            finding = not_run(f"the proof could not run: {type(exc).__name__}: {exc}")
        seconds = round(time.monotonic() - started, 3)
        evidence, reason = (finding.text, "") if finding.status == "proven" else ("", finding.text)
        results.append(ProofResult(proof.name, proof.kind, finding.status, evidence, reason,
                                   seconds))  # fmt: skip
    return tuple(results)


async def _finding(
    proof: ProgramProof,
    project: Path,
    sandbox: SandboxedShell | None,
    private: Path,
    unsandboxable: str | None,
) -> Finding:
    if isinstance(proof, CallSiteProof):
        return await asyncio.to_thread(call_sites, project, proof)
    if isinstance(proof, InitOptionProof):
        return await asyncio.to_thread(init_option, project, proof)
    if isinstance(proof, ConfigProof):
        return await asyncio.to_thread(config_file, project, proof)
    if unsandboxable is not None:
        return not_run(unsandboxable)
    if isinstance(proof, McpProof):
        return await mcp_probe(proof, project, sandbox, private)
    return await send_probe(proof, project, sandbox, private)
