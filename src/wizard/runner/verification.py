"""Verification: before wizard says a run succeeded, it checks the project still works.

The checks (`runner.checks`) are the program's own, those the run's changes call for, and
with `--verify full` the project's own build and tests.

Commands run in the project, in the run's OS sandbox (as the agent's do), each with a time
limit. A failing check counts against the run only if it passed on the project as it was
before the run, so a project that was already broken is not blamed (the outcome says so).
The journal writes that tree, without its `.env*` files, into a folder of wizard's own that
no command of the agent could write, nor any folder above it (npm, pytest and tsc look for
runners and config in a folder's ancestors); the check runs there in the sandbox, which may
write that folder alone. What the checks write in the project is journaled by the runner
after them.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from wizard.engines.bundle import installed_bundle
from wizard.events import SpinnerStarted, SpinnerStopped
from wizard.journal import RunRecord
from wizard.layout import SKILL_FILES, socket_temp_dir
from wizard.names import shown
from wizard.outcome import CheckResult, CheckStatus, Outcome, Outro, Verification
from wizard.runner.checks import Check, checks_for
from wizard.runner.journaling import RunJournal
from wizard.runner.proofs import Before, RunFacts, prove
from wizard.runner.sequence.context import RunContext
from wizard.tools.sandbox import SandboxPolicy
from wizard.tools.shell import COULD_NOT_RUN, SandboxedShell, run_command

CHECK_TIMEOUT_S = 120.0
TAIL_LINES = 12


@dataclass(frozen=True)
class CheckRunner:
    """Runs checks in a folder: commands in the OS sandbox when the run has one. When the
    run is sandboxed but the sandbox's runtime is not there, commands are skipped, not run
    outside it (`unsandboxable` says why)."""

    sandbox: SandboxedShell | None
    unsandboxable: str | None = None
    timeout: float = CHECK_TIMEOUT_S

    def for_tree(self, folder: Path, private: Path) -> CheckRunner | None:
        """This runner for the tree in `folder` (the project before the run), its sandbox's
        settings in `private`; None when a command of the run could write `folder` or a
        folder above it, where nothing may run."""
        if self.sandbox is None:
            return self
        policy = self.sandbox.policy
        if policy.writable(folder):
            return None
        scoped = policy.for_tree(folder).with_settings_file(private)
        return replace(self, sandbox=self.sandbox.with_policy(scoped))

    async def run(self, check: Check, folder: Path) -> tuple[CheckStatus, str, bool]:
        """The check's status in `folder`, the end of its output, and whether it ran at all
        (one that timed out, or whose command could not be run, did not)."""
        if check.inline is not None:
            problem = await asyncio.to_thread(check.inline, folder)
            return ("failed", problem, True) if problem is not None else ("passed", "", True)
        if self.unsandboxable is not None:
            return "skipped", self.unsandboxable, False
        limit = check.timeout or self.timeout
        code, output = await run_command(check.command, self.sandbox, folder, limit)
        if code is None:
            return "failed", f"timed out after {limit:g} s", False
        text = "\n".join(output.splitlines()[-TAIL_LINES:])
        return ("passed" if code == 0 else "failed"), text, code not in COULD_NOT_RUN


async def verify(
    checks: Sequence[Check],
    project: Path,
    runner: CheckRunner,
    before: Callable[[Path], None],
    scratch: Path,
    *,
    dependencies_changed: bool = False,
) -> Verification:
    """Run `checks` in `project`; re-run each failing one on the tree before the run, which
    `before` writes into an empty folder under `scratch` (with the project's dependency
    folders: a check that runs them is compared only if the run left them as they were,
    `dependencies_changed` False; one that could not be compared is never excused)."""
    results, ran = [], []
    for check in checks:
        started = time.monotonic()
        result, tail, did_run = await runner.run(check, project)
        command = check.command or "(checked by wizard)"
        results.append(CheckResult(check.name, command, result, None,
                                   round(time.monotonic() - started, 3), tail))  # fmt: skip
        ran.append(did_run)
    compared = [c.compare and not (c.needs_dependencies and dependencies_changed) for c in checks]
    if any(r.status == "failed" and ok for ok, r in zip(compared, results, strict=True)):
        results = await _before_the_run(compared, checks, results, ran, runner, before, scratch)
    if dependencies_changed:
        results = [_not_compared(c, r) for c, r in zip(checks, results, strict=True)]
    status: CheckStatus = "passed"
    if any(result.counts for result in results):
        status = "failed"
    elif all(result.status == "skipped" for result in results):
        status = "skipped"  # nothing could be checked
    return Verification(status, tuple(results))


def _not_compared(check: Check, result: CheckResult) -> CheckResult:
    """A failed check that runs the dependencies the run changed, said so."""
    if result.status != "failed" or not check.needs_dependencies:
        return result
    note = "(not compared with the tree before the run: the run changed its dependencies)"
    return replace(result, output_tail=f"{result.output_tail}\n{note}".strip())


async def _before_the_run(
    compared: Sequence[bool],
    checks: Sequence[Check],
    results: list[CheckResult],
    ran: Sequence[bool],
    runner: CheckRunner,
    before: Callable[[Path], None],
    scratch: Path,
) -> list[CheckResult]:
    """Each failed check's status on the tree before the run. One that could not run there
    (it timed out, its command was not found) while it ran after the run is `skipped`:
    nothing to compare with, so it excuses nothing."""
    folder = Path(tempfile.mkdtemp(prefix="before-", dir=scratch))
    private = Path(tempfile.mkdtemp(prefix="settings-", dir=scratch))
    tree_runner = runner.for_tree(folder, private)
    if tree_runner is None:  # a folder the agent could write: nothing runs there
        return results
    try:
        await asyncio.to_thread(before, folder)
    except Exception:  # no tree to compare with: the failure counts
        return results
    redone = []
    for check, result, compare, ran_after in zip(checks, results, compared, ran, strict=True):
        if result.status == "failed" and compare:
            status, _, ran_before = await tree_runner.run(check, folder)
            result = replace(result, before="skipped" if ran_after and not ran_before else status)
        redone.append(result)
    return redone


def check_runner(policy: SandboxPolicy | None, workspace: Path) -> CheckRunner:
    """The runner for a run's checks: its sandbox policy, through the runtime's CLI."""
    if policy is None:
        return CheckRunner(None)
    engine = installed_bundle()
    if engine is None:
        return CheckRunner(None, "the sandbox runtime is not installed")
    return CheckRunner(SandboxedShell.build(policy, engine, workspace))


NOT_VERIFIED = "Not verified (--no-verify): nothing checked that the project still works."
NOTHING_CHANGED = "the run changed no app file, and nothing proved the integration works"


async def verified(
    outcome: Outcome,
    context: RunContext,
    journal: RunJournal,
    record: RunRecord | None,
    skip: bool,
    full: bool = False,
    answers: tuple[tuple[str, str], ...] = (),
) -> Outcome:
    """A run that would succeed, checked and proved: succeeded (set up, proven or not), or
    unverified with the check or proof that failed (the journal's record says so too). Any
    other ending is returned as it is. `answers`: the user's to `wizard_ask` in the run."""
    if outcome.status != "succeeded":
        return outcome
    changed = record.changed if record is not None else []
    # Without a journal (no git) nothing says what the run changed: it is not held against it.
    app_changed = (
        record is None
        or not context.program.sets_up
        or any(not path.startswith(SKILL_FILES) for path in changed)
    )
    if skip:
        skipped = Verification("skipped")
        if not app_changed:
            return _nothing_done(outcome, context, skipped)
        return replace(outcome, verification=skipped, warnings=(*outcome.warnings, NOT_VERIFIED))
    dependencies = record.dependency_changes if record is not None else {}
    before = journal.contents_before(record, context.resume_from) if full else None
    checks = checks_for(context.program.checks, changed, context.project_dir, full=full,
                        dependencies=dependencies, before=before)  # fmt: skip
    proofs = context.program.proofs
    if not checks and not proofs:
        skipped = Verification("skipped")
        if not app_changed:
            return _nothing_done(outcome, context, skipped)
        return replace(outcome, verification=skipped)
    context.sink(SpinnerStarted("Checking that the project still works..."))
    # wizard's own folder, closed to the agent's commands, and so is every folder above it.
    workspace = Path(tempfile.mkdtemp(prefix="wizard-verify-", dir=socket_temp_dir()))
    try:
        runner = check_runner(context.sandbox, workspace)
        result = Verification("skipped")
        if checks:
            result = await verify(checks, context.project_dir, runner,
                                  journal.materialiser(record), workspace,
                                  dependencies_changed=bool(dependencies))  # fmt: skip
        if proofs:
            context.sink(SpinnerStarted("Proving that the integration works..."))
            facts = _facts(context, journal, record, answers)
            found = await prove(proofs, context.project_dir, runner.sandbox, workspace,
                                runner.unsandboxable, facts)  # fmt: skip
            result = replace(result, proofs=found)
            if result.failed_proofs:
                result = replace(result, status="failed")
            elif result.status == "skipped" and result.proven:  # a proof is a check that ran
                result = replace(result, status="passed")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if result.failures or result.failed_proofs:
        context.sink(SpinnerStopped("A check failed" if result.failures else "A proof failed"))
        unverified = _unverified_outro(context, result)
        return _unverified(outcome, unverified, _reason(result), result)
    if not app_changed and not result.proven:
        return _nothing_done(outcome, context, result)
    done = "Checks passed: the preview is ready to apply" if context.preview else None
    context.sink(SpinnerStopped(done or context.program.success_message))
    return replace(outcome, verification=result, outro=_proven_outro(outcome.outro, result))


def _facts(
    context: RunContext,
    journal: RunJournal,
    record: RunRecord | None,
    answers: tuple[tuple[str, str], ...],
) -> RunFacts:
    """What the proofs know of the run: the project before it (since the run a resumed one
    carried on), the user's answers, and what the program needs of a project."""
    changed = journal.contents_before(record, context.resume_from)
    before = Before(changed) if changed is not None else None
    return RunFacts(before, answers, context.ask is not None, context.program.fits)


def _proven_outro(outro: Outro | None, result: Verification) -> Outro | None:
    """The success screen, saying what was proven, or that the setup is not proven and why."""
    if outro is None or not result.proofs:
        return outro
    lines = [f"Proven: {p.name} ({p.evidence})" for p in result.proven]
    lines += [f"Not proven: {p.name}: {p.reason}" for p in result.unproven]
    message = outro.message
    if result.unproven:
        message = f"{message}, not proven: {result.unproven[0].reason}"
    elif lines:
        message = f"{message}, and proven"
    body = "\n".join(filter(None, (outro.body, "\n".join(lines))))
    return replace(outro, message=message, body=body)


def _nothing_done(outcome: Outcome, context: RunContext, result: Verification) -> Outcome:
    """A run that said it was done, changed no app file and proved nothing: never set up."""
    context.sink(SpinnerStopped("Nothing was set up"))
    body = (
        "The agent said it was done, but it changed none of the app's files, and no proof "
        "showed the integration already works. Nothing is reported as set up: run the program "
        "again, or check the log for what the agent did."
    )
    outro = Outro("error", f"{context.program.label}: nothing was set up", body)
    return _unverified(outcome, outro, NOTHING_CHANGED, result)


def _unverified(outcome: Outcome, outro: Outro, reason: str, result: Verification) -> Outcome:
    """`outcome`, the run's whole (its tasks, usage, resume), now unverified by `result`."""
    return replace(outcome, status="unverified", outro=outro, reason=reason, verification=result)


def checks_wrote(paths: Sequence[str]) -> str:
    """The warning for files that appeared or changed in the project while checks ran."""
    named = ", ".join(shown(path) for path in paths[:5])
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return (
        f"The checks changed files in the project: {named}{more}. They are journaled with the "
        "run: `wizard diff` shows them and `wizard undo` takes them back."
    )


def _reason(result: Verification) -> str:
    failed = [f"{check.name} failed" for check in result.failures]
    failed += [f"{proof.name} was not proven: {proof.reason}" for proof in result.failed_proofs]
    return "; ".join(failed)


def _unverified_outro(context: RunContext, result: Verification) -> Outro:
    back = (
        "discard them with `wizard discard`"
        if context.preview
        else "take them back with `wizard undo`"
    )
    after = f"Nothing is reported as set up: review the changes with `wizard diff`, or {back}."
    if not result.failures:
        proof = result.failed_proofs[0]
        body = (
            f"The agent said it was done, but wizard could not prove “{proof.name}”: "
            f"{proof.reason}.\n\n{after}"
        )
        return Outro("error", f"{context.program.label}: not proven after the run", body)
    failed = result.failures[0]
    tail = f"\n\n{failed.output_tail}" if failed.output_tail else ""
    more = len(result.failures) - 1
    others = f" ({more} more check{'s' if more != 1 else ''} failed too)" if more else ""
    before = {
        "passed": "and passed before them",
        "skipped": "and could not run on the project as it was before them (so nothing excuses it)",
    }.get(failed.before or "", "")
    body = (
        f"The agent said it was done, but the check “{failed.name}” fails after its changes"
        f"{' ' + before if before else ''}{others}.{tail}\n\n{after}"
    )
    return Outro("error", f"{context.program.label}: a check failed after the run", body)
