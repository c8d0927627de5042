"""Where wizard puts its own files: the skills it installs in a project for a run (the
journal, the runner and the UI all tell those files from the app's), and its state folder.
A leaf: the engine's early start (`runner.harness.pi.early`) reads it with nothing else
loaded."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SKILLS_ROOT = Path(".claude") / "skills"
# How the paths of installed skills' files start, as the journal lists a project's files.
SKILL_FILES = SKILLS_ROOT.as_posix() + "/"


def config_path(environ: Mapping[str, str]) -> Path:
    """Where the config file is read from."""
    if custom := environ.get("WIZARD_CONFIG"):
        return Path(custom)
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "wizard" / "config.toml"


def state_root() -> Path:
    """wizard's state folder (`$WIZARD_STATE_DIR`, else `$XDG_STATE_HOME/wizard`)."""
    if custom := os.environ.get("WIZARD_STATE_DIR"):
        return Path(custom)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "wizard"


# A Unix socket's path is at most 107 bytes. The deepest beneath a temp folder are the
# sandbox runtime's in a run's folder (`wizard-run-ID-XXXXXXXX/srt-mux-PID-N.sock`, up to 59
# more) and a proof's sink (`wizard-verify-…/probe-…/sink.sock`, 49 more).
_SOCKET_ROOM = 107 - 60


def socket_temp_dir() -> str:
    """The temp folder for wizard's folders that hold sockets (a run's, its checks', pi's
    bridge): the system's (`TMPDIR`), or `/tmp` when that is too long for a socket beneath
    it (a CI runner's deep `TMPDIR`). Either is closed to commands, as the whole disk is but
    what the sandbox opens."""
    import tempfile

    temp = tempfile.gettempdir()
    if len(os.fsencode(temp)) <= _SOCKET_ROOM or not os.access("/tmp", os.W_OK | os.X_OK):
        return temp
    return "/tmp"
