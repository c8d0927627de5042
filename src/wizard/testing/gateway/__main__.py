"""`python -m wizard.testing.gateway --scenario FILE [--port 0] [--log FILE]`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import TextIO

from wizard.errors import ConfigError
from wizard.signals import DEFAULT_GATEWAY_MARKER
from wizard.testing.gateway.server import RequestRecord, ScriptedGateway


async def _serve(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        log_file = stack.enter_context(Path(args.log).open("a")) if args.log else None
        return await _serve_logging(args, log_file)


async def _serve_logging(args: argparse.Namespace, log_file: TextIO | None) -> int:

    def record(entry: RequestRecord) -> None:
        if log_file is not None:
            log_file.write(entry.to_json() + "\n")
            log_file.flush()

    gateway = ScriptedGateway(
        args.scenario, port=args.port, refusal_marker=args.refusal_marker, on_record=record
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with gateway:
        print(f"READY {gateway.url}", flush=True)
        await stop.wait()
    left = gateway.unserved()
    if left:
        print(f"scripted gateway: {len(left)} response(s) never served", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the scripted gateway until SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m wizard.testing.gateway")
    parser.add_argument("--scenario", required=True, help="scenario file (JSON or YAML)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--log", help="append one JSON line per request to this file")
    parser.add_argument("--refusal-marker", default=DEFAULT_GATEWAY_MARKER)
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_serve(args))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
