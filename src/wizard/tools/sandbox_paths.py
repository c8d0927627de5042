"""What the sandbox policy names in the file system, outside the project and in it: the
system folders and toolchains a command may read, the secrets among them it may not, the
names in the project that run code as the user (closed to writes), and the repository
configs whose credentials a command sees masked."""

from __future__ import annotations

import fnmatch
import os
import platform
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.code_names import ROOT_NAMES, runs_code
from wizard.tools.git_config import CREDENTIAL_PATTERN
from wizard.walk import is_repository

# Outside the project and the run's folders, the only folders a command may read: the system
# and its toolchains. Everything else is closed: other users' homes, `/srv`, `/var`, `/run`
# (sockets), `/mnt`, a CI runner's workspace, the project's sibling checkouts.
SYSTEM_READABLE = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
    "/nix/store", "/snap", "/opt/hostedtoolcache", "/opt/homebrew", "/opt/local",
)  # fmt: skip
# Of `/etc` (on Linux), only what programs and toolchains read to run: the loader, users
# and names, locale and time, TLS roots, and the toolchains' system-wide settings. The
# rest (services' configs, PAM, cron, ssh, apt, what an administrator keeps there) is
# closed, and so is anything in these that other users may not read (`ETC_CLOSED_MODE`).
# `/etc` stays mounted and the rest is closed name by name, so that links in it
# (`localtime`, `os-release`) still lead where they point.
ETC_READABLE = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "alternatives",
    "passwd", "group", "nsswitch.conf", "host.conf", "hosts", "resolv.conf", "gai.conf",
    "services", "protocols", "networks", "hostname", "shells",
    "localtime", "timezone", "locale.alias", "locale.conf", "default/locale",
    "os-release", "*-release", "*_version", "ssl", "pki", "ca-certificates",
    "ca-certificates.conf", "crypto-policies", "gnutls",
    "mime.types", "magic", "magic.mime", "terminfo", "fonts", "xml", "sgml", "inputrc",
    "gitconfig", "pip.conf", "xdg/pip", "npmrc", "yarnrc", "gemrc", "wgetrc",
    "python3*", "java-*", "jvm", "maven", "perl", "php*", "ruby*", "dotnet", "R",
)  # fmt: skip
# A file or folder in `/etc` that other users may not read is a secret of the system's (a
# shadow file, a TLS private key, a database's access rules): closed even as root.
ETC_CLOSED_MODE = stat.S_IROTH
# Secrets in the system's folders, closed even so.
SYSTEM_SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd", "/etc/ssh/ssh_host_*",
    "/etc/credstore", "/etc/credstore.encrypted",
)  # fmt: skip
# Where the runtime would swap a masked credential's stand-in back (it must be an allowed
# host): an address of the reserved 240.0.0.0/4 block, which is never routed, so no
# connection ever carries the real value.
NOWHERE = "240.0.0.1"


def etc_closed(etc: Path = Path("/etc")) -> list[str]:
    """What of `etc` a command may not read: every entry `ETC_READABLE` does not name (a
    name with a `/` opens that entry of its folder and closes the folder's others), and in
    those it names, whatever other users may not read. Nothing on macOS, where `/etc` is a
    link into `/private`: there only `SYSTEM_SECRETS` are closed."""
    if platform.system() != "Linux":
        return []
    opened: list[str] = []
    closed: list[str] = []
    for name in _listing(etc):
        if _named(name):
            opened.append(name)
        elif any(p.startswith(f"{name}/") for p in ETC_READABLE) and _folder(etc / name):
            for inner in (f"{name}/{n}" for n in _listing(etc / name)):
                (opened if _named(inner) else closed).append(inner)
        else:
            closed.append(name)
    for top in (str(etc / name) for name in opened):
        if not _others_read(top):
            closed.append(top)
            continue
        for folder, folders, files in os.walk(top):
            shut = [n for n in (*folders, *files) if not _others_read(f"{folder}/{n}")]
            closed += [f"{folder}/{n}" for n in shut]
            folders[:] = [f for f in folders if f not in shut]
    return [path if path.startswith("/") else str(etc / path) for path in closed]


def _named(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in ETC_READABLE)


def _folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _others_read(path: str) -> bool:
    try:
        return bool(os.lstat(path).st_mode & ETC_CLOSED_MODE)
    except OSError:
        return False


def toolchains(environ: Mapping[str, str], home: Path, temp: Path, project: Path) -> list[str]:
    """The system's folders, and the toolchains on `PATH` outside them and the home folder
    (`/opt/node/bin` opens `/opt/node`): what a command needs to run, read-only. A `PATH`
    folder that holds the project or the home folder opens nothing (`/work/bin` would open
    every checkout beside the project)."""
    found = [folder for folder in SYSTEM_READABLE if os.path.isdir(folder)]
    for entry in environ.get("PATH", "").split(os.pathsep):
        path = Path(entry)
        if not path.is_absolute() or not os.path.isdir(path):  # unreadable: not a toolchain
            continue
        prefix = path.parent if path.name in ("bin", "sbin") else path
        inside = any(prefix == p or p in prefix.parents for p in (home, temp))
        holds = any(prefix in p.parents for p in (project, home))
        if not inside and not holds and prefix != Path("/"):
            found.append(str(prefix))
    return found


def masked_file(path: str) -> dict[str, Any]:
    """The runtime's masking of a repository config: each credential (a header's value, the
    user and password in a URL) replaced by a stand-in; a config with none is left as it is.
    The stand-in would be swapped back only towards `NOWHERE`."""
    return {"path": path, "mode": "mask", "extract": CREDENTIAL_PATTERN,
            "onExtractNoMatch": "warn", "maskDuplicates": True,
            "injectHosts": [NOWHERE]}  # fmt: skip


def repository_configs(root: Path) -> list[str]:
    """Every repository config under `root` (or of `root`, a `.git` a preview shows): the
    project's own, nested repositories' and its submodules' (`.git/modules`)."""
    gits = [root] if root.name == ".git" else []
    for folder, folders, files in os.walk(root):
        gits += [Path(folder, ".git")] if ".git" in folders else []
        if folder != str(root) and "HEAD" in files and is_repository(folder, folders + files):
            gits.append(Path(folder))  # a repository by what it holds
            folders.clear()
        folders[:] = [f for f in folders if f not in (".git", "node_modules")]
    found = []
    for git in gits:
        for folder, folders, files in os.walk(git):
            found += [str(Path(folder, "config"))] if "config" in files else []
            folders[:] = (
                ["modules"]
                if folder == str(git)
                else [f for f in folders if f not in ("objects", "refs", "logs", "hooks", "info")]
            )
    return found


def closed_to_writes(project: Path) -> list[str]:
    """What runs code as the user when they work in the project (`code_names`): every such
    name that exists, at any depth (a `.git` folder or gitfile included), and at the root
    those that do not, so a command cannot make them, and every folder that is a repository
    by what it holds (`walk.is_repository`). `node_modules` is not walked: what
    changes there is journaled file by file, and named."""
    closed = [str(project / name) for name in ROOT_NAMES if not os.path.lexists(project / name)]
    for folder, folders, files in os.walk(project):
        if folder != str(project) and "HEAD" in files and is_repository(folder, folders + files):
            closed.append(folder)  # a repository by what it holds, whatever its name
            folders.clear()
            continue
        inside = os.path.relpath(folder, project)
        closed += [f"{folder}/{n}" for n in (*folders, *files) if runs_code(f"{inside}/{n}")]
        folders[:] = [f for f in folders if f != "node_modules" and not runs_code(f"{inside}/{f}")]
    return closed
