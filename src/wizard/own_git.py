"""The environment of wizard's own git (the journal's, and a fleet's): enough to run, nothing
of wizard's or of git's own overrides, and no system or user config, which could name
commands for git to run (`core.fsmonitor`, `core.sshCommand`, hooks)."""

from __future__ import annotations

import os

# What wizard's git may see of the environment: enough to run, nothing of wizard's or git's.
GIT_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "TZ")


def own_git_env() -> dict[str, str]:
    """The environment of wizard's own git when it talks to no remote."""
    env = {k: v for k, v in os.environ.items() if k in GIT_ENV_ALLOW}
    return env | {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull}
