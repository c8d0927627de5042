"""`check_env_keys` and `set_env_values`: the only way the agent touches `.env*` files.

Both open the file through `ProjectRoot` (beneath the project, no link out, a regular file)
and accept only environment files. Neither ever shows a value back to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from wizard.tools.base import HostTool, ToolResult, schema
from wizard.tools.fence import Fence
from wizard.tools.paths import ProjectRoot, Refusal

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def _env_text(root: ProjectRoot, raw: Any) -> str | ToolResult | None:
    """The env file's text (None when it does not exist yet), or the error to give back."""
    if not isinstance(raw, str) or not raw:
        return ToolResult("Error: filePath must name an environment file such as .env", True)
    data = root.read_bytes(raw, env=True)
    if isinstance(data, Refusal):
        if data.kind == "missing" and PurePosixPath(raw).name.startswith(".env"):
            return None
        return ToolResult(f"Error: {data.reason}", is_error=True)
    return data.decode(errors="replace")


def _keys_in(text: str | None) -> set[str]:
    lines = (text or "").splitlines()
    return {m.group(1) for line in lines if (m := _LINE.match(line))}


def env_tools(fence: Fence) -> list[HostTool]:
    """The two env-file tools, fenced to the project."""

    async def check(args: Mapping[str, Any]) -> ToolResult:
        text = _env_text(fence.root, args.get("filePath"))
        if isinstance(text, ToolResult):
            return text
        present = _keys_in(text)
        keys = [str(k) for k in args.get("keys", [])]
        answer = {key: "present" if key in present else "missing" for key in keys}
        return ToolResult(json.dumps({"file": "missing" if text is None else "exists", **answer}))

    async def set_values(args: Mapping[str, Any]) -> ToolResult:
        raw = args.get("filePath")
        text = _env_text(fence.root, raw)
        if isinstance(text, ToolResult):
            return text
        values = args.get("values")
        if not isinstance(values, dict) or not values:
            return ToolResult("Error: values must map keys to values.", is_error=True)
        bad = [k for k, v in values.items() if not _KEY.match(k) or "\n" in str(v)]
        if bad:
            return ToolResult(f"Error: invalid keys or multi-line values: {bad}", is_error=True)
        updated = _with_values(text, {str(k): str(v) for k, v in values.items()})
        # A new env file holds secrets: only its owner may read it.
        written = fence.root.write_bytes(str(raw), updated.encode(), env=True, new_mode=0o600)
        if isinstance(written, Refusal):
            return ToolResult(f"Error: {written.reason}", is_error=True)
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


def _with_values(text: str | None, values: dict[str, str]) -> str:
    """The env file's text with `values` set: replaced in place, else added at the end."""
    lines = (text or "").splitlines()
    remaining = dict(values)
    for index, line in enumerate(lines):
        match = _LINE.match(line)
        if match and match.group(1) in remaining:
            lines[index] = f"{match.group(1)}={remaining.pop(match.group(1))}"
    lines += [f"{key}={value}" for key, value in remaining.items()]
    return "\n".join(lines) + "\n"
