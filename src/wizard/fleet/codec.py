"""What crosses Temporal, compressed: a large fleet's rows fit Temporal's 2 MB a payload.

A fleet's spec (every repository and its seal), the rows it carries into each run of its
workflow (`Carried`), and its burndown are each one payload; Temporal refuses a payload of
2 MB, which uncompressed bounds a fleet near 5,000 repositories. Rows repeat themselves (a
status, a worker's queue, a folder's prefix), so every payload over `SMALLEST` bytes is
stored zlib-compressed, under an encoding of its own; a smaller one (a repository's job, a
query's answer) is left as it is, readable in the history. A payload without that encoding
(every fleet recorded before) is read as it is.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, PayloadCodec

ENCODING = b"binary/zlib"
SMALLEST = 1024  # bytes of a payload, below which it is left as it is
# A compressed payload expands to no more than this: the server holds no more than 2 MB of
# it, and the fleet's rows compress about tenfold.
LARGEST = 256 << 20


class Compressed(PayloadCodec):
    """zlib for every payload over `SMALLEST` bytes."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [_compressed(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [_expanded(payload) for payload in payloads]


def _compressed(payload: Payload) -> Payload:
    whole = payload.SerializeToString()
    if len(whole) < SMALLEST:
        return payload
    return Payload(metadata={"encoding": ENCODING}, data=zlib.compress(whole, 6))


def _expanded(payload: Payload) -> Payload:
    if payload.metadata.get("encoding") != ENCODING:
        return payload
    expanding = zlib.decompressobj()
    whole = expanding.decompress(payload.data, LARGEST)
    if expanding.unconsumed_tail or not expanding.eof:
        raise ValueError("a compressed payload that is not whole, or larger than wizard reads")
    return Payload.FromString(whole)


# The converter of every client of wizard's fleets (and so of their workers).
CONVERTER = dataclasses.replace(DataConverter.default, payload_codec=Compressed())
