"""The OS sandbox's policy: what a command the agent runs may read, write and reach.

The fence judges each tool call by its text; the sandbox makes the operating system enforce
the boundary for everything that call starts, scripts the agent wrote included. Both take
their rules from here, so they cannot drift apart. Outside the project the policy is an
allowlist, not a list of secrets:

- **read**: the system (`/usr`, what programs need of `/etc`, ...), the project, the run's
  own temp folder, and in the home folder only the toolchains and package caches in
  `HOME_READABLE`. The rest of the home folder is closed (credentials, shell rc files,
  wizard's config, other projects), and so is the system temp folder (other runs' folders
  and tokens), wizard's state and logs, and the run's private folders (pi's agent folder,
  the host-tool bridge). In the project, `.env*` files (and other names of them) are closed
  at any depth: the agent uses `check_env_keys` / `set_env_values`;
- **write**: the project and the run's temp folder, nothing else; in the project never the
  names that run code as the user (`code_names`: `.git` folders and gitfiles, hooks, editor
  and agent settings, rc files, `.pth` files): those that exist, at any depth, and at the
  root those that do not. Package managers get
  private caches in the run's temp folder (`command_env`), so nothing a command writes
  outlives the run outside the project;
- **network**: the package registries, the hosts the program declares, and
  `WIZARD_SANDBOX_ALLOW_HOSTS`; everything else is denied, the gateway included (only wizard
  talks to the gateway). The allowed hosts can still carry data out.

pi's host enforces the policy with `@anthropic-ai/sandbox-runtime` (bubblewrap, socat and
ripgrep on Linux; `sandbox-exec` on macOS).
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wizard.atomic import write_atomically
from wizard.config import switch_setting
from wizard.errors import UsageError
from wizard.layout import socket_temp_dir
from wizard.tools.git_config import holds_credentials
from wizard.tools.limits import CommandLimits
from wizard.tools.paths import READ_ONLY_NOTE, ProjectRoot
from wizard.tools.sandbox_paths import (
    NOWHERE,
    SYSTEM_SECRETS,
    closed_to_writes,
    etc_closed,
    masked_file,
    repository_configs,
    toolchains,
)

# Credentials in the user's home: a critical refusal in the fence when a command names one
# (the sandbox closes the whole home folder to commands but for `HOME_READABLE`).
SECRET_HOME_PATHS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".netrc",
    ".docker/config.json",
    ".kube",
    ".npmrc",
    ".pypirc",
)
# What a command may read of the home folder: toolchains and package caches, read-only.
HOME_READABLE = (
    ".nvm", ".volta", ".fnm", ".asdf", ".pyenv", ".rbenv", ".rustup", ".cargo/bin", ".sdkman",
    ".local/bin", ".local/lib", ".local/share/pnpm", ".bun/bin", ".deno/bin", "go/pkg/mod",
    ".npm/_cacache", ".cache/pip", ".cache/uv", ".cache/pnpm", ".cache/yarn", ".m2/repository",
)  # fmt: skip
# Where each package manager keeps its cache, pointed into the run's temp folder.
PRIVATE_CACHES = {
    "npm_config_cache": "npm", "npm_config_store_dir": "pnpm-store", "YARN_CACHE_FOLDER": "yarn",
    "YARN_GLOBAL_FOLDER": "yarn-global", "PIP_CACHE_DIR": "pip", "UV_CACHE_DIR": "uv",
    "CARGO_HOME": "cargo", "BUN_INSTALL_CACHE_DIR": "bun", "GOMODCACHE": "go-mod",
    "GOCACHE": "go-build", "XDG_CACHE_HOME": "xdg-cache",
}  # fmt: skip
REGISTRY_HOSTS = (
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "pypi.org",
    "files.pythonhosted.org",
    "crates.io",
    "index.crates.io",
    "static.crates.io",
)
# Every command's process count is capped, so a fork bomb ends in its own failure.
MAX_PROCESSES = 512
LINUX_TOOLS = {"bwrap": "bubblewrap", "socat": "socat", "rg": "ripgrep"}
_INSTALL = {
    "apt-get": "sudo apt-get install {}",
    "dnf": "sudo dnf install {}",
    "pacman": "sudo pacman -S {}",
    "zypper": "sudo zypper install {}",
    "apk": "sudo apk add {}",
}


@dataclass(frozen=True)
class SandboxPolicy:
    """What every command of one run may read, write and reach."""

    project: Path
    write: tuple[str, ...]
    deny_read: tuple[str, ...]
    allow_hosts: tuple[str, ...]
    # Re-opened for reading inside the closed folders: the project, toolchains, caches.
    allow_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    # Set for every command: private package caches and temp folder.
    command_env: Mapping[str, str] = field(default_factory=dict)
    # Run before each command, outside the sandbox: caps its process count (a cgroup with
    # `pids.max`, else `ulimit -u`), so a fork bomb ends in its own failure.
    cap_prefix: str = ""
    home: Path = field(default_factory=Path.home)
    # The runtime's settings, written for its command-line form (`with_settings_file`).
    settings_file: Path | None = None
    # Added to the output of a command that failed on a read-only file system: why (a
    # preview's copy shows the project's heavy folders read-only).
    read_only_note: str = ""
    # Files a command reads with their credentials masked (the repositories' configs).
    masked: tuple[str, ...] = ()
    # What each command may use: memory, file size, time (set in `cap_prefix` too).
    limits: CommandLimits = field(default_factory=CommandLimits)
    # A proof's probe (`probing`): the one host its commands reach, and the socket of the
    # local sink wizard serves for it there.
    sink: tuple[str, str] | None = None

    def denying(self, *paths: Path | str) -> SandboxPolicy:
        """This policy, with more paths closed to reading (a run's private folders)."""
        return replace(self, deny_read=(*self.deny_read, *(str(p) for p in paths)))

    def reading(self, *paths: Path | str) -> SandboxPolicy:
        """This policy, with more paths open to reading (the sandbox runtime's own files)."""
        return replace(self, allow_read=(*self.allow_read, *(str(p) for p in paths)))

    def for_tree(self, folder: Path) -> SandboxPolicy:
        """This policy for a command on another tree (the project as it was before the run):
        `folder` readable and, with the run's temp folder, the only place it may write."""
        temp = self.command_env.get("TMPDIR")
        return replace(
            self.reading(folder),
            write=(str(folder), *([temp] if temp else [])),
            deny_write=(),
            settings_file=None,
        )

    def probing(self, host: str, socket: Path) -> SandboxPolicy:
        """This policy for a proof's probe: `host` is the one host its commands reach, and
        the runtime's proxy hands what they send there to the sink listening on `socket`;
        nothing else leaves the sandbox, the package registries included."""
        return replace(self, allow_hosts=(host,), sink=(host, str(socket)))

    def writable(self, path: Path) -> bool:
        """Whether `path` is, or lies in, a folder commands may write: a command could have
        planted there what a tool run in `path` looks for in its ancestors."""
        resolved = path.resolve()
        return any(resolved == Path(root) or Path(root) in resolved.parents for root in self.write)

    def with_settings_file(self, private_dir: Path) -> SandboxPolicy:
        """This policy, its runtime settings written into `private_dir` (closed to commands)."""
        policy = self.denying(private_dir)
        path = private_dir / "sandbox-settings.json"
        write_atomically(path, json.dumps(policy.host_spec()["config"]).encode(), 0o600)
        return replace(policy, settings_file=path)

    def host_spec(self) -> dict[str, Any]:
        """What pi's host needs: the runtime's settings, and the prefix of every command."""
        network: dict[str, Any] = {
            "allowedDomains": [*self.allow_hosts, *([NOWHERE] if self.masked else [])],
            "deniedDomains": [],
        }
        if self.sink is not None:  # the probe's host goes to wizard's sink, nowhere else
            network["mitmProxy"] = {"socketPath": self.sink[1], "domains": [self.sink[0]]}
        config: dict[str, Any] = {
            "network": network,
            "filesystem": {
                "denyRead": list(self.deny_read),
                "allowRead": list(self.allow_read),
                "allowWrite": list(self.write),
                "denyWrite": list(self.deny_write),
            },
        }
        if self.masked:  # stand-ins are swapped back only towards `NOWHERE`, never reached
            files = [masked_file(path) for path in self.masked]
            config["credentials"] = {"files": files, "allowPlaintextInject": True}
        return {
            "config": config,
            "prefix": self.cap_prefix,
            "env": dict(self.command_env),
            "readOnlyNote": self.read_only_note,
            "limitNotes": self.limits.notes(),
        }


def build_policy(
    project: Path,
    temp_dir: Path,
    *,
    hosts: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    private: Iterable[Path] = (),
    read_only: Iterable[Path] = (),
    home: Path | None = None,
    cap_prefix: str = "",
) -> SandboxPolicy:
    """The policy for a run on `project`, with the program's `hosts` reachable; `read_only`
    folders (a preview's mounts) are open to reading, their `.env*` files closed."""
    environ = os.environ if environ is None else environ
    limits = CommandLimits.from_environ(environ)
    home = home or Path.home()
    project = project.resolve()
    extra_hosts = [h.strip() for h in environ.get("WIZARD_SANDBOX_ALLOW_HOSTS", "").split(",")]
    system_temp = Path(tempfile.gettempdir()).resolve()
    shown = [str(folder) for folder in read_only]
    deny = [
        "/",
        *SYSTEM_SECRETS,
        *etc_closed(),
        str(home),
        *(
            str(t)
            for t in dict.fromkeys((system_temp, Path(socket_temp_dir()).resolve()))
            if t != Path("/")
        ),
        *(
            f"{folder}/**/{name}"
            for folder in (str(project), *shown)
            for name in (".env", ".env.*", ".envrc", "*.env")
        ),
        *(str(p) for p in ProjectRoot(project).env_aliases()),
        *(str(p) for p in private),
    ]
    readable = [str(home / p) for p in HOME_READABLE if (home / p).is_dir()]
    readable += toolchains(environ, home, system_temp, project)
    return SandboxPolicy(
        project=project,
        write=(str(project), str(temp_dir)),
        deny_read=tuple(dict.fromkeys(deny)),
        allow_read=tuple(dict.fromkeys([str(project), str(temp_dir), *shown, *readable])),
        deny_write=tuple(closed_to_writes(project)),
        allow_hosts=tuple(dict.fromkeys([*REGISTRY_HOSTS, *hosts, *filter(None, extra_hosts)])),
        command_env={
            "TMPDIR": str(temp_dir),
            **{name: str(folder) for name, folder in private_caches(temp_dir).items()},
        },
        cap_prefix=limits.prefix() + cap_prefix,
        limits=limits,
        home=home,
        read_only_note=READ_ONLY_NOTE if shown else "",
        masked=tuple(
            config
            for root in (str(project), *shown)
            for config in repository_configs(Path(root))
            if holds_credentials(Path(config))
        ),
    )


def private_caches(temp_dir: Path) -> dict[str, Path]:
    """Each package manager's cache variable, and its folder in the run's temp folder."""
    return {name: temp_dir / "caches" / folder for name, folder in PRIVATE_CACHES.items()}


def sandbox_enabled(environ: Mapping[str, str], flag_off: bool) -> bool:
    """Whether the run is sandboxed: yes, unless `--no-sandbox` or `WIZARD_SANDBOX=off` (a
    value that is neither on nor off is a `UsageError`)."""
    return not flag_off and switch_setting(environ, "WIZARD_SANDBOX", default=True)


def missing_tools() -> list[str]:
    """The packages the sandbox needs on this system and does not find."""
    system = platform.system()
    if system == "Darwin":
        return [] if shutil.which("sandbox-exec") else ["sandbox-exec"]
    return [package for tool, package in LINUX_TOOLS.items() if shutil.which(tool) is None]


def check_sandbox() -> None:
    """The sandbox can run here; a `UsageError` with the exact fix otherwise."""
    system = platform.system()
    if system not in ("Linux", "Darwin"):
        raise UsageError(
            f"The OS sandbox does not run on {system}.",
            "Run with --no-sandbox (or WIZARD_SANDBOX=off) to rely on the fence alone.",
        )
    missing = missing_tools()
    if missing:
        raise UsageError(
            f"The OS sandbox needs {', '.join(missing)}; not found on this system.",
            f"Install: `{install_command(missing)}`. Or run with --no-sandbox "
            "(WIZARD_SANDBOX=off) to rely on the fence alone.",
        )
    if system == "Linux":
        probe = subprocess.run(
            [
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--unshare-user",
                "--unshare-net",
                "/bin/sh",
                "-c",
                ":",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode == -signal.SIGINT:  # Ctrl-C reached the probe: not a verdict
            raise KeyboardInterrupt
        if probe.returncode != 0:
            raise UsageError(
                f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}",
                "Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                "or the AppArmor bwrap profile), or run with --no-sandbox.",
            )


def install_command(packages: Iterable[str]) -> str:
    """The command that installs `packages` with this system's package manager."""
    names = " ".join(packages)
    for manager, command in _INSTALL.items():
        if shutil.which(manager):
            return command.format(names)
    return _INSTALL["apt-get"].format(names)


@dataclass(frozen=True)
class CommandCaps:
    """How a run's commands are capped: the prefix each starts with, the cgroups it joins,
    and whether the process count and the memory of a command's processes together are
    held (else memory is held per process, by `ulimit -d`)."""

    prefix: str = ""
    groups: tuple[Path, ...] = ()
    processes: bool = False
    memory: bool = False


def process_cap(run_id: str, memory_mib: int | None = None) -> CommandCaps:
    """The caps of a run's commands, and the cgroups that hold them.

    Where wizard may make them (cgroup v1's controllers, or its own v2 cgroup when they are
    delegated to it): one with `pids.max`, and one whose memory limit holds the processes of
    a command together, the pages they write to a tmpfs included (`memory_mib`). Else
    `ulimit -u` above the user's current count (which root ignores, so root without a cgroup
    gets no process cap), and the memory left to `ulimit -d`, per process.
    """
    limits = {"pids": str(MAX_PROCESSES)}
    if memory_mib is not None:
        limits["memory"] = str(memory_mib << 20)
    made = {c: g for c, limit in limits.items() if (g := _cgroup(run_id, c, limit)) is not None}
    groups = tuple(dict.fromkeys(made.values()))
    prefix = "".join(f"echo $$ > '{group}/cgroup.procs' && " for group in groups)
    processes = "pids" in made
    if not processes and os.geteuid() != 0:
        mine = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p))
        prefix += f"ulimit -u {mine + MAX_PROCESSES} && "
        processes = True
    return CommandCaps(prefix, groups, processes, "memory" in made)


def _owned(proc: Path) -> bool:
    try:
        return proc.stat().st_uid == os.geteuid()
    except OSError:
        return False


# The file that sets a controller's limit: cgroup v1's name first, then v2's.
_LIMIT_FILES = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes", "memory.max")}


def _cgroup(run_id: str, controller: str, limit: str) -> Path | None:
    """The run's cgroup under wizard's own for `controller` (v1's hierarchy of it, else the
    unified one), with `limit` set; None where wizard may not make one or the controller is
    not delegated to it."""
    for root in (_own_cgroup(controller), _own_cgroup("")):
        if root is None or not root.is_dir():
            continue
        group = root / f"wizard-{run_id}"
        made = not group.exists()
        try:
            group.mkdir(exist_ok=True)
            name = next((n for n in _LIMIT_FILES[controller] if (group / n).exists()), None)
            if name is None:  # the controller is not delegated here
                raise FileNotFoundError(group)
            (group / name).write_text(limit)
        except OSError:
            if made:
                remove_cgroup(group)
            continue
        return group
    return None


def _own_cgroup(controller: str) -> Path | None:
    """wizard's own cgroup in `controller`'s v1 hierarchy, or ("") in the unified one."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller and controller in names.split(","):
            return Path("/sys/fs/cgroup", controller, path.lstrip("/"))
        if not controller and not names:  # v2's, mounted apart beside v1's ("hybrid")
            unified = "unified" if os.path.isdir("/sys/fs/cgroup/unified") else ""
            return Path("/sys/fs/cgroup", unified, path.lstrip("/"))
    return None


def remove_cgroup(group: Path, wait_s: float = 2.0) -> None:
    """Remove a run's cgroup once its commands are gone (those just stopped may take a moment
    to leave it)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            group.rmdir()
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return
            time.sleep(0.02)
