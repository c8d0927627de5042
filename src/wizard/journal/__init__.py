"""The run journal: every run's project files before and after, `wizard undo`, and previews
(a run on a copy of the project, applied or discarded after).

It records and restores project files and knows nothing of harnesses; the runner calls it
before and after a run (`Journal.begin` / `Journal.finish`).
"""

from wizard.journal.pruning import prune_demo_journals, prune_previews
from wizard.journal.runs import ApplyRefused, Journal, RunRecord, Undone, UndoRefused
from wizard.journal.store import Listed, Walked, git_available

__all__ = [
    "ApplyRefused",
    "Journal",
    "Listed",
    "RunRecord",
    "UndoRefused",
    "Undone",
    "Walked",
    "git_available",
    "prune_demo_journals",
    "prune_previews",
]
