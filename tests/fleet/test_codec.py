"""How a fleet's values travel: large payloads compressed, small ones plain, a payload that
would unpack past its bound refused; and a fleet too large for Temporal refused at its start
with the way out, while one past plain JSON's limit starts."""

from __future__ import annotations

import asyncio
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType

from wizard.errors import UsageError
from wizard.fleet.codec import DATA_CONVERTER, ENCODING, LARGEST, SQUEEZE_OVER, Squeezed
from wizard.fleet.model import FleetSpec, Repo, RepoJob
from wizard.fleet.seal import fleet_key, sealed
from wizard.fleet.server import Server, connect_embedded, ensure_server, stop_server
from wizard.fleet.service import LARGEST_START, start_fleet


def _fleet(size: int) -> FleetSpec:
    """A fleet of `size` repositories with ids and sources of a real company's length."""
    repos = tuple(Repo(f"acme-service-{n:05d}", f"https://git.example.com/acme/service-{n:05d}.git")
                  for n in range(size))  # fmt: skip
    return FleetSpec(fleet_id=f"codec-{uuid.uuid4().hex[:8]}", program="revenue-analytics",
                     repos=repos)  # fmt: skip


def _codec(payloads: list[Payload], encode: bool) -> list[Payload]:
    codec = Squeezed()
    return asyncio.run(codec.encode(payloads) if encode else codec.decode(payloads))


def test_a_small_payload_stays_plain_and_a_large_one_is_compressed_and_read_back() -> None:
    (small,) = asyncio.run(DATA_CONVERTER.encode([RepoJob("f", "p", Repo("r", "/r"),
                                                          _fleet(0).run, False, "b")]))  # fmt: skip
    assert small.metadata["encoding"] == b"json/plain"  # readable in Temporal's own tools
    (large,) = asyncio.run(DATA_CONVERTER.encode([_fleet(2_000)]))
    plain = DATA_CONVERTER.payload_converter.to_payloads([_fleet(2_000)])[0]
    assert large.metadata["encoding"] == ENCODING and plain.ByteSize() > SQUEEZE_OVER
    assert large.ByteSize() < plain.ByteSize() / 3
    spec = _fleet(2_000)
    (encoded,) = asyncio.run(DATA_CONVERTER.encode([spec]))
    assert asyncio.run(DATA_CONVERTER.decode([encoded], [FleetSpec])) == [spec]
    # A payload written before the codec existed (plain JSON, however large) reads as it is.
    assert asyncio.run(DATA_CONVERTER.decode([plain], [FleetSpec]))[0].repos[0] == spec.repos[0]


def test_a_compressed_payload_that_unpacks_past_its_bound_is_refused() -> None:
    """Whoever can write to the Temporal could plant a few kilobytes that unpack to
    gigabytes in a worker; nor is a cut one read."""
    bomb = Payload(metadata={"encoding": ENCODING}, data=zlib.compress(b"\0" * (LARGEST + 1)))
    assert bomb.ByteSize() < 200_000
    with pytest.raises(ValueError, match="unpacks past"):
        _codec([bomb], encode=False)
    whole = Payload(metadata={"encoding": b"json/plain"}, data=b"[1]" * 50_000)
    (packed,) = _codec([whole], encode=True)
    cut = Payload(metadata={"encoding": ENCODING}, data=packed.data[:-10])
    with pytest.raises(ValueError):
        _codec([cut], encode=False)
    assert _codec([packed], encode=False) == [whole]


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("temporal")
    yield ensure_server(folder)
    stop_server(folder)


async def test_a_fleet_past_plain_jsons_limit_starts_and_one_past_temporals_is_refused(
    temporal: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """14,000 sealed repositories are over 2 MiB as JSON, which Temporal refuses: compressed,
    the fleet starts, and its history holds the whole spec. 60,000 do not fit even so: the
    start says how to split them, and nothing is started."""
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    client = await connect_embedded(temporal, "default")
    spec = _fleet(14_000)
    plain = DATA_CONVERTER.payload_converter.to_payloads([sealed(spec, fleet_key(make=True))])[0]
    assert plain.ByteSize() > 2 * 1024 * 1024
    handle, started = await start_fleet(client, spec)
    try:
        assert started
        history = await handle.fetch_history()
        first = history.events[0]
        assert first.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
        payloads = first.workflow_execution_started_event_attributes.input.payloads
        (read,) = await DATA_CONVERTER.decode(payloads, [FleetSpec])
        assert [repo.id for repo in read.repos] == [repo.id for repo in spec.repos]
        assert all(repo.seal for repo in read.repos)
    finally:
        await handle.terminate("the test is over")
    too_many = _fleet(60_000)
    with pytest.raises(UsageError) as refused:
        await start_fleet(client, too_many)
    assert "Split the repositories file into fleets of at most" in refused.value.hint
    assert f"of {LARGEST_START:,})" in str(refused.value)
    with pytest.raises(Exception, match="not found"):
        await client.get_workflow_handle(too_many.fleet_id).describe()
