"""Real apps (`tests/corpus`) as a run leaves them: a temporary copy, changed as an agent
would, seen with what it held before the run, as the journal hands it to the proofs."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from wizard.runner.proofs.codebase import Before, Codebase

CORPUS = Path(__file__).parents[2] / "corpus"
Edit = str | Callable[[str], str] | None  # new content, a change of the old, or removed


def after_run(folder: Path, app: str, edits: Mapping[str, Edit]) -> Codebase:
    """`app` copied into `folder` and changed by `edits` (path → edit), with what each path
    held before the run."""
    project = folder / app
    shutil.copytree(CORPUS / app, project, symlinks=True)
    return changed(project, edits)


def changed(project: Path, edits: Mapping[str, Edit]) -> Codebase:
    """`project` changed by `edits`, seen with what it held before."""
    before: dict[str, bytes | None] = {}
    for path, edit in edits.items():
        target = project / path
        before[path] = target.read_bytes() if target.exists() else None
        if edit is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(edit(target.read_text()) if callable(edit) else edit)
    return Codebase(project, Before(before))


def replacing(old: str, new: str) -> Callable[[str], str]:
    """An edit that replaces `old` (which must be there) with `new`, once."""

    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return edit


def appending(more: str) -> Callable[[str], str]:
    """An edit that adds `more` at the end."""
    return lambda text: text + more
