"""The fleet's payloads compressed (`fleet/codec.py`): a fleet of 10,000 repositories fits
Temporal's 2 MB a payload, a small payload is left readable, and one recorded before the
codec (every checked-in history) is read as it was."""

from __future__ import annotations

import asyncio
import zlib

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter

from wizard.fleet.codec import CONVERTER, ENCODING, SMALLEST
from wizard.fleet.model import Carried, FleetSpec, Repo, Row

LIMIT = 2 * 1024 * 1024  # Temporal's, for one payload
SIZE = 10_000


def _fleet() -> FleetSpec:
    """The last run of a 10,000-repository fleet: every row carried, as the bench's look
    (a worker's queue, a folder, a proof, a seal), and no repository left to admit."""
    import secrets

    rows = tuple(
        Row(repo=f"service-{n:05d}", source=f"git@github.com:acme/service-{n:05d}.git",
            status="proven", cost_usd=0.0123 + n / 1e6, seconds=40.0 + n % 60, attempts=1,
            worker="wizard-fleet@build-7:/home/ci/.local/state/wizard/fleet/workspaces",
            branch="wizard/stripe-checkout", commit=secrets.token_hex(20), published="created",
            proofs=("stripe-checkout: proven",))
        for n in range(SIZE)
    )  # fmt: skip
    repos = tuple(Repo(row.repo, row.source, None, secrets.token_hex(32)) for row in rows[:10])
    return FleetSpec("fleet", "stripe-checkout", repos, carried=Carried(rows, 123.4))


def _encoded(converter: DataConverter, value: object) -> list[Payload]:
    return asyncio.run(converter.encode([value]))


def test_a_fleet_of_ten_thousand_repositories_fits_one_payload() -> None:
    spec = _fleet()
    (plain,) = _encoded(DataConverter.default, spec)
    (packed,) = _encoded(CONVERTER, spec)
    assert len(plain.SerializeToString()) > LIMIT  # what bound a fleet before
    assert len(packed.SerializeToString()) < LIMIT / 2
    assert packed.metadata["encoding"] == ENCODING
    (back,) = asyncio.run(CONVERTER.decode([packed], [FleetSpec]))
    assert back == spec


def test_a_small_payload_is_left_readable_and_an_old_one_is_read_as_it_was() -> None:
    repo = Repo("app", "/srv/app")
    (small,) = _encoded(CONVERTER, repo)
    assert len(small.SerializeToString()) < SMALLEST and b"/srv/app" in small.data
    spec = _fleet()
    (old,) = _encoded(DataConverter.default, spec)  # as histories recorded before hold it
    assert old.metadata["encoding"] != ENCODING
    (back,) = asyncio.run(CONVERTER.decode([old], [FleetSpec]))
    assert back == spec


def test_a_payload_that_would_expand_past_the_bound_is_refused() -> None:
    bomb = Payload(metadata={"encoding": ENCODING}, data=zlib.compress(b"\0" * (300 << 20)))
    with pytest.raises(ValueError, match="larger than wizard reads"):
        asyncio.run(CONVERTER.decode([bomb], [FleetSpec]))
