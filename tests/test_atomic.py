"""Files made durable together (`DurableBatch`): all in place after the block, none (and no
temp file) after an error in it, and the same with or without the file system's one sync."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import wizard.atomic as atomic
from wizard.atomic import DurableBatch


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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_linux_syncs_the_file_system_in_one_call(tmp_path: Path) -> None:
    assert atomic._sync_file_system(tmp_path) is True
