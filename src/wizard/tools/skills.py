"""`load_skill_menu` and `install_skill`: the agent picks and installs extra skills."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.signals import Marker
from wizard.skills.install import install_skill, skill_file
from wizard.skills.sources import SkillFetchError, SkillSource
from wizard.tools.base import HostTool, ToolResult, schema


def skill_tools(source: SkillSource, project_dir: Path) -> list[HostTool]:
    """The two skill tools over `source`."""

    async def load_menu(args: Mapping[str, Any]) -> ToolResult:
        category = args.get("category")
        try:
            entries = source.menu()
        except SkillFetchError as exc:
            return ToolResult(f"Error: the skill menu could not be loaded: {exc}", is_error=True)
        lines = [f"- {e.id}: {e.name}" for e in entries if not category or e.category == category]
        return ToolResult("\n".join(lines) or "No skills in that category.")

    async def install(args: Mapping[str, Any]) -> ToolResult:
        result = install_skill(source, str(args.get("skillId", "")), project_dir)
        if not result.ok:
            hint = f" If you go on without it, write {Marker.SKILL_INSTALL_FAILED} <why>."
            return ToolResult(f"Error installing skill: {result.message()}{hint}", is_error=True)
        return ToolResult(f"Installed {result.skill_id}. Read {skill_file(result)} and follow it.")

    return [
        HostTool(
            "load_skill_menu",
            "List the skills that can be installed, optionally of one category.",
            schema({"category": {"type": "string"}}),
            load_menu,
        ),
        HostTool(
            "install_skill",
            "Install a skill by id into the project's .claude/skills folder.",
            schema({"skillId": {"type": "string"}}, ["skillId"]),
            install,
        ),
    ]
