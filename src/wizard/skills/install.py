"""Installing a skill into the project, where the agent's prompt points it.

A skill lands in `<project>/.claude/skills/<id>/` with a `.wizard-skill` marker. A folder
there that the wizard did not install is the user's, and is never overwritten.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from wizard.atomic import replace_folder
from wizard.errors import ConfigError
from wizard.layout import SKILLS_ROOT
from wizard.skills.skill import SKILL_FILE, read_skill
from wizard.skills.sources import SkillFetchError, SkillSource

MARKER = ".wizard-skill"

InstallKind = Literal[
    "ok", "menu-fetch-failed", "skill-not-found", "download-failed", "invalid-skill", "conflict",
    "unsafe-path",
]  # fmt: skip


@dataclass(frozen=True)
class SkillInstall:
    """How installing a skill went; `path` is relative to the project when it worked."""

    kind: InstallKind
    skill_id: str
    path: Path | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Whether the skill is installed."""
        return self.kind == "ok"

    def message(self) -> str:
        """What went wrong, and what to do about it."""
        fixes = {
            "ok": f"Installed {self.skill_id} at {self.path}.",
            "menu-fetch-failed": "Could not read the skill menu. Check WIZARD_SKILLS_URL or "
            "--skills-dir, or unset them to use the bundled skills.",
            "skill-not-found": f"No skill named '{self.skill_id}'. Run `wizard programs` for the "
            "bundled skills, or point --skills-dir at a folder that holds it.",
            "download-failed": "Downloading the skill failed. Check your network and "
            "WIZARD_SKILLS_URL, then run again.",
            "invalid-skill": "The skill is malformed; fix its SKILL.md front matter.",
            "conflict": f"{SKILLS_ROOT / self.skill_id} already exists and was not installed by "
            "the wizard; move it away (nothing was changed), then run again.",
            "unsafe-path": f"{SKILLS_ROOT / self.skill_id} passes through a link or something "
            "that is not a folder; wizard installs skills only into real folders of the "
            "project. Nothing was changed.",
        }
        return f"{fixes[self.kind]} {self.detail}".strip()


def planned_install(skill_id: str) -> SkillInstall:
    """`skill_id`'s install as it will be once it worked: where it goes in the project."""
    return SkillInstall("ok", skill_id, path=Path(os.path.normpath(SKILLS_ROOT / skill_id)))


def install_skill(source: SkillSource, skill_id: str, project_dir: Path) -> SkillInstall:
    """Install `skill_id` from `source` into the project."""
    try:
        offered = {entry.id for entry in source.menu()}
    except SkillFetchError as exc:
        return SkillInstall("menu-fetch-failed", skill_id, detail=str(exc))
    if skill_id not in offered:
        return SkillInstall("skill-not-found", skill_id)
    relative = SKILLS_ROOT / skill_id
    target = project_dir / relative
    if (unsafe := _unsafe_component(project_dir, relative)) is not None:
        return SkillInstall("unsafe-path", skill_id, detail=f"({unsafe})")
    if target.exists() and not (target / MARKER).exists():
        return SkillInstall("conflict", skill_id)
    with tempfile.TemporaryDirectory(prefix="wizard-skill-") as staging:
        staged = Path(staging) / skill_id
        staged.mkdir()
        try:
            source.fetch(skill_id, staged)
            read_skill(staged)
        except SkillFetchError as exc:
            return SkillInstall("download-failed", skill_id, detail=str(exc))
        except ConfigError as exc:
            return SkillInstall("invalid-skill", skill_id, detail=exc.message)
        (staged / MARKER).write_text("installed by wizard\n")
        target.parent.mkdir(parents=True, exist_ok=True)
        # Copied beside the target, then renamed into place: never a half-installed skill.
        beside = target.with_name(f".{skill_id}.wizard-new-{os.getpid()}")
        shutil.rmtree(beside, ignore_errors=True)
        shutil.copytree(staged, beside)
        replace_folder(beside, target)
    return planned_install(skill_id)


def _unsafe_component(project_dir: Path, relative: Path) -> str | None:
    """The first part of `relative` that is a link or not a folder, so that an install there
    could land outside the project; None when every existing part is a real folder."""
    path = project_dir
    for part in relative.parts:
        path = path / part
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return str(path.relative_to(project_dir))
    return None


def skill_file(install: SkillInstall) -> Path:
    """The SKILL.md of an installed skill, relative to the project."""
    assert install.path is not None
    return install.path / SKILL_FILE
