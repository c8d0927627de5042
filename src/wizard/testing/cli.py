"""Running the `wizard` command as a user does, in a subprocess, for end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def wizard_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without any gateway setting, with logs in `tmp_path`, no telemetry
    and no colour, and `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIZARD_GATEWAY", "ANTHROPIC"))}
    env.update(WIZARD_LOG_DIR=str(tmp_path / "logs"), WIZARD_TELEMETRY="0", NO_COLOR="1", **extra)
    return env


def run_wizard(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """`python -m wizard ARGS`, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "wizard", *args],
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
        timeout=timeout,
    )
