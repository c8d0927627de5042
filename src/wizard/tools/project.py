"""`detect_package_manager` and `wizard_ask`: what the agent may learn about the project
and ask the user."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from wizard.signals import Marker
from wizard.tools.base import HostTool, ToolResult, schema

# (ecosystem, file, manager, install command), most specific first in each ecosystem.
_LOCKS = (
    ("js", "pnpm-lock.yaml", "pnpm", "pnpm install"),
    ("js", "yarn.lock", "yarn", "yarn install"),
    ("js", "bun.lockb", "bun", "bun install"),
    ("js", "package-lock.json", "npm", "npm install"),
    ("js", "package.json", "npm", "npm install"),
    ("python", "uv.lock", "uv", "uv sync"),
    ("python", "poetry.lock", "poetry", "poetry install"),
    ("python", "Pipfile.lock", "pipenv", "pipenv install"),
    ("python", "requirements.txt", "pip", "pip install -r requirements.txt"),
    ("python", "pyproject.toml", "pip", "pip install -e ."),
)

AskFunction = Callable[[list[str]], Awaitable[list[str] | None]]

NO_ONE_TO_ASK = (
    "Error: wizard_ask is not available: this run is not interactive and no one can answer. "
    "Go on with sensible defaults if you can; if you cannot go on without the answers, write "
    f"{Marker.ABORT} requirements-incomplete on a line of its own and stop."
)


def detect_package_managers(project_dir: Path) -> list[dict[str, str]]:
    """The package managers the project's files point to."""
    found, ecosystems = [], set()
    for ecosystem, evidence, manager, install in _LOCKS:
        if ecosystem not in ecosystems and (project_dir / evidence).is_file():
            ecosystems.add(ecosystem)
            found.append({"name": manager, "evidence": evidence, "install": install})
    return found


def project_tools(project_dir: Path, ask: AskFunction | None) -> list[HostTool]:
    """`detect_package_manager` and `wizard_ask` (which errors when no one can answer)."""

    async def detect(args: Mapping[str, Any]) -> ToolResult:
        return ToolResult(json.dumps({"packageManagers": detect_package_managers(project_dir)}))

    async def wizard_ask(args: Mapping[str, Any]) -> ToolResult:
        questions = [str(q) for q in args.get("questions", [])][:8]
        if not questions:
            return ToolResult("Error: ask at least one question.", is_error=True)
        answers = await ask(questions) if ask is not None else None
        if answers is None:
            return ToolResult(NO_ONE_TO_ASK, is_error=True)
        return ToolResult(json.dumps(dict(zip(questions, answers, strict=False))))

    questions = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 8}
    return [
        HostTool(
            "detect_package_manager",
            "Detect the project's package manager(s) from its lock and manifest files.",
            schema({}),
            detect,
        ),
        HostTool(
            "wizard_ask",
            "Ask the user up to 8 short questions and get their answers. Ask only what you "
            "cannot find in the project.",
            schema({"questions": questions}, ["questions"]),
            wizard_ask,
        ),
    ]
