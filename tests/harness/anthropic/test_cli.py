"""The Claude CLI wizard starts before the SDK has loaded: the SDK's own command line and
environment for the same options, spoken to as the SDK's own transport speaks to it, and
never left running."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sdk = pytest.importorskip("claude_agent_sdk")

import anyio  # noqa: E402

from wizard.engines.claude import bundled_cli  # noqa: E402
from wizard.errors import EngineError  # noqa: E402
from wizard.runner.harness.anthropic import session as session_module  # noqa: E402
from wizard.runner.harness.anthropic.adapter import SERVER  # noqa: E402
from wizard.runner.harness.anthropic.cli import (  # noqa: E402
    CliConfig,
    cli_command,
    cli_environment,
)
from wizard.runner.harness.anthropic.session import ClaudeSession  # noqa: E402
from wizard.runner.harness.anthropic.transport import StartedCLI  # noqa: E402
from wizard.runner.harness.gate import ToolGate  # noqa: E402
from wizard.runner.harness.types import EngineLaunch  # noqa: E402
from wizard.tools.fence import Fence  # noqa: E402


class _Spawned(Exception):
    """What the stand-in for the SDK's process start raises once it has seen the call."""


def _config(tmp_path: Path) -> CliConfig:
    return CliConfig(
        cwd=tmp_path,
        model="claude-sonnet-4-6",
        system_prompt="# Running inside wizard\n- notes",
        settings=tmp_path / "settings.json",
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "OPENAI_API_KEY": ""},
    )


async def test_wizard_starts_the_cli_exactly_as_the_sdk_would_for_the_same_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path)
    spawned: dict[str, Any] = {}

    async def open_process(command: list[str], **how: Any) -> None:
        spawned.update(how, command=command)
        raise _Spawned

    async def allow(*_: Any) -> Any:
        return sdk.PermissionResultAllow()

    monkeypatch.setattr(anyio, "open_process", open_process)
    options = sdk.ClaudeAgentOptions(
        **config.options_fields(),
        mcp_servers={SERVER: sdk.create_sdk_mcp_server(SERVER, "1.0.0", tools=[])},
        can_use_tool=allow,
        stderr=lambda line: None,
    )
    with pytest.raises(sdk.CLIConnectionError):
        await sdk.ClaudeSDKClient(options).connect()

    cli = bundled_cli()
    assert cli is not None
    assert spawned["command"] == cli_command(cli, config)
    assert spawned["env"] == cli_environment(config, os.environ)
    assert spawned["cwd"] == str(tmp_path)


def test_the_harness_loads_without_the_sdk() -> None:
    """Its import is the 1.5 s a session overlaps with the CLI's start: nothing imports it
    before a session asks for it."""
    code = (
        "import sys, wizard.cli, wizard.runner.harness.anthropic.harness; "
        "sys.exit('claude_agent_sdk' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


async def _process(*code: str) -> asyncio.subprocess.Process:
    """A stand-in CLI: Python running `code`, with the pipes `start_cli` gives the real one."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", "\n".join(code),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def _talk(transport: StartedCLI, *lines: str) -> list[dict[str, Any]]:
    """Connect, write `lines`, read every message to the end (bounded: a CLI blocked on its
    full stderr pipe never ends), close."""
    await transport.connect()
    try:
        for line in lines:
            await transport.write(line)
        async with asyncio.timeout(30):
            return [message async for message in transport.read_messages()]
    finally:
        await transport.close()


async def test_the_started_cli_speaks_lines_of_json_and_its_stderr_goes_to_the_log() -> None:
    said: list[str] = []
    process = await _process(
        "import sys",
        "print('[SandboxDebug] not a message')",
        'print(\'{"type": "system", "subtype": "init"}\', flush=True)',
        "print('diagnostic line', file=sys.stderr, flush=True)",
        "line = sys.stdin.readline()",
        "print(line.strip(), flush=True)",
    )
    messages = await _talk(StartedCLI(process, said.append), '{"type": "user", "n": 1}\n')
    assert messages == [{"type": "system", "subtype": "init"}, {"type": "user", "n": 1}]
    assert said == ["diagnostic line"] and process.returncode == 0


async def test_a_diagnostic_line_past_the_bound_is_dropped_and_the_rest_still_read() -> None:
    said: list[str] = []
    process = await _process(
        "import sys",
        "sys.stderr.write('x' * 3_000_000 + '\\n'); sys.stderr.write('after\\n')",
        "sys.stderr.flush()",
        'print(\'{"type": "system"}\', flush=True)',
    )
    messages = await _talk(StartedCLI(process, said.append))
    assert messages == [{"type": "system"}] and said[-1] == "after"
    assert all(len(line) < 2_000_000 for line in said)


async def test_a_cli_that_fails_or_writes_broken_json_is_an_sdk_error() -> None:
    failing = StartedCLI(await _process("raise SystemExit(7)"), lambda line: None)
    await failing.connect()
    with pytest.raises(sdk.ProcessError, match="exit code 7"):
        [message async for message in failing.read_messages()]
    await failing.close()
    broken = StartedCLI(await _process("print('{\"type\": ')"), lambda line: None)
    await broken.connect()
    with pytest.raises(sdk.CLIJSONDecodeError):
        [message async for message in broken.read_messages()]
    await broken.close()


async def test_closing_the_cli_kills_it_instead_of_waiting_for_it_to_finish() -> None:
    """It runs nothing of the run's once its conversation is over (a CLI that would go on
    after the end of its input, as Node's teardown does, is not waited for)."""
    process = await _process("import sys, time", "sys.stdin.read()", "time.sleep(60)")
    transport = StartedCLI(process, lambda line: None)
    await transport.connect()
    await transport.close()
    assert process.returncode == -signal.SIGKILL


async def test_a_cli_started_for_a_session_that_never_connects_is_killed_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK failed to load after the CLI had started: nothing of the CLI is left."""
    standin = tmp_path / "claude"
    standin.write_text(f"#!{sys.executable}\nimport time\nwhile True: time.sleep(1)\n")
    standin.chmod(0o755)
    monkeypatch.setattr(session_module, "bundled_cli", lambda: standin)

    async def no_sdk() -> Any:
        raise EngineError("The anthropic harness needs claude-agent-sdk", "Install it")

    gate = ToolGate([], Fence(tmp_path))
    launch = EngineLaunch(
        project_dir=tmp_path, model="m", api="anthropic-messages",
        proxy_url="http://127.0.0.1:1", token="t", gate=gate, shell=False,
    )  # fmt: skip
    session = ClaudeSession(launch, no_sdk)
    with pytest.raises(EngineError):
        await session.start()
    pid = session.pid
    assert pid is not None
    await session.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


class _Shell:
    """Stands in for wizard's sandboxed shell: records when its first sandbox is asked for."""

    def __init__(self) -> None:
        self.made: list[Path] = []

    def make_ahead(self, folder: Path) -> None:
        self.made.append(folder)


def _tool_use(index: int, name: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"t{index}", "name": name, "input": {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


async def _sandbox_ahead(
    tmp_path: Path, ready: asyncio.Future[bool], thinking: asyncio.Event | None = None,
    halted: bool = False,
) -> tuple[ClaudeSession, _Shell, asyncio.Future[None]]:  # fmt: skip
    gate = ToolGate([], Fence(tmp_path), halted=lambda: halted, ready=ready)
    launch = EngineLaunch(
        project_dir=tmp_path, model="m", api="anthropic-messages", proxy_url="http://127.0.0.1:1",
        token="t", gate=gate, thinking=(thinking or asyncio.Event()).wait,
    )  # fmt: skip
    session, shell = ClaudeSession(launch, _no_sdk), _Shell()
    making = asyncio.ensure_future(session._sandbox_ahead(shell))  # type: ignore[arg-type]
    return session, shell, making


async def test_the_shell_s_first_sandbox_is_made_as_the_first_bash_call_streams(
    tmp_path: Path,
) -> None:
    """The first command's sandbox is made as the model's first `bash` call begins to stream
    (not for text, nor for another tool, which must find no sandbox standing), once the run
    is ready for tools (its snapshot taken: a sandbox stands placeholders in the project)."""
    ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    session, shell, making = await _sandbox_ahead(tmp_path, ready)
    session._on_stream({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": "[STATUS] x"}})  # fmt: skip
    session._on_stream(_tool_use(1, "mcp__wizard__write"))
    await asyncio.sleep(0.01)
    assert shell.made == [] and not making.done()
    session._on_stream(_tool_use(2, "mcp__wizard__bash"))
    await asyncio.sleep(0.01)
    assert shell.made == [] and not making.done()  # the run is not ready for tools yet
    ready.set_result(True)
    await asyncio.wait_for(making, 5)
    assert shell.made == [tmp_path]


@pytest.mark.parametrize("halted", [False, True])
async def test_the_shell_s_first_sandbox_is_made_while_the_model_thinks(
    tmp_path: Path, halted: bool
) -> None:
    """The first command's sandbox is made once the model is thinking (its request gone on
    unanswered: `EngineLaunch.thinking`), with no `bash` call yet, once the run is ready for
    tools; none for a run that is ending by then."""
    ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    thinking = asyncio.Event()
    _, shell, making = await _sandbox_ahead(tmp_path, ready, thinking, halted)
    ready.set_result(True)
    await asyncio.sleep(0.01)
    assert shell.made == [] and not making.done()  # the model has not been asked yet
    thinking.set()
    await asyncio.wait_for(making, 5)
    assert shell.made == ([] if halted else [tmp_path])


async def test_the_shell_makes_no_sandbox_ahead_for_a_run_that_could_not_be_readied(
    tmp_path: Path,
) -> None:
    """A failed install (no tool runs) makes no sandbox, whatever the model calls."""
    ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    session, shell, making = await _sandbox_ahead(tmp_path, ready)
    session._on_stream(_tool_use(0, "mcp__wizard__bash"))
    ready.set_result(False)
    await asyncio.wait_for(making, 5)
    assert shell.made == []


async def _no_sdk() -> Any:
    raise EngineError("no SDK here")
