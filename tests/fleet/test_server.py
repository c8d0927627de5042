"""The embedded server's start: it is started when a client can connect, not when its port
listens (its frontend answers "not healthy yet" for a moment after), and a server that dies
starting is reported with its log. `temporal` is a stand-in process here, and the SDK's
connect a fake; the last tests, and the live tests, start the real one."""

from __future__ import annotations

import json
import os
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
    """`stand_in(script, refusals)`: `temporal` runs `script` in the real enclosure, whose
    socket is there at once."""

    def install(script: str, refusals: int) -> Frontend:
        binary = tmp_path / "temporal"
        binary.write_text(f"#!/bin/sh\n{script}\n")
        binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
        front = Frontend(refusals)
        monkeypatch.setattr(server, "temporal_binary", lambda: binary)
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


@pytest.fixture
def enclosed() -> Any:
    """The real embedded server, in a state folder outside the system temp folder whose
    parents another user may pass through (so only the server's own folder keeps them out)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="wizard-enclosure-", dir="/var/tmp"))
    base.chmod(0o711)
    folder = base / "fleet"
    try:
        yield folder, server.ensure_server(folder)
    finally:
        server.stop_server(folder)
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(socket_path: str) -> str:
    """What a process of another user gets from the server's socket: the error, or the
    proxy's answer to a CONNECT (a forked child that became `nobody`)."""
    import socket

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        said = b"?"
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(socket_path)
                s.sendall(b"CONNECT 127.0.0.1:7233 HTTP/1.1\r\n\r\n")
                said = repr(s.recv(64)).encode()
        except OSError as exc:
            said = type(exc).__name__.encode()
        finally:
            os.write(write, said)
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read, "rb") as answer:
        return answer.read().decode()


def test_the_embedded_server_has_no_port_and_only_its_owner_reaches_its_socket(
    enclosed: Any,
) -> None:
    import asyncio
    import os

    import psutil

    folder, started = enclosed
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(os.stat(started.socket).st_mode) == 0o600
    client = asyncio.run(server.connect_embedded(started, "default"))
    assert client.namespace == "default"
    group = {p.pid for p in psutil.process_iter() if _group(p) == started.pid}
    assert len(group) >= 3  # bubblewrap, the enclosure, the server
    listening = [c for c in psutil.net_connections("inet")
                 if c.pid in group and c.status == psutil.CONN_LISTEN]  # fmt: skip
    assert listening == []  # no port of it exists in this machine's network
    if os.getuid() != 0:
        pytest.skip("another user's tries need root to become that user")
    assert _as_nobody(started.socket) == "PermissionError"
    folder.chmod(0o711)  # the folder left open by mistake: the proxy still knows its peer
    os.chmod(started.socket, 0o666)
    try:
        assert _as_nobody(started.socket) in ("b''", "ConnectionResetError", "BrokenPipeError")
    finally:
        folder.chmod(0o700)
        os.chmod(started.socket, 0o600)


def _group(process: Any) -> int | None:
    try:
        return int(os.getpgid(process.pid))
    except OSError:
        return None
