"""The Claude CLI's command line, and its start while the Claude Agent SDK still loads.

Importing the SDK takes about 1.5 s of CPU here (most of it `mcp`, which it imports whole),
and the SDK's own transport starts the CLI only once it has been imported; the CLI then
takes most of a second more before it can send a model request. So a session starts the
CLI itself first (`start_cli`), on the command line and environment the SDK's transport
would give it for the same options (`cli_command`, `cli_environment`, held to the SDK's by
`tests/harness/anthropic/test_cli.py`), and hands the running process to the SDK as its
transport once the SDK is loaded (`transport.StartedCLI`). The CLI does nothing of the
agent's before the SDK's `initialize` and the first prompt reach it.

`CliConfig` is the one description of what the CLI is given: the command line comes from
it, and so do the SDK's options (`options_fields`), for the SDK's own transport (an SDK
without a bundled CLI) and for the scripted one of the unit tests.

This module imports nothing of the SDK's.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from wizard.engines.claude import SDK_PACKAGE
from wizard.runner.harness.anthropic.adapter import BUILTIN_TOOLS, SERVER

# The SDK's default bound on one line of the CLI's output (`max_buffer_size`).
LINE_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class CliConfig:
    """What the Claude CLI is given for one session."""

    cwd: Path
    model: str
    system_prompt: str
    settings: Path
    env: Mapping[str, str]

    def options_fields(self) -> dict[str, Any]:
        """The SDK's `ClaudeAgentOptions` fields that make this command line (the hooks, the
        permission callback and the MCP server's instance are the caller's)."""
        return {
            "cwd": str(self.cwd),
            "model": self.model,
            "tools": list(BUILTIN_TOOLS),
            "system_prompt": self.system_prompt,
            "permission_mode": "default",
            "setting_sources": [],
            "settings": str(self.settings),
            "env": dict(self.env),
            "extra_args": {"no-session-persistence": None},
            "include_partial_messages": True,
        }


def cli_command(cli: Path, config: CliConfig) -> list[str]:
    """The command line the SDK's transport builds for `config`'s options, with a permission
    callback and wizard's in-process MCP server."""
    servers = {"mcpServers": {SERVER: {"type": "sdk", "name": SERVER}}}
    return [
        str(cli), "--output-format", "stream-json", "--verbose",
        "--system-prompt", config.system_prompt,
        "--tools", ",".join(BUILTIN_TOOLS),
        "--model", config.model,
        "--permission-prompt-tool", "stdio",  # the SDK's, for a permission callback
        "--permission-mode", "default",
        "--settings", str(config.settings),
        "--mcp-config", json.dumps(servers),
        "--include-partial-messages",
        "--setting-sources=",
        "--no-session-persistence",
        "--input-format", "stream-json",
    ]  # fmt: skip


def cli_environment(config: CliConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the SDK's transport gives the CLI: wizard's own (`environ`), then
    `config.env` (which blanks every name of wizard's outside the allowlist), then the SDK's
    own names."""
    inherited = {name: value for name, value in environ.items() if name != "CLAUDECODE"}
    env = {
        **inherited,
        "CLAUDE_CODE_ENTRYPOINT": "sdk-py",
        **config.env,
        "CLAUDE_AGENT_SDK_VERSION": metadata.version(SDK_PACKAGE),
    }
    env.pop("CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP", None)
    env.setdefault("CLAUDE_CODE_SDK_READS_SESSION_STATE", "1")
    env["PWD"] = str(config.cwd)
    return env


async def start_cli(cli: Path, config: CliConfig) -> asyncio.subprocess.Process:
    """The CLI, started as the SDK's transport starts it (its pipes for the control protocol
    and its diagnostics, in the project, in wizard's process group)."""
    return await asyncio.create_subprocess_exec(
        *cli_command(cli, config),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=config.cwd,
        env=cli_environment(config, os.environ),
        limit=LINE_LIMIT,
    )
