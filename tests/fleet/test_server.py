"""The embedded server's start: it is started when a client can connect, not when its port
listens (its frontend answers "not healthy yet" for a moment after), and a server that dies
starting is reported with its log. `temporal` is a stand-in process here, and the SDK's
connect a fake; the live tests start the real one."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from wizard.errors import ConfigError
from wizard.fleet import server
from wizard.processes import is_running

NOT_YET = 'Failed client connect: `get_system_info` call error after connection: Status { code: Unavailable, message: "Frontend is not healthy yet" }'  # noqa: E501


class Frontend:
    """`Client.connect` of a server whose frontend refuses its first `refusals` clients."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.calls = 0

    async def connect(self, address: str, **_: Any) -> str:
        self.calls += 1
        if self.calls <= self.refusals:
            raise RuntimeError(NOT_YET)
        return f"client of {address}"


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`stand_in(script, refusals)`: `temporal` runs `script`; its port listens at once."""

    def install(script: str, refusals: int) -> Frontend:
        binary = tmp_path / "temporal"
        binary.write_text(f"#!/bin/sh\n{script}\n")
        binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
        front = Frontend(refusals)
        monkeypatch.setattr(server, "temporal_binary", lambda: binary)
        monkeypatch.setattr(server, "_listening", lambda address: True)
        monkeypatch.setattr(Client, "connect", front.connect)
        return front

    return install


def test_a_server_is_started_once_its_frontend_serves(tmp_path: Path, stand_in: Any) -> None:
    front = stand_in("exec sleep 60", refusals=3)
    folder = tmp_path / "fleet"
    started = server.ensure_server(folder)
    try:
        assert front.calls == 4  # three "not healthy yet", then a client
        assert json.loads((folder / "server.json").read_text())["pid"] == started.pid
    finally:
        server.stop_server(folder)
    assert not is_running(started.pid)


def test_a_server_that_dies_before_it_serves_is_reported_with_its_log(
    tmp_path: Path, stand_in: Any
) -> None:
    stand_in("echo 'sqlite: database is locked' >&2; exit 1", refusals=10**6)
    folder = tmp_path / "fleet"
    with pytest.raises(ConfigError, match=r"did not start.*database is locked") as refused:
        server.ensure_server(folder)
    assert refused.value.hint == f"Its log is {folder / 'server.log'}."
    assert not (folder / "server.json").exists()
