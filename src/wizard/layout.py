"""Where wizard puts its own files in a project: the skills it installs for a run. A leaf:
the journal, the runner and the UI all tell those files from the app's."""

from __future__ import annotations

from pathlib import Path

SKILLS_ROOT = Path(".claude") / "skills"
# How the paths of installed skills' files start, as the journal lists a project's files.
SKILL_FILES = SKILLS_ROOT.as_posix() + "/"
