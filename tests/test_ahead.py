"""The run's timeline of work taken ahead (`wizard.ahead`): a job is taken once (or by every
taker, when shared), else done by the taker itself; what nothing took is discarded."""

from __future__ import annotations

import threading

import pytest

from wizard.ahead import Key, Moment, Timeline

HOST: Key[str] = Key("a host", Moment.PROCESS_START, harness="pi")
LISTING: Key[str] = Key("a listing", Moment.PROCESS_START)
CLIENT: Key[str] = Key("a client", Moment.FIRST_STAGE, shared=True)


def _timeline() -> tuple[Timeline, list[str]]:
    ended: list[str] = []
    ahead = Timeline()
    ahead.start(HOST, "host", ended.append)
    ahead.start(LISTING, "listing", ended.append)
    ahead.start(CLIENT, "client", ended.append)
    return ahead, ended


def test_a_job_is_the_first_taker_s_and_then_not_there() -> None:
    ahead, ended = _timeline()
    assert ahead.peek(HOST) == "host" and ahead.has(HOST)  # looked at, left there
    assert ahead.take(HOST) == "host"
    assert ahead.take(HOST) is None  # the taker does the work itself
    ahead.close()
    assert "host" not in ended  # the taker's to end, not the timeline's


def test_a_shared_job_is_every_taker_s_and_ends_with_the_timeline() -> None:
    ahead, ended = _timeline()
    assert ahead.take(CLIENT) == ahead.take(CLIENT) == "client"
    ahead.close()
    assert sorted(ended) == ["client", "host", "listing"]


def test_what_nothing_took_is_discarded_once() -> None:
    ahead, ended = _timeline()
    ahead.discard(LISTING)
    ahead.discard(LISTING)
    ahead.close()
    ahead.close()
    assert sorted(ended) == ["client", "host", "listing"]
    assert [line.split(" (")[0] for line in ahead.said] == [
        "ahead: a listing", "ahead: a host", "ahead: a client"]  # fmt: skip
    assert all(" discarded after " in line for line in ahead.said)


def test_another_harness_s_jobs_go_and_any_run_s_stay() -> None:
    ahead, ended = _timeline()
    ahead.discard_others("pi")
    assert ended == []
    ahead.discard_others("anthropic")
    assert ended == ["host"]
    assert ahead.take(LISTING) == "listing"


def test_a_job_started_again_ends_the_one_before() -> None:
    ahead, ended = _timeline()
    ahead.start(HOST, "second host", ended.append)
    assert ended == ["host"] and ahead.take(HOST) == "second host"


def test_one_job_goes_to_one_of_many_takers_at_once() -> None:
    for _ in range(50):
        ahead, _ = _timeline()
        got: list[str | None] = []
        go = threading.Barrier(4)

        def take(ahead: Timeline, got: list[str | None], go: threading.Barrier) -> None:
            go.wait()
            got.append(ahead.take(HOST))

        threads = [threading.Thread(target=take, args=(ahead, got, go)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert got.count("host") == 1 and got.count(None) == 3


def test_an_end_that_fails_keeps_no_other_job_from_ending() -> None:
    ended: list[str] = []

    def broken(value: str) -> None:
        raise OSError("gone already")

    ahead = Timeline()
    ahead.start(HOST, "host", broken)
    ahead.start(LISTING, "listing", ended.append)
    with pytest.raises(OSError, match="gone already"):
        ahead.close()
    assert ended == ["listing"] and not ahead.has(HOST)
