"""A fleet's seal: each repository's job signed with its owner's key, so that a worker runs
only what its owner started.

Whoever can start a workflow at a Temporal could otherwise have a worker clone and run
anything, with its owner's gateway key and git credentials. The command that starts a fleet
signs each repository's job (HMAC-SHA256 of the job, the repository's source, branch and
options included) with the key in `fleet/key` of wizard's state folder (made on first use,
0600), or the file `WIZARD_FLEET_KEY_FILE` names (workers on other machines share it); a
worker checks the seal, and the job's ids, before any step.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import asdict, replace
from pathlib import Path

from wizard.errors import ConfigError
from wizard.fleet.model import FleetSpec, RepoJob
from wizard.layout import state_root

# A fleet's id and a repository's: one folder name, never `.`, `..` or a path.
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class Unsealed(Exception):
    """A job this worker will not run: why."""


def key_file() -> Path:
    """Where the owner's fleet key is."""
    named = os.environ.get("WIZARD_FLEET_KEY_FILE")
    return Path(named) if named else state_root() / "fleet" / "key"


def fleet_key(make: bool = False) -> bytes:
    """The owner's fleet key; made (0600) if missing and `make`. A key others may read, or
    another user's, is refused."""
    path = key_file()
    if make and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_hex(32) + "\n")
    hint = f"Keep the fleet key {path} the user's own, mode 0600 (or set WIZARD_FLEET_KEY_FILE)."
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ConfigError(f"Cannot read the fleet key {path}: {exc.strerror}.", hint) from exc
    with os.fdopen(descriptor) as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise ConfigError(f"The fleet key {path} is not the user's alone.", hint)
        key = handle.read().strip()
    if len(key) < 32:
        raise ConfigError(f"The fleet key {path} is too short.", hint)
    return key.encode()


def _digest(job: RepoJob, key: bytes) -> str:
    unsealed = replace(job, repo=replace(job.repo, seal=""))
    text = json.dumps(asdict(unsealed), sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def sealed(spec: FleetSpec, key: bytes) -> FleetSpec:
    """`spec` with each repository's job sealed."""
    repos = tuple(replace(repo, seal=_digest(spec.job(repo), key)) for repo in spec.repos)
    return replace(spec, repos=repos)


def check(job: RepoJob, key: bytes) -> None:
    """Whether a worker with `key` may run `job`; `Unsealed` saying why not."""
    for what, value in (("fleet id", job.fleet_id), ("repository id", job.repo.id)):
        if not ID.fullmatch(value):
            raise Unsealed(f"the {what} {value!r} is not a folder name")
    if not hmac.compare_digest(job.repo.seal, _digest(job, key)):
        raise Unsealed(
            "its seal does not match this worker's fleet key: the worker's owner did not start "
            "this fleet (workers of one fleet share its key file, WIZARD_FLEET_KEY_FILE)"
        )
