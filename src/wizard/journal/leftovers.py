"""What `wizard undo` does about the changes the journal could not store: a repository that
appeared during the run, and files changed in dependency folders.

Neither can be put back as it was, and both run code the user did not write: a `.git` folder
runs its config on the user's next `git status` (a git-aware prompt runs one on `cd`), a file
in `node_modules` on the next `node`. So undo removes them, and says what to reinstall.
Every path is walked from the project without following a link, so a folder the agent
turned into a link out of the project is never what is removed.
"""

from __future__ import annotations

import contextlib
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from wizard.atomic import write_atomically
from wizard.journal.dependencies import ADDED, REMOVED

REINSTALL = "reinstall the project's dependencies to bring it back"


def remove_unjournaled(
    project: Path,
    repos_added: Sequence[str],
    repos_before: Mapping[str, str],
    dependency_changes: Mapping[str, str],
) -> list[str]:
    """Remove the repositories a run planted (`repos_added`; a gitfile it repointed is put
    back from `repos_before`) and the dependency files it added or changed; a line for each,
    and for each file it removed that undo cannot bring back."""
    lines = []
    for repo in repos_added:
        lines.append(_put_back_repository(project, repo, repos_before.get(repo)))
    gone: list[str] = []  # folders removed whole: what was in them is not named again
    for name, change in sorted(dependency_changes.items()):
        if any(name.startswith(f"{folder}/") for folder in gone):
            continue
        path = beneath(project, name)
        if change == REMOVED:
            lines.append(f"cannot restore {name} (removed by the run, not journaled): {REINSTALL}")
        elif path is None:
            lines.append(f"left {name}: a folder on its way is no longer a folder")
        elif _is(path, stat.S_ISDIR) and change == ADDED:
            shutil.rmtree(path, ignore_errors=True)
            gone.append(name)
            lines.append(f"removed {name} (added by the run, not journaled)")
        elif _is(path, stat.S_ISDIR):
            lines.append(f"left {name} (changed by the run, not journaled): {REINSTALL}")
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            lines.append(f"removed {name} ({change} by the run, not journaled): {REINSTALL}")
    return lines


def _put_back_repository(project: Path, repo: str, before: str | None) -> str:
    """Remove a `.git` the run made, or put back the gitfile it pointed elsewhere."""
    path = beneath(project, repo)
    if path is None:
        return f"left {repo}: a folder on its way is no longer a folder"
    if _is(path, stat.S_ISDIR):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    if before is not None and before.startswith("gitfile:"):
        content = before.removeprefix("gitfile:").encode(errors="surrogateescape")
        write_atomically(path, content)
        return f"restored {repo}, a submodule's pointer the run changed"
    return f"removed {repo}, a git repository the run made"


def beneath(project: Path, relative: str) -> Path | None:
    """`relative` under `project` if no folder on the way is a link (or not a folder)."""
    parts = PurePosixPath(relative).parts
    if not parts or ".." in parts or PurePosixPath(relative).is_absolute():
        return None
    current = project
    for part in parts[:-1]:
        current = current / part
        if not _is(current, stat.S_ISDIR):
            return None
    return current / parts[-1]


def _is(path: Path, kind: Callable[[int], bool]) -> bool:
    """Whether `path` itself (never a link's target) is of `kind`."""
    try:
        return kind(path.lstat().st_mode)
    except OSError:
        return False
