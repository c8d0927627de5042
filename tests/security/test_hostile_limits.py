"""Limits on every command, on both engines: a command that writes past the file-size limit,
allocates past the memory limit, or never ends (naming no timeout) is stopped, and its result
says which limit; wizard keeps only the end of what a command prints."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from tests.security.conftest import DONE
from tests.security.test_hostile_outside import ENGINES, _run, _tool
from wizard.testing.script import reply
from wizard.tools.limits import OUTPUT_BYTES, CommandLimits
from wizard.tools.shell import run_command

pytestmark = pytest.mark.live

FILL = "open('big.bin', 'wb').write(bytes(3_000_000))\nprint('FILL' + 'ED')\n"
FOREVER = "import time\ntime.sleep(600)\n"
GREEDY = "b = bytearray(400 * 2**20)\nprint('ALLOC' + 'ATED')\n"


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_command_past_a_limit_is_stopped_and_told_which(
    engine: str, outside_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIZARD_COMMAND_FILE_SIZE", "1")
    monkeypatch.setenv("WIZARD_COMMAND_MEMORY", "200")
    monkeypatch.setenv("WIZARD_COMMAND_TIMEOUT", "2")
    project = outside_temp / "project"
    project.mkdir()
    scenario = {
        "responses": [
            reply(_tool(engine, "write", path="fill.py", content=FILL)),
            reply(_tool(engine, "bash", command="python3 fill.py")),
            reply(_tool(engine, "write", path="greedy.py", content=GREEDY)),
            reply(_tool(engine, "bash", command="python3 greedy.py")),
            reply(_tool(engine, "write", path="forever.py", content=FOREVER)),
            reply(_tool(engine, "bash", command="python3 forever.py")),  # names no timeout
            *DONE,
        ]
    }
    gateway = await _run(engine, project, scenario)
    gateway.assert_complete()
    history = str(gateway.requests[-1].body)
    assert "past the 1 MiB a command may write" in history and "FILLED" not in history
    assert (project / "big.bin").stat().st_size <= 1 << 20
    assert "out of the 200 MiB of memory" in history and "ALLOCATED" not in history
    assert "timed out after 2" in history
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "600"]
    ]


async def test_wizard_keeps_only_the_end_of_what_a_command_prints(tmp_path: Path) -> None:
    command = f"{sys.executable} -c \"import sys; sys.stdout.write('x' * 50_000_000 + 'END')\""
    code, output = await run_command(command, None, tmp_path, 60)
    assert code == 0 and output.endswith("END")
    assert len(output) < OUTPUT_BYTES + 100 and "bytes of output before this" in output


def test_the_limits_come_from_the_environment_and_a_bad_value_is_a_usage_error() -> None:
    from wizard.errors import UsageError

    limits = CommandLimits.from_environ({"WIZARD_COMMAND_TIMEOUT": "99999"})
    assert limits.timeout_s == 1800 and limits.timeout(None) == 1800 and limits.timeout(5) == 5
    assert limits.prefix() == "ulimit -d 4194304 -f 1048576 && "
    with pytest.raises(UsageError, match="WIZARD_COMMAND_MEMORY"):
        CommandLimits.from_environ({"WIZARD_COMMAND_MEMORY": "lots"})
