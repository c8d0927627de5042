"""`wizard resume`: which interrupted orchestrator run may be carried on, and whether it may.

A run can be resumed when it was an orchestrator run that ended cancelled (Ctrl-C, a signal)
or on an engine failure, an API error or a rate limit: ways of ending that say nothing about
the plan. Its queue is in wizard's state folder; the tasks that finished are carried over and
do not run again (`TaskQueue.carry_over`). Nothing may have changed in the project since the
run ended: the journal compares the project now with the run's after-snapshot, and a resume
is refused, naming the files, when they differ. The resume itself is a new run, journaled.
"""

from __future__ import annotations

from pathlib import Path

from wizard.errors import UsageError
from wizard.journal import Journal, RunRecord
from wizard.journal.lock import ProjectLocked, lock_holder
from wizard.outcome import AgentErrorType
from wizard.runner.sequence.orchestrator.sequence import queue_path

_RESUMABLE_ERRORS = {
    AgentErrorType.ENGINE_FAILURE.value,
    AgentErrorType.API_ERROR.value,
    AgentErrorType.RATE_LIMIT.value,
}


def resumable(record: RunRecord) -> bool:
    """Whether a journaled run ended in a way `wizard resume` carries on."""
    ended = record.status == "cancelled" or (
        record.status == "failed" and record.error_type in _RESUMABLE_ERRORS
    )
    return (
        record.kind == "run"
        and record.sequence == "orchestrator"
        and ended
        and queue_path(record.run_id).is_file()
    )


def resumable_run(project: Path, run_id: str | None) -> RunRecord:
    """The run to resume (`run_id`, or the latest resumable one); a `UsageError` naming why
    not, and what to do, otherwise (another run working on the project: that run)."""
    if (holder := lock_holder(project)) is not None:
        raise ProjectLocked(project.resolve(), holder)
    journal = Journal(project)
    if run_id is None:
        found = next((r for r in journal.records() if r.after is not None and resumable(r)), None)
        if found is None:
            raise UsageError(
                f"No interrupted orchestrator run of {journal.project} to resume.",
                "`wizard resume` carries on an orchestrator run that was cancelled or ended on "
                "an engine failure or API error; `wizard runs --project DIR` lists the runs.",
            )
        record = found
    else:
        record = journal.find(run_id, undoable=False)
        if record.kind == "preview":
            raise UsageError(
                f"Run {record.run_id} is a preview, which cannot be resumed.",
                f"`wizard discard {record.run_id}`, then run the program again with --preview.",
            )
        if not resumable(record):
            raise UsageError(
                f"Run {record.run_id} cannot be resumed: it ended {record.status}"
                + (f" ({record.error_type})" if record.error_type else "")
                + f" as a {record.sequence or 'linear'} run.",
                "Only an orchestrator run that was cancelled or ended on an engine failure, "
                "an API error or a rate limit can be resumed; run the program again instead.",
            )
    if changed := journal.changed_since_end(record):
        listed = "\n".join(f"  {path}" for path in changed)
        raise UsageError(
            f"Not resuming run {record.run_id}: the project changed since it ended:\n{listed}",
            "Nothing was run. Undo or keep those edits deliberately (`wizard diff`, "
            f"`wizard undo {record.run_id}`), or run the program again from the start.",
        )
    return record
