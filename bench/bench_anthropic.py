"""Benchmark: what a stop costs on the anthropic harness, beside pi, on the same replies.

Run: .venv/bin/python bench/bench_anthropic.py [--stops 20] [--json FILE]
(the run in the README: `--json bench/results/anthropic.json`)

Both harnesses run through the one driver; each run streams one reply from the scripted
gateway (127.0.0.1) in 23-character frames 2 ms apart, with the line `[ABORT] no stripe here`
in one text block:

- `short`: a short reply (two lines, the marker, two lines), then a second block of 4,000
  lines that must never be needed;
- `mid_block`: the marker in the middle of a single 20,000-character block.

Measured per harness and reply, interleaved so both see the same machine: model requests
after the marker, characters streamed after the marker's frame, the time from that frame
leaving the gateway to the stream ending (the cut) and to the harness returning, median and
p90. Both engines stream text to the same block scanner, so the marker counts when its line
ends, wherever it is in the block.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_runs import _quantiles, stop_figures

from wizard.engines.bundle import ensure_bundle
from wizard.events import EventRecorder
from wizard.runner.harness.anthropic.harness import AnthropicHarness
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.testing.gateway import ScriptedGateway

LINE = "[ABORT] no stripe here\n"  # 23 characters: one frame
FILLER = "Checking the project now.\n"[: len(LINE) - 1] + "\n"


REPLIES = {
    "short": [{"text": FILLER * 2 + LINE + FILLER * 2}, {"text": FILLER * 4000}],
    "mid_block": [{"text": FILLER * 435 + LINE + FILLER * 434}],  # 20,000 characters
}


def _reply(blocks: list[dict[str, str]]) -> dict[str, Any]:
    return {"blocks": blocks, "chunk_chars": len(LINE), "delay_ms": 2}


async def stop_once(harness: Any, folder: Path, reply: str) -> dict[str, float]:
    scenario = {"responses": [_reply(REPLIES[reply]), {"blocks": [{"text": "never"}]}]}
    async with ScriptedGateway(scenario, watch=LINE.strip()) as gateway:
        gateway_settings = GatewaySettings(url=gateway.url, retries=0)
        inputs = RunInputs(folder, "go", "scripted-1", gateway_settings, sink=EventRecorder())
        result = await harness.run(inputs)
        returned = time.monotonic()
        await gateway.settled()
    assert result.message == "no stripe here", result
    return stop_figures(gateway, returned)


async def main(stops: int) -> dict[str, Any]:
    ensure_bundle(print)
    harnesses = {"anthropic": AnthropicHarness(), "pi": PiHarness()}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {
        (reply, name): [] for reply in REPLIES for name in harnesses
    }
    with tempfile.TemporaryDirectory(prefix="wizard-bench-anthropic-") as temp:
        for _ in range(stops):  # interleaved, so both see the same machine
            for reply, name in runs:
                runs[reply, name].append(await stop_once(harnesses[name], Path(temp), reply))
    summary: dict[str, Any] = {"stops": stops, **{reply: {} for reply in REPLIES}}
    for (reply, name), values in runs.items():
        summary[reply][name] = {
            "requests_after_max": max(v["requests_after"] for v in values),
            "chars_after": _quantiles([v["chars_after"] for v in values]),
            "marker_to_cut_ms": _quantiles([v["cut_s"] * 1000 for v in values]),
            "marker_to_return_ms": _quantiles([v["return_s"] * 1000 for v in values]),
        }
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(main(args.stops))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
