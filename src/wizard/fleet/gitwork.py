"""wizard's git in a fleet: cloning a repository into a workspace, and publishing a result.

The workspace's clone is wizard's own: the agent works on a preview's copy of it, never on
it, and what comes back is a patch. Publishing never checks that patch out: it is applied to
a private index over the base commit (`git apply --cached`), written as a tree, and committed
with plumbing, so no filter, hook or attribute of the repository runs. Git runs with a
minimal environment; only the steps that talk to a remote (clone, fetch, push) see the
user's own git config, for their credentials, and never a hook.

The branch is idempotent: a tree equal to the branch's tip publishes nothing, and a change
goes on top of the tip (or replaces the branch, with a lease, when its base moved). What the
commit may carry is decided by rule (`publishing`); what it leaves out is named. Pathspecs
are literal: a file's name is never a pattern.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from wizard.fleet import publishing
from wizard.fleet.model import Published, Repo
from wizard.layout import SKILL_FILES
from wizard.own_git import GIT_ENV_ALLOW, own_git_env

# What wizard's git may see of the environment when it talks to a remote, besides what the
# journal's git sees (`own_git_env`): the user's own config and credentials, never a GIT_*
# override.
_REMOTE = ("HOME", "XDG_CONFIG_HOME", "SSH_AUTH_SOCK", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
           "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")  # fmt: skip
_SETTINGS = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "protocol.ext.allow=never",
    "protocol.fd.allow=never", "submodule.recurse=false", "gc.auto=0", "advice.detachedHead=false",
)  # fmt: skip
AUTHOR = ("wizard", "wizard@localhost")


class GitFailed(Exception):
    """A git command failed: its words, for the step's error."""


def git(
    *args: str, cwd: Path, remote: bool = False, index: Path | None = None, data: bytes = b""
) -> str:
    """Run wizard's git in `cwd`; its standard output, or `GitFailed` with its error."""
    return run_git(*args, cwd=cwd, remote=remote, index=index, data=data).decode(
        errors="surrogateescape"
    )


def run_git(
    *args: str, cwd: Path, remote: bool = False, index: Path | None = None, data: bytes = b""
) -> bytes:
    """`git`, its output as bytes."""
    if remote:
        env = {k: v for k, v in os.environ.items() if k in (*GIT_ENV_ALLOW, *_REMOTE)}
    else:
        env = own_git_env()
    env |= {"GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1]}  # fmt: skip
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    command = ["git", "--literal-pathspecs", *(part for s in _SETTINGS for part in ("-c", s)),
               *args]  # fmt: skip
    done = subprocess.run(command, cwd=cwd, env=env, input=data, capture_output=True, check=False)
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()[-500:]
        raise GitFailed(f"git {' '.join(args[:2])}: {stderr}")
    return done.stdout


# What a clone says when another attempt cannot do better: no such repository, no access.
_PERMANENT = re.compile(
    r"not found|does not exist|does not appear to be a git repository|authentication failed|"
    r"could not read (?:username|password)|permission denied|remote branch .* not found",
    re.IGNORECASE,
)


def cannot_succeed(error: str) -> bool:
    """Whether a failed clone's words say another attempt would fail the same way."""
    return _PERMANENT.search(error) is not None


def clone(repo: Repo, dest: Path) -> str:
    """Clone `repo` into `dest` (which must not exist); its checked-out commit."""
    branch = ["--branch", repo.branch] if repo.branch else []
    git("clone", "--quiet", "--no-hardlinks", "--no-recurse-submodules", *branch, "--",
        repo.source, str(dest), cwd=dest.parent, remote=True)  # fmt: skip
    return git("rev-parse", "HEAD", cwd=dest).strip()


def publish(
    checkout: Path,
    base: str,
    patch: str,
    branch: str,
    message: str,
    changed: Sequence[str] = (),
    publishable: Sequence[str] = ("*",),
) -> Published:
    """Publish `patch` (against `base`) as a commit on `branch` of the checkout's origin,
    with only what the rules let through (`publishing`: `publishable` are the program's
    paths); `changed` are all the files the run changed, those the patch already left out
    included."""
    index = checkout.parent / "publish.index"
    index.unlink(missing_ok=True)
    git("read-tree", base, cwd=checkout, index=index)
    if patch.strip():
        patch_file = checkout.parent / "publish.patch"
        patch_file.write_text(patch, encoding="utf-8", errors="surrogateescape")
        # wizard's own working files (the skill it installed) are not the integration.
        git("apply", "--cached", "--whitespace=nowarn", f"--exclude={SKILL_FILES}*",
            str(patch_file), cwd=checkout, index=index)  # fmt: skip
    changes = _staged(checkout, base, index)
    staged = {change.path for change in changes}
    out = publishing.left_out(changes, publishable)
    # What the patch did not carry is named when a rule of its own would have left it out.
    out |= publishing.left_out(
        [
            publishing.Changed(p, "100644")
            for p in changed
            if p not in staged and not p.startswith(SKILL_FILES)
        ],
        ("*",),
    )
    _unstage(checkout, base, index, [path for path in out if path in staged])
    left = tuple(f"{path} ({why})" for path, why in sorted(out.items()))
    tree = git("write-tree", cwd=checkout, index=index).strip()
    if tree == git("rev-parse", f"{base}^{{tree}}", cwd=checkout).strip():
        return Published(branch, "", "nothing to publish", left)
    tip = _remote_tip(checkout, branch)
    if tip and git("rev-parse", f"{tip}^{{tree}}", cwd=checkout).strip() == tree:
        return Published(branch, tip, "unchanged", left)
    on_tip = bool(tip) and _is_ancestor(checkout, base, tip)
    parent = tip if on_tip else base
    commit = git("commit-tree", tree, "-p", parent, "-m", message, cwd=checkout).strip()
    git("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{tip}", "origin",
        f"{commit}:refs/heads/{branch}", cwd=checkout, remote=True)  # fmt: skip
    return Published(branch, commit, "updated" if tip else "created", left)


def _staged(checkout: Path, base: str, index: Path) -> list[publishing.Changed]:
    """Each file the private index changes from `base`: its new mode and content."""
    raw = run_git("diff-index", "--cached", "-z", "--no-renames", base, cwd=checkout, index=index)
    fields = raw.split(b"\0")
    entries = [(fields[i].split(), fields[i + 1].decode(errors="surrogateescape"))
               for i in range(0, len(fields) - 1, 2)]  # fmt: skip
    blobs = [meta[3].decode() for meta, _ in entries if meta[1] in (b"100644", b"100755")]
    contents = _contents(checkout, blobs)
    return [
        publishing.Changed(path, None if meta[1] == b"000000" else meta[1].decode(),
                           contents.get(meta[3].decode(), b""))
        for meta, path in entries
    ]  # fmt: skip


def _contents(checkout: Path, blobs: Sequence[str]) -> dict[str, bytes]:
    """The content of each blob (one `git cat-file --batch`)."""
    if not blobs:
        return {}
    out = run_git(
        "cat-file", "--batch", cwd=checkout, data="".join(f"{b}\n" for b in blobs).encode()
    )
    found, at = {}, 0
    for blob in blobs:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        found[blob] = out[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
    return found


def _unstage(checkout: Path, base: str, index: Path, paths: Sequence[str]) -> None:
    """Put `paths` back as `base` has them (or out of the index, if it has none)."""
    if not paths:
        return
    listed = run_git("ls-tree", "-z", base, "--", *paths, cwd=checkout)
    kept = {entry.split(b"\t", 1)[1]: entry for entry in listed.split(b"\0") if entry}
    lines = [kept.get(path.encode(errors="surrogateescape"),
                      b"0 " + b"0" * 40 + b"\t" + path.encode(errors="surrogateescape"))
             for path in paths]  # fmt: skip
    run_git("update-index", "-z", "--index-info", cwd=checkout, index=index,
            data=b"".join(line + b"\0" for line in lines))  # fmt: skip


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
