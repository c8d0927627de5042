"""How a fleet's values travel through Temporal: as JSON, and a large one compressed.

A fleet's spec names every repository (sealed), and Temporal refuses a payload over 2 MB:
about 11,000 repositories as JSON. Compressed (zlib) past `SQUEEZE_OVER` bytes, the same
spec is a quarter of that, so a fleet of 40,000 starts. Small payloads (a repository's job,
a step's result) stay plain JSON, readable in Temporal's own tools.

Every client and worker of wizard's uses `DATA_CONVERTER`; payloads written before it
existed are plain, and read as they are. A compressed payload comes from whoever can write
to the Temporal, so it is read only up to `LARGEST` bytes: a small payload that unpacks to
gigabytes is refused, not unpacked.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, PayloadCodec

ENCODING = b"binary/zlib"
SQUEEZE_OVER = 64 * 1024  # bytes of a payload, past which it is compressed
LARGEST = 64 * 1024 * 1024  # bytes a compressed payload may unpack to


class Squeezed(PayloadCodec):
    """zlib for payloads past `SQUEEZE_OVER` bytes; the rest as they are."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [_squeezed(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [_unsqueezed(payload) for payload in payloads]


def _squeezed(payload: Payload) -> Payload:
    whole = payload.SerializeToString()
    if len(whole) <= SQUEEZE_OVER:
        return payload
    return Payload(metadata={"encoding": ENCODING}, data=zlib.compress(whole, 6))


def _unsqueezed(payload: Payload) -> Payload:
    if payload.metadata.get("encoding") != ENCODING:
        return payload
    unpacking = zlib.decompressobj()
    whole = unpacking.decompress(payload.data, LARGEST)
    if unpacking.unconsumed_tail or not unpacking.eof:
        raise ValueError(f"a compressed payload that unpacks past {LARGEST} bytes, or is cut")
    return Payload.FromString(whole)


DATA_CONVERTER = dataclasses.replace(DataConverter.default, payload_codec=Squeezed())
