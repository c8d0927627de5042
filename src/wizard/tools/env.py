"""`check_env_keys` and `set_env_values`: the only way the agent touches `.env*` files.

Both resolve the path through the fence (inside the project, symlinks followed) and accept
only environment files. Neither ever shows a value back to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.atomic import write_atomically
from wizard.tools.base import HostTool, ToolResult, schema
from wizard.tools.fence import Fence

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def _env_path(fence: Fence, raw: Any) -> Path | str:
    """The resolved env file, or an error text."""
    if not isinstance(raw, str) or not raw:
        return "Error: filePath must name an environment file such as .env"
    path = fence.resolve(raw)
    if path is None:
        return f"Error: {raw} is outside the project directory."
    if not path.name.startswith(".env"):
        return f"Error: {raw} is not an environment file (.env, .env.local, ...)."
    return path


def _present_keys(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    return {m.group(1) for line in path.read_text().splitlines() if (m := _LINE.match(line))}


def env_tools(fence: Fence) -> list[HostTool]:
    """The two env-file tools, fenced to the project."""

    async def check(args: Mapping[str, Any]) -> ToolResult:
        path = _env_path(fence, args.get("filePath"))
        if isinstance(path, str):
            return ToolResult(path, is_error=True)
        present = _present_keys(path)
        keys = [str(k) for k in args.get("keys", [])]
        answer = {key: "present" if key in present else "missing" for key in keys}
        return ToolResult(json.dumps({"file": "exists" if path.is_file() else "missing", **answer}))

    async def set_values(args: Mapping[str, Any]) -> ToolResult:
        path = _env_path(fence, args.get("filePath"))
        if isinstance(path, str):
            return ToolResult(path, is_error=True)
        values = args.get("values")
        if not isinstance(values, dict) or not values:
            return ToolResult("Error: values must map keys to values.", is_error=True)
        bad = [k for k, v in values.items() if not _KEY.match(k) or "\n" in str(v)]
        if bad:
            return ToolResult(f"Error: invalid keys or multi-line values: {bad}", is_error=True)
        _write_values(path, {str(k): str(v) for k, v in values.items()})
        return ToolResult(f"Set {', '.join(sorted(values))} in {args['filePath']} (values hidden).")

    string_list = {"type": "array", "items": {"type": "string"}}
    return [
        HostTool(
            "check_env_keys",
            "Report which keys exist in an environment file (.env*). Values are never shown.",
            schema({"filePath": {"type": "string"}, "keys": string_list}, ["filePath", "keys"]),
            check,
        ),
        HostTool(
            "set_env_values",
            "Set keys in an environment file (.env*) in place, creating it if needed. "
            "Values are never shown back.",
            schema(
                {
                    "filePath": {"type": "string"},
                    "values": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                ["filePath", "values"],
            ),
            set_values,
        ),
    ]


def _write_values(path: Path, values: dict[str, str]) -> None:
    lines = path.read_text().splitlines() if path.is_file() else []
    remaining = dict(values)
    for index, line in enumerate(lines):
        match = _LINE.match(line)
        if match and match.group(1) in remaining:
            lines[index] = f"{match.group(1)}={remaining.pop(match.group(1))}"
    lines += [f"{key}={value}" for key, value in remaining.items()]
    # A new env file holds secrets: only its owner may read it.
    mode = None if path.exists() else 0o600
    write_atomically(path, ("\n".join(lines) + "\n").encode(), mode)
