"""Why the journal refuses to undo a run or apply a preview without `--force`: the user's own
edits, or a preview that did not succeed. Nothing is touched when one is raised."""

from __future__ import annotations

from wizard.errors import UsageError


class UndoRefused(UsageError):
    """Files the run changed were changed again afterwards; nothing was touched."""

    def __init__(self, run_id: str, paths: list[str]) -> None:
        listed = "\n".join(f"  {path}" for path in paths)
        super().__init__(
            f"Not undoing run {run_id}: these files changed after it ended:\n{listed}",
            f"Nothing was changed. Keep or move your edits, or run `wizard undo {run_id} "
            "--force` to put the files back as they were before the run anyway.",
        )
        self.paths = paths


class ApplyRefused(UsageError):
    """A preview that must not be applied without `--force`: it did not succeed, or files it
    changed were changed in the project since it started. Nothing was touched."""

    @classmethod
    def conflicts(cls, run_id: str, paths: list[str]) -> ApplyRefused:
        """Files the preview changed changed in the project too."""
        listed = "\n".join(f"  {path}" for path in paths)
        return cls(
            f"Not applying preview {run_id}: these files changed in the project since the "
            f"preview started:\n{listed}",
            f"Nothing was changed. Compare them with `wizard diff {run_id}`, then keep or move "
            f"your edits, or run `wizard apply {run_id} --force` to write the preview's "
            "version over them (`wizard undo` takes that back).",
        )

    @classmethod
    def ended(cls, run_id: str, status: str | None) -> ApplyRefused:
        """The preview's run did not succeed (it ended `status`): its change may be partial
        or broken."""
        why = {
            "aborted": "its skill stopped it before it was done",
            "unverified": "a check or a proof failed after its changes",
        }.get(status or "", "it did not finish its work")
        return cls(
            f"Not applying preview {run_id}: it ended {status or 'early'} ({why}), so its "
            "change may be partial or broken.",
            f"Nothing was changed. Review it with `wizard diff {run_id}`; `wizard apply "
            f"{run_id} --force` applies it anyway, `wizard discard {run_id}` drops it.",
        )
