"""The `bash` host tool: one command in the project, in the OS sandbox, with a scrubbed
environment, a timeout and a bounded output.

The pi harness uses pi's own `bash` (wrapped by the sandbox runtime inside pi's host); a
harness whose engine's shell cannot be wrapped (the Claude Agent SDK's CLI) offers this tool
instead, so every command of every harness runs under the same policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.tools.base import HostTool, ToolResult, schema
from wizard.tools.fence import child_env
from wizard.tools.sandbox import SandboxPolicy

DEFAULT_TIMEOUT_S = 300
MAX_OUTPUT_CHARS = 30_000


def shell_command(command: str, sandbox: tuple[SandboxPolicy, Path, Path] | None) -> list[str]:
    """The argv that runs `command`; `sandbox` is (policy, node, the runtime's CLI)."""
    if sandbox is None:
        return ["bash", "-c", command]
    policy, node, cli = sandbox
    settings = policy.settings_file
    assert settings is not None, "a sandboxed shell needs the policy's settings file"
    wrapped = f"exec {shlex.quote(str(node))} {shlex.quote(str(cli))} --settings "
    wrapped += f"{shlex.quote(str(settings))} -c {shlex.quote(command)}"
    return ["bash", "-c", policy.cap_prefix + wrapped]


def shell_tool(
    project_dir: Path,
    sandbox: tuple[SandboxPolicy, Path, Path] | None,
    environ: Mapping[str, str] | None = None,
) -> HostTool:
    """`bash(command, timeout?)` in `project_dir`; `sandbox` as for `shell_command`."""

    async def run(args: Mapping[str, Any]) -> ToolResult:
        command = str(args.get("command", ""))
        timeout = float(args.get("timeout") or DEFAULT_TIMEOUT_S)
        process = await asyncio.create_subprocess_exec(
            *shell_command(command, sandbox),
            cwd=project_dir,
            env=child_env(environ),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            return ToolResult(f"Error: the command timed out after {timeout:g} s.", is_error=True)
        finally:  # timed out or cancelled: the command and all it started go
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        text = output.decode(errors="replace")
        if len(text) > MAX_OUTPUT_CHARS:
            text = "[output cut: showing the end]\n" + text[-MAX_OUTPUT_CHARS:]
        code = process.returncode
        return ToolResult(text if code == 0 else f"{text}\n(exit code {code})", is_error=code != 0)

    return HostTool(
        "bash",
        "Run a bash command in the project folder; returns its output. Package managers, "
        "builds, tests and read-only inspection.",
        schema({"command": {"type": "string"}, "timeout": {"type": "number"}}, ["command"]),
        run,
    )
