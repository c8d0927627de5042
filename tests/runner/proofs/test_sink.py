"""The probe sink is bounded: a probe that floods it (the app's code runs there) is answered,
and what it keeps stays within its bounds."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest

from wizard.runner.proofs import sink as sink_module
from wizard.runner.proofs.sink import ProbeSink


async def _post(socket: Path, body: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(socket))
    writer.write(b"POST /api/x HTTP/1.1\r\nhost: p\r\ncontent-length: %d\r\n\r\n" % len(body))
    writer.write(body)
    await writer.drain()
    answer = await reader.read(4096)
    writer.close()
    return answer


async def test_a_flood_is_answered_and_what_is_kept_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sink_module, "MAX_KEPT_REQUESTS", 5)
    monkeypatch.setattr(sink_module, "MAX_KEPT_BYTES", 3000)
    monkeypatch.setattr(sink_module, "MAX_BODY_BYTES", 1000)
    folder = Path(tempfile.mkdtemp(prefix="sink-"))
    async with ProbeSink(folder / "s.sock") as sink:
        answers = [await _post(folder / "s.sock", b"x" * 1500) for _ in range(8)]
    assert all(answer.startswith(b"HTTP/1.1 200") for answer in answers)
    assert len(sink.received) == 3 and [len(r.body) for r in sink.received] == [1000] * 3
    assert sink.kept_bytes == 3000
    folder.rmdir()
