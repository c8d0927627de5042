"""Benchmark: the run journal's snapshot against a plain copy, and what it adds to a run.

Run: .venv/bin/python bench/bench_journal.py [--files 20000] [--mb 200]

Side by side in one run:
1. A generated project of `--files` files totalling `--mb` MB (source-like text, half of
   it unique per file), in nested folders: the journal's first snapshot (cold: every file
   hashed into the private git store) against `cp -a` of the same tree; the ratio, and the
   journal's size on disk against the project's.
2. The run's second snapshot with nothing changed (warm: git's index knows every stat), and
   with 1% of the files changed: what `finish` costs after a run.
3. Start-up cost on a small project (the demo's sample app): `begin` + `finish` of a run.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

from wizard.journal import Journal


def _size_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


def generate(root: Path, files: int, total_mb: int) -> None:
    rng = random.Random(7)
    shared = "".join(f"def helper_{n}(value):\n    return value * {n}\n\n" for n in range(400))
    per_file = total_mb * 1024 * 1024 // files
    for index in range(files):
        folder = root / f"pkg{index % 40}" / f"mod{index % 13}"
        folder.mkdir(parents=True, exist_ok=True)
        unique = "".join(
            f"VALUE_{index}_{n} = {rng.random()!r}\n" for n in range(per_file // 80 + 1)
        )
        body = (unique[: per_file // 2] + shared)[:per_file]
        (folder / f"file{index}.py").write_text(body)


def timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


def main(files: int, total_mb: int) -> None:
    with tempfile.TemporaryDirectory(prefix="wizard-bench-journal-") as tmp:
        base = Path(tmp)
        project, state = base / "project", base / "state"
        generate(project, files, total_mb)
        project_mb = _size_mb(project)
        copy_s = timed(lambda: subprocess.run(["cp", "-a", str(project), str(base / "copy")]))
        journal = Journal(project, state)
        record = None

        def begin() -> None:
            nonlocal record
            record = journal.begin("bench", "bench")

        cold_s = timed(begin)
        assert record is not None
        warm_s = timed(lambda: journal.finish(record, "succeeded"))
        for path in sorted(project.rglob("*.py"))[::100]:
            path.write_text(path.read_text() + "# changed\n")
        record2 = journal.begin("bench2", "bench")
        changed_s = timed(lambda: journal.finish(record2, "succeeded"))
        journal_mb = _size_mb(state)
        print(f"project: {files:,} files, {project_mb:.0f} MB on disk")
        print(f"cp -a: {copy_s:.2f} s | journal first snapshot: {cold_s:.2f} s "
              f"| ratio {cold_s / copy_s:.2f}")  # fmt: skip
        print(
            f"journal on disk: {journal_mb:.0f} MB ({journal_mb / project_mb:.2f} of the project)"
        )
        print(
            f"after a run, nothing changed: {warm_s:.2f} s; 1% of files changed: {changed_s:.2f} s"
        )
        shutil.rmtree(base / "copy")

    sample = Path(str(resources.files("wizard.demo") / "sample_project"))
    with tempfile.TemporaryDirectory(prefix="wizard-bench-small-") as tmp:
        small = Path(tmp) / "app"
        shutil.copytree(sample, small)
        journal = Journal(small, Path(tmp) / "state")
        times = []
        for n in range(10):
            start = time.perf_counter()
            journal.finish(journal.begin(f"r{n}", "bench"), "succeeded")
            times.append(time.perf_counter() - start)
        times.sort()
        print(f"small project ({sum(1 for _ in small.rglob('*'))} entries): begin + finish "
              f"median {times[5] * 1000:.0f} ms, first {times[0] * 1000:.0f} ms .. "
              f"max {times[-1] * 1000:.0f} ms over 10 runs")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    main(args.files, args.mb)
