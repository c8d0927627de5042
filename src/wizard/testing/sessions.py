"""A real pi session opened by hand, for live tests and benchmarks that drive the engine
boundary without the driver: behind wizard's gateway proxy, with a tool gate over a fence for
the project, as a run would give it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from wizard.runner.harness.gate import ToolGate
from wizard.runner.harness.pi.session import PiSession
from wizard.runner.harness.proxy import GatewayProxy, RetryPolicy
from wizard.runner.harness.types import EngineLaunch, GatewayApi
from wizard.tools.base import HostTool
from wizard.tools.fence import Fence


@contextlib.asynccontextmanager
async def open_pi_session(
    project: Path,
    gateway_url: str,
    *,
    api: GatewayApi = "anthropic-messages",
    model: str = "scripted-1",
    tools: Sequence[HostTool] = (),
    shell: bool = False,
    **options: Any,
) -> AsyncIterator[PiSession]:
    """A started `PiSession` (`options` are its own: `stall_seconds`…), closed on exit."""
    async with GatewayProxy(gateway_url, None, policy=RetryPolicy(max_retries=0)) as proxy:
        gate = ToolGate(tools, Fence(project))
        launch = EngineLaunch(project, model, api, proxy.url, proxy.token, gate, shell=shell)
        session = PiSession(launch, **options)
        try:
            await session.start()
            yield session
        finally:
            await session.close()
