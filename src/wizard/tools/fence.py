"""The security fence: the one chokepoint every tool call of every harness goes through.

`Fence.check(tool, input)` answers whether a call may run. Paths are resolved once, with
symlinks followed, and must stay inside the project; `.env*` files are closed to the generic
file tools (the env tools are the only way to touch them); per-program disallowed tools are
refused; a run may make at most `max_calls` tool calls. A denial is a value that goes back
to the model as the tool's result. A critical violation latches: every later call is refused
and the harness ends the run as `WIZARD_SECURITY_VIOLATION`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from wizard.tools.base import Decision
from wizard.tools.commands import CommandContext, check_command, hostile_reason
from wizard.tools.paths import ProjectRoot, Refusal, is_env_name

MAX_TOOL_CALLS = 250
# A tool call whose arguments are larger than this is refused before it runs.
MAX_TOOL_ARGS_BYTES = 1 << 20
# A write may not shrink an existing file of at least this many non-blank characters by more
# than this share: that is almost always a model rewriting a file it only partly read.
SHRINK_GUARD_MIN_CHARS = 400
SHRINK_GUARD_LOSS = 0.3

# The only variables a command the agent runs may inherit.
_PATH_TOOLS = ("read", "write", "edit")


ALLOW = Decision(allow=True)


class Fence:
    """The security policy of one run."""

    def __init__(
        self,
        project_dir: Path,
        *,
        disallowed_tools: Iterable[str] = (),
        max_calls: int = MAX_TOOL_CALLS,
        sandboxed: bool = False,
        read_only: Mapping[str, Path] | None = None,
        code_paths: Iterable[str] = (),
    ) -> None:
        self.root = ProjectRoot(project_dir, read_only, code_paths)
        self.project_dir = self.root.root
        # With the OS sandbox on, rules it enforces for commands are not repeated here.
        self.sandboxed = sandboxed
        self.disallowed_tools = frozenset(disallowed_tools)
        self.max_calls = max_calls
        self.calls = 0
        self.violation: str | None = None

    def check(self, tool: str, args: Mapping[str, Any]) -> Decision:
        """Whether the call `tool(args)` may run. Counts the call against the cap."""
        if self.violation is not None:
            return Decision(False, f"Run terminated by a security violation: {self.violation}")
        self.calls += 1
        if self.calls > self.max_calls:
            return self._latch(f"Stopped: exceeded {self.max_calls} tool calls (runaway guard).")
        if tool in self.disallowed_tools:
            return Decision(False, f"The tool {tool} is not allowed in this program.")
        if (size := _size(args)) > MAX_TOOL_ARGS_BYTES:
            return Decision(
                False,
                f"{tool}'s arguments are {size:,} bytes, over the {MAX_TOOL_ARGS_BYTES:,} a tool "
                "call may carry. Write large files in parts (write, then edit to add).",
            )
        if tool == "bash":
            decision = self._check_bash(args.get("command"))
        elif tool in _PATH_TOOLS:
            decision = self._check_path_tool(tool, args.get("path"))
            if decision.allow and tool == "write":
                decision = self._check_overwrite(str(args["path"]), args.get("content"))
        else:
            decision = ALLOW
        return self._latch(decision.reason) if decision.critical else decision

    def _check_bash(self, command: Any) -> Decision:
        if not isinstance(command, str) or not command.strip():
            return Decision(False, "bash needs a command.")
        context = CommandContext(self.path_error, self.project_dir, self.sandboxed)
        return check_command(command, context)

    def _check_path_tool(self, tool: str, raw: Any) -> Decision:
        if not isinstance(raw, str) or not raw:
            return Decision(False, f"{tool} needs a path inside the project.")
        if (hostile := hostile_reason(raw)) is not None:
            return Decision(False, hostile, critical=True)
        error = self.path_error(raw)
        return Decision(False, error) if error else ALLOW

    def _check_overwrite(self, raw: str, content: Any) -> Decision:
        """Refuse a `write` that would throw away most of an existing file the user owns."""
        existing = self.root.read_bytes(raw)
        if isinstance(existing, Refusal) or not isinstance(content, str):
            return ALLOW
        old = len("".join(existing.decode(errors="replace").split()))
        new = len("".join(content.split()))
        if old >= SHRINK_GUARD_MIN_CHARS and new < old * (1 - SHRINK_GUARD_LOSS):
            return Decision(
                False,
                f"write would drop most of {raw} ({old} → {new} non-blank characters). Use "
                "edit for targeted changes, so nothing the user wrote is lost.",
            )
        return ALLOW

    def path_error(self, raw: str) -> str | None:
        """Why the path `raw` may not be touched, or None when it may.

        The same walk the file tools open with (`ProjectRoot`): a name that is missing, or
        a folder, is no reason to refuse a command's argument.
        """
        located = self.root.locate(raw)
        if isinstance(located, Refusal):
            return None if located.kind in ("missing", "folder") else located.reason
        with located:
            if is_env_name(located.name):
                return (
                    f"{raw} is an environment file. Use check_env_keys to see which keys exist "
                    "and set_env_values to set them; values are never shown."
                )
        return None

    def _latch(self, reason: str) -> Decision:
        self.violation = reason
        return Decision(False, reason, critical=True)


def _size(args: Mapping[str, Any]) -> int:
    try:
        return len(json.dumps(args, ensure_ascii=False).encode())
    except (TypeError, ValueError):
        return 0
