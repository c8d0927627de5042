"""Benchmark: scanning a streamed reply for stop markers, and the memory of OutputSignals.

Run: .venv/bin/python bench/bench_stream_scan.py

1. Time: `BlockScanner` (scans each completed line once) against the naive approach
   (rescan the whole accumulated block at every newline), on the same long reply streamed
   in 8-character deltas, side by side in one process; reports the ratio.
2. Memory: `OutputSignals` after pushing a long run's text against keeping the text, with
   tracemalloc; reports both sizes.
"""

from __future__ import annotations

import time
import tracemalloc

from wizard.runner.harness.latch import StopLatch
from wizard.signals import OutputSignals, first_stop_marker

LINE = "Working through the project and editing files as the skill says. [STATUS] editing\n"


def reply(chars: int) -> str:
    body = (LINE * (chars // len(LINE) + 1))[:chars]
    return body + "[ABORT] Could not find a Stripe integration\n"


def deltas(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def scanner_time(parts: list[str]) -> float:
    start = time.perf_counter()
    latch = StopLatch()
    scanner = latch.scanner()
    for part in parts:
        scanner.feed(part)
    assert latch.marker is not None
    return time.perf_counter() - start


def naive_time(parts: list[str]) -> float:
    start = time.perf_counter()
    text, found = "", None
    for part in parts:
        text += part
        if "\n" in part and found is None:
            found = first_stop_marker(text[: text.rfind("\n") + 1])
    assert found is not None
    return time.perf_counter() - start


def memory(chars: int) -> tuple[int, int]:
    text = reply(chars)
    tracemalloc.start()
    signals = OutputSignals()
    for part in deltas(text, 4096):
        signals.push(part)
    bounded = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return bounded, len(text.encode())


def main() -> None:
    for chars in (20_000, 100_000, 400_000):
        parts = deltas(reply(chars))
        fast = min(scanner_time(parts) for _ in range(3))
        slow = min(naive_time(parts) for _ in range(3))
        print(
            f"{chars:>8} chars: scanner {fast * 1000:8.2f} ms, naive {slow * 1000:9.2f} ms, "
            f"naive/scanner = {slow / fast:6.1f}x"
        )
    kept, raw = memory(2_000_000)
    print(f"OutputSignals after 2 MB of output: {kept / 1024:.0f} KiB kept vs {raw / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
