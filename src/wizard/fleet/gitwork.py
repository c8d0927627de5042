"""wizard's git in a fleet: cloning a repository into a workspace, and publishing a result.

The workspace's clone is wizard's own: the agent works on a preview's copy of it, never on
it, and what comes back is a patch. Publishing never checks that patch out: it is applied to
a private index over the base commit (`git apply --cached`), written as a tree, and committed
with plumbing, so no filter, hook or attribute of the repository runs. Git runs with a
minimal environment; only the steps that talk to a remote (clone, fetch, push) see the
user's own git config, for their credentials, and never a hook.

The branch is idempotent: a tree equal to the branch's tip publishes nothing, a change goes
on top of the tip (or replaces the branch, with a lease, when its base moved), and a file that
looks like a secret (`.env*`, keys) is left out of the commit and named.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from wizard.fleet.model import Published, Repo
from wizard.journal import GIT_ENV_ALLOW, own_git_env
from wizard.layout import SKILL_FILES

# What wizard's git may see of the environment when it talks to a remote, besides what the
# journal's git sees (`own_git_env`): the user's own config and credentials, never a GIT_*
# override.
_REMOTE = ("HOME", "XDG_CONFIG_HOME", "SSH_AUTH_SOCK", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
           "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")  # fmt: skip
_SETTINGS = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "protocol.ext.allow=never",
    "protocol.fd.allow=never", "submodule.recurse=false", "gc.auto=0", "advice.detachedHead=false",
)  # fmt: skip
SECRET_NAMES = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "id_rsa*",
    "id_dsa*", "id_ecdsa*", "id_ed25519*", ".npmrc", ".pypirc", ".netrc", "credentials*.json",
)  # fmt: skip
_PRIVATE_KEY = re.compile(r"^\+.*-----BEGIN [A-Z ]*PRIVATE KEY-----", re.MULTILINE)
AUTHOR = ("wizard", "wizard@localhost")


class GitFailed(Exception):
    """A git command failed: its words, for the step's error."""


def git(*args: str, cwd: Path, remote: bool = False, index: Path | None = None) -> str:
    """Run wizard's git in `cwd`; its standard output, or `GitFailed` with its error."""
    if remote:
        env = {k: v for k, v in os.environ.items() if k in (*GIT_ENV_ALLOW, *_REMOTE)}
    else:
        env = own_git_env()
    env |= {"GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1]}  # fmt: skip
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    command = ["git", *(part for s in _SETTINGS for part in ("-c", s)), *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GitFailed(f"git {' '.join(args[:2])}: {done.stderr.strip()[-500:]}")
    return done.stdout


def clone(repo: Repo, dest: Path) -> str:
    """Clone `repo` into `dest` (which must not exist); its checked-out commit."""
    branch = ["--branch", repo.branch] if repo.branch else []
    git("clone", "--quiet", "--no-hardlinks", "--no-recurse-submodules", *branch, "--",
        repo.source, str(dest), cwd=dest.parent, remote=True)  # fmt: skip
    return git("rev-parse", "HEAD", cwd=dest).strip()


def looks_secret(path: str, diff: str) -> bool:
    """Whether a changed file looks like a secret: by its name, or a private key it adds."""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) for p in SECRET_NAMES) or bool(
        _PRIVATE_KEY.search(diff)
    )


def _file_diffs(patch: str) -> dict[str, str]:
    """Each file's part of a `git diff` patch, by its new path (its old one if deleted)."""
    parts: dict[str, str] = {}
    for part in re.split(r"(?m)^(?=diff --git )", patch):
        header = re.match(r'diff --git "?a/(.+?)"? "?b/(.+?)"?$', part.split("\n", 1)[0])
        if header:
            parts[header.group(2)] = part
    return parts


def publish(
    checkout: Path, base: str, patch: str, branch: str, message: str, changed: Sequence[str] = ()
) -> Published:
    """Publish `patch` (against `base`) as a commit on `branch` of the checkout's origin;
    `changed` are all the files the run changed, those the patch already left out included."""
    diffs = _file_diffs(patch)
    named = set(diffs) | set(changed)
    left_out = tuple(sorted(p for p in named if looks_secret(p, diffs.get(p, ""))))
    if not patch.strip():
        return Published(branch, "", "nothing to publish", left_out)
    patch_file = checkout.parent / "publish.patch"
    patch_file.write_text(patch, encoding="utf-8")
    index = checkout.parent / "publish.index"
    index.unlink(missing_ok=True)
    git("read-tree", base, cwd=checkout, index=index)
    # wizard's own working files (the skill it installed) are not the integration.
    exclude = [f"--exclude={path}" for path in (*left_out, f"{SKILL_FILES}*")]
    git("apply", "--cached", "--whitespace=nowarn", *exclude, str(patch_file), cwd=checkout,
        index=index)  # fmt: skip
    tree = git("write-tree", cwd=checkout, index=index).strip()
    if tree == git("rev-parse", f"{base}^{{tree}}", cwd=checkout).strip():
        return Published(branch, "", "nothing to publish", left_out)
    tip = _remote_tip(checkout, branch)
    if tip and git("rev-parse", f"{tip}^{{tree}}", cwd=checkout).strip() == tree:
        return Published(branch, tip, "unchanged", left_out)
    on_tip = bool(tip) and _is_ancestor(checkout, base, tip)
    parent = tip if on_tip else base
    commit = git("commit-tree", tree, "-p", parent, "-m", message, cwd=checkout).strip()
    git("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{tip}", "origin",
        f"{commit}:refs/heads/{branch}", cwd=checkout, remote=True)  # fmt: skip
    return Published(branch, commit, "updated" if tip else "created", left_out)


def _remote_tip(checkout: Path, branch: str) -> str:
    listed = git("ls-remote", "origin", f"refs/heads/{branch}", cwd=checkout, remote=True)
    if not listed.strip():
        return ""
    git("fetch", "--quiet", "--no-tags", "origin", f"refs/heads/{branch}", cwd=checkout,
        remote=True)  # fmt: skip
    return listed.split()[0]


def _is_ancestor(checkout: Path, base: str, tip: str) -> bool:
    try:
        git("merge-base", "--is-ancestor", base, tip, cwd=checkout)
    except GitFailed:
        return False
    return True
