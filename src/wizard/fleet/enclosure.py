"""The embedded Temporal server's enclosure: the server in a network of its own, reached only
through a Unix socket in the owner's state folder.

`server.py` starts this module under bubblewrap with `--unshare-net`: the network it sees
has only its own loopback, so the server's ports (gRPC, HTTP, metrics; no UI) exist for no
one outside, another local user included. This process starts the server there and serves
`temporal.sock` in the state folder (0700, the socket 0600): an HTTP CONNECT proxy, which is
how Temporal's client reaches a server through a Unix socket
(`HttpConnectProxyConfig(target_host="unix:…")`). A peer of another user is refused by its
credentials too (`SO_PEERCRED`), so not even a folder left open lets one in. Every CONNECT
reaches the server's gRPC port, whatever it names.

    python -m wizard.fleet.enclosure FOLDER TEMPORAL
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

from wizard.processes import die_with_parent

SOCKET = "temporal.sock"
PORT = 7233  # in the enclosure's own network: no other process there to take it
_HEAD_LIMIT = 8192  # a CONNECT request's head, at most


def server_command(temporal: str, folder: Path) -> list[str]:
    """The development server, headless, its state in the folder's SQLite file."""
    return [temporal, "server", "start-dev", "--db-filename", str(folder / "temporal.db"),
            "--ip", "127.0.0.1", "--port", str(PORT), "--http-port", str(PORT + 10),
            "--metrics-port", str(PORT + 11), "--headless", "--log-level", "error"]  # fmt: skip


def same_user(connection: socket.socket) -> bool:
    """Whether the peer of a Unix `connection` runs as this process's user."""
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return uid == os.getuid()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError):
        writer.close()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One client: refused unless its user is this one and it asks to CONNECT; then piped
    to the server both ways."""
    try:
        connection = writer.get_extra_info("socket")
        if connection is None or not same_user(connection):
            return
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"CONNECT "):
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", PORT)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return
    finally:
        with contextlib.suppress(OSError):
            writer.close()


async def serve(folder: Path, temporal: str) -> int:
    """Run the server and its socket until the server ends or this process is told to stop;
    the server's exit code."""
    die_with_parent()  # bubblewrap killed: this stops the server, as on SIGTERM
    server = subprocess.Popen(server_command(temporal, folder), stdin=subprocess.DEVNULL,
                              cwd=folder, preexec_fn=die_with_parent)  # fmt: skip
    os.chdir(folder)  # a relative name: the folder's path may be longer than a socket's
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET)
    old = os.umask(0o177)
    try:
        listener = await asyncio.start_unix_server(_handle, SOCKET, limit=_HEAD_LIMIT)
    finally:
        os.umask(old)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(number, stop.set)
    ended = asyncio.ensure_future(asyncio.to_thread(server.wait))
    stopping = asyncio.ensure_future(stop.wait())
    async with listener:
        await asyncio.wait([ended, stopping], return_when=asyncio.FIRST_COMPLETED)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET)
    if server.poll() is None:
        server.terminate()
    return await ended


def main(argv: list[str]) -> int:
    """`python -m wizard.fleet.enclosure FOLDER TEMPORAL`."""
    folder, temporal = Path(argv[0]), argv[1]
    return asyncio.run(serve(folder, temporal))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
