"""The host tools: env files without values, package managers, wizard_ask, skills."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wizard.skills.sources import BundledSkills
from wizard.tools.env import env_tools
from wizard.tools.fence import Fence
from wizard.tools.project import NO_ONE_TO_ASK, project_tools
from wizard.tools.skills import skill_tools

SECRET = "value-that-must-stay-hidden"


def tool(tools: list[Any], name: str) -> Any:
    return next(t for t in tools if t.name == name).handler


async def test_check_env_keys_reports_presence_only(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"API_KEY={SECRET}\nexport OTHER=1\n# COMMENTED=x\n")
    check = tool(env_tools(Fence(tmp_path)), "check_env_keys")
    result = await check({"filePath": ".env", "keys": ["API_KEY", "OTHER", "COMMENTED", "MISSING"]})
    assert json.loads(result.text) == {
        "file": "exists",
        "API_KEY": "present",
        "OTHER": "present",
        "COMMENTED": "missing",
        "MISSING": "missing",
    }
    assert SECRET not in result.text


async def test_set_env_values_updates_in_place_and_hides_values(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A=1\nB=2\n")
    set_values = tool(env_tools(Fence(tmp_path)), "set_env_values")
    result = await set_values({"filePath": ".env", "values": {"B": SECRET, "C": "3"}})
    assert not result.is_error and SECRET not in result.text
    assert (tmp_path / ".env").read_text() == f"A=1\nB={SECRET}\nC=3\n"


async def test_set_env_values_writes_atomically_and_a_new_file_is_private(tmp_path: Path) -> None:
    set_values = tool(env_tools(Fence(tmp_path)), "set_env_values")
    await set_values({"filePath": ".env.local", "values": {"K": SECRET}})
    assert (tmp_path / ".env.local").stat().st_mode & 0o777 == 0o600
    (tmp_path / ".env").write_text("A=1\n")
    (tmp_path / ".env").chmod(0o640)
    before = (tmp_path / ".env").stat().st_ino
    await set_values({"filePath": ".env", "values": {"B": "2"}})
    after = (tmp_path / ".env").stat()
    assert after.st_ino != before, "written in place instead of renamed over"
    assert after.st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir() if "wizard-" in p.name] == []


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../.env", "outside"),
        ("app.py", "not an environment file"),
        ("/etc/.env", "outside"),
        ("", "filePath"),
    ],
)
async def test_env_tools_refuse_other_files(tmp_path: Path, path: str, why: str) -> None:
    (tmp_path / "app.py").write_text("x")
    for name in ("check_env_keys", "set_env_values"):
        handler = tool(env_tools(Fence(tmp_path)), name)
        result = await handler({"filePath": path, "keys": ["A"], "values": {"A": "1"}})
        assert result.is_error and why in result.text
    assert (tmp_path / "app.py").read_text() == "x"


async def test_set_env_values_rejects_multiline_values(tmp_path: Path) -> None:
    set_values = tool(env_tools(Fence(tmp_path)), "set_env_values")
    result = await set_values({"filePath": ".env", "values": {"A": "1\nB=2"}})
    assert result.is_error and not (tmp_path / ".env").exists()


async def test_detect_package_manager(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "pnpm-lock.yaml").write_text("")
    (tmp_path / "requirements.txt").write_text("")
    detect = tool(project_tools(tmp_path, None), "detect_package_manager")
    names = [m["name"] for m in json.loads((await detect({})).text)["packageManagers"]]
    assert names == ["pnpm", "pip"]


async def test_wizard_ask_with_no_one_to_ask(tmp_path: Path) -> None:
    ask = tool(project_tools(tmp_path, None), "wizard_ask")
    result = await ask({"questions": ["Which region?"]})
    assert result.is_error and result.text == NO_ONE_TO_ASK
    assert "[ABORT] requirements-incomplete" in result.text


async def test_wizard_ask_through_the_ui(tmp_path: Path) -> None:
    async def answer(questions: list[str]) -> list[str]:
        return [f"answer to {q}" for q in questions]

    ask = tool(project_tools(tmp_path, answer), "wizard_ask")
    result = await ask({"questions": ["Region?"]})
    assert json.loads(result.text) == {"Region?": "answer to Region?"}


async def test_skill_tools(tmp_path: Path) -> None:
    tools = skill_tools(BundledSkills(), tmp_path)
    menu = await tool(tools, "load_skill_menu")({})
    assert "- transactional-email:" in menu.text
    installed = await tool(tools, "install_skill")({"skillId": "mcp-analytics"})
    assert "Read .claude/skills/mcp-analytics/SKILL.md" in installed.text
    missing = await tool(tools, "install_skill")({"skillId": "nope"})
    assert missing.is_error and "[SKILL-INSTALL-FAILED]" in missing.text
