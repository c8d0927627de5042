"""Files made durable together (`DurableBatch`): all in place after the block, none (and no
temp file) after an error in it, and the same with or without the file system's one sync; and
new files already in place (`make_durable`): the file system's one sync where there is one,
else each file and its folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import wizard.atomic as atomic
from wizard.atomic import DurableBatch, make_durable


@pytest.mark.parametrize("syncfs", [True, False], ids=["syncfs", "file by file"])
def test_a_batch_puts_every_file_in_place_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: bool
) -> None:
    synced: list[Path] = []
    if not syncfs:
        monkeypatch.setattr(
            atomic, "_sync_file_system", lambda anchor: synced.append(anchor) and False
        )
    (tmp_path / "a").mkdir()
    with DurableBatch(tmp_path) as batch:
        batch.add(tmp_path / "a" / "one", b"1", 0o444)
        batch.add(tmp_path / "two", b"22", 0o600)
        assert batch.holds(tmp_path / "two") and not batch.holds(tmp_path / "three")
        assert not (tmp_path / "two").exists(), "a file was in place before the batch synced"
    assert (tmp_path / "a" / "one").read_bytes() == b"1"
    assert (tmp_path / "two").read_bytes() == b"22"
    assert (tmp_path / "a" / "one").stat().st_mode & 0o777 == 0o444
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "one", "two"]
    assert synced == ([] if syncfs else [tmp_path, tmp_path])


def test_an_error_in_the_block_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), DurableBatch(tmp_path) as batch:
        batch.add(tmp_path / "one", b"1", 0o644)
        raise RuntimeError("the walk failed")
    assert list(tmp_path.iterdir()) == []


def test_without_syncfs_each_file_and_folder_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(atomic, "_sync_file_system", lambda anchor: False)
    synced: list[tuple[int, int]] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(_id(fd)) or real(fd))
    (tmp_path / "a").mkdir()
    files = [tmp_path / "a" / "one", tmp_path / "two"]
    for path in files:
        path.write_bytes(b"x")
    make_durable(tmp_path, files)
    expected = {_id_of(path) for path in (*files, tmp_path / "a", tmp_path)}
    assert set(synced) == expected


def test_with_syncfs_nothing_is_synced_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anchors: list[Path] = []
    monkeypatch.setattr(atomic, "_sync_file_system", lambda anchor: anchors.append(anchor) or True)
    monkeypatch.setattr(os, "fsync", lambda fd: pytest.fail("a file was synced on its own"))
    (tmp_path / "one").write_bytes(b"x")
    make_durable(tmp_path, [tmp_path / "one"])
    assert anchors == [tmp_path]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_linux_syncs_the_file_system_in_one_call(tmp_path: Path) -> None:
    assert atomic._sync_file_system(tmp_path) is True


def _id(descriptor: int) -> tuple[int, int]:
    info = os.fstat(descriptor)
    return info.st_dev, info.st_ino


def _id_of(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino
