"""The client of the sandbox runtime started once (`SandboxWrapper`), against a scripted
stand-in for `sandbox_wrap.mjs` that speaks its protocol: a request whose caller was
cancelled leaves an answer behind, which the next request must not take for its own."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from wizard.tools.shell import SandboxWrapper

STAND_IN = r"""
import json, sys, time
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if request["command"] == "slow":
        time.sleep(0.5)
    print(json.dumps({"id": request["id"], "wrapped": "wrapped " + request["command"]}), flush=True)
"""


async def test_an_answer_left_by_a_cancelled_request_is_not_taken_for_the_next() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", STAND_IN, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    wrapper = SandboxWrapper(process, Path.cwd())
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(wrapper.wrapped("slow", Path(".")), 0.1)
        assert await wrapper.wrapped("ls", Path(".")) == "wrapped ls"
    finally:
        await wrapper.close()
    assert process.returncode is not None
