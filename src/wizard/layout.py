"""Where wizard puts its own files: the skills it installs in a project for a run (the
journal, the runner and the UI all tell those files from the app's), and its state folder.
A leaf: the engine's early start (`runner.harness.pi.early`) reads it with nothing else
loaded."""

from __future__ import annotations

import os
from pathlib import Path

SKILLS_ROOT = Path(".claude") / "skills"
# How the paths of installed skills' files start, as the journal lists a project's files.
SKILL_FILES = SKILLS_ROOT.as_posix() + "/"


def state_root() -> Path:
    """wizard's state folder (`$WIZARD_STATE_DIR`, else `$XDG_STATE_HOME/wizard`)."""
    if custom := os.environ.get("WIZARD_STATE_DIR"):
        return Path(custom)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "wizard"
