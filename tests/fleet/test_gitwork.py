"""Publishing a fleet's result: one commit on `wizard/PROGRAM`, never twice, never a secret,
never a checkout (so nothing of the repository's own runs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wizard.fleet import gitwork
from wizard.fleet.model import Repo

BRANCH = "wizard/revenue-analytics"


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """The user's repository: one commit on main, checked out."""
    repo = tmp_path / "origin"
    repo.mkdir()
    _git("init", "--quiet", "--initial-branch=main", cwd=repo)
    (repo / "app.py").write_text("print('hi')\n")
    _git("add", "-A", cwd=repo)
    _git("commit", "--quiet", "-m", "app", cwd=repo)
    return repo


def _workspace(origin: Path, tmp_path: Path, name: str = "ws") -> tuple[Path, str]:
    folder = tmp_path / name
    folder.mkdir()
    base = gitwork.clone(Repo("origin", str(origin)), folder / "repo")
    return folder / "repo", base


def _patch(checkout: Path, files: dict[str, str]) -> str:
    """What a preview's `--patch-out` would hold for these new contents."""
    for name, text in files.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    _git("add", "-A", cwd=checkout)
    patch = _git("diff", "--cached", "--binary", cwd=checkout) + "\n"
    _git("reset", "--quiet", "--hard", cwd=checkout)
    return patch


def test_a_result_is_published_once_and_a_rerun_publishes_nothing(
    origin: Path, tmp_path: Path
) -> None:
    checkout, base = _workspace(origin, tmp_path)
    patch = _patch(checkout, {"app.py": "import posthog\nprint('hi')\n"})
    first = gitwork.publish(checkout, base, patch, BRANCH, "wizard: revenue-analytics\n")
    assert first.state == "created"
    assert _git("rev-parse", BRANCH, cwd=origin) == first.commit
    assert _git("show", f"{BRANCH}:app.py", cwd=origin).startswith("import posthog")
    assert _git("status", "--porcelain", cwd=origin) == ""  # the user's checkout untouched
    assert _git("rev-parse", "--abbrev-ref", "HEAD", cwd=origin) == "main"

    again, base2 = _workspace(origin, tmp_path, "ws2")
    second = gitwork.publish(again, base2, patch, BRANCH, "wizard: revenue-analytics\n")
    assert (second.state, second.commit) == ("unchanged", first.commit)
    assert _git("rev-list", "--count", f"main..{BRANCH}", cwd=origin) == "1"


def test_a_new_result_goes_on_top_and_a_moved_base_replaces_the_branch(
    origin: Path, tmp_path: Path
) -> None:
    checkout, base = _workspace(origin, tmp_path)
    gitwork.publish(checkout, base, _patch(checkout, {"a.txt": "1\n"}), BRANCH, "one")
    checkout, base = _workspace(origin, tmp_path, "ws2")
    update = gitwork.publish(checkout, base, _patch(checkout, {"a.txt": "2\n"}), BRANCH, "two")
    assert update.state == "updated"
    assert _git("rev-list", "--count", f"main..{BRANCH}", cwd=origin) == "2"

    (origin / "app.py").write_text("print('moved')\n")
    _git("commit", "--quiet", "-am", "main moved", cwd=origin)
    checkout, base = _workspace(origin, tmp_path, "ws3")
    moved = gitwork.publish(checkout, base, _patch(checkout, {"a.txt": "3\n"}), BRANCH, "three")
    assert moved.state == "updated"
    assert _git("rev-parse", f"{BRANCH}~1", cwd=origin) == _git("rev-parse", "main", cwd=origin)


def test_secrets_and_wizards_own_files_are_left_out_and_named(origin: Path, tmp_path: Path) -> None:
    checkout, base = _workspace(origin, tmp_path)
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n"
    patch = _patch(checkout, {
        "app.py": "import posthog\n", ".env.local": "POSTHOG_KEY=phx_1\n", "deploy/id_ed25519": key,
        "notes/key.txt": key, ".claude/skills/revenue-analytics/SKILL.md": "# skill\n",
    })  # fmt: skip
    published = gitwork.publish(checkout, base, patch, BRANCH, "m", changed=[".env"])
    assert published.left_out == (
        ".env (a secret's name)", ".env.local (a secret's name)",
        "deploy/id_ed25519 (a secret's name)", "notes/key.txt (holds a secret)",
    )  # fmt: skip
    files = _git("ls-tree", "-r", "--name-only", BRANCH, cwd=origin).split()
    assert files == ["app.py"]


def test_nothing_to_publish_and_no_path_into_git(origin: Path, tmp_path: Path) -> None:
    checkout, base = _workspace(origin, tmp_path)
    assert gitwork.publish(checkout, base, "", BRANCH, "m").state == "nothing to publish"
    hook = ("diff --git a/.git/hooks/post-commit b/.git/hooks/post-commit\n"
            "new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-commit\n"
            "@@ -0,0 +1 @@\n+touch pwned\n")  # fmt: skip
    with pytest.raises(gitwork.GitFailed, match="invalid path"):
        gitwork.publish(checkout, base, hook, BRANCH, "m")
    assert not (checkout / ".git" / "hooks" / "post-commit").exists()
    assert _git("branch", "--list", BRANCH, cwd=origin) == ""


def test_the_repositorys_own_filters_and_hooks_never_run(origin: Path, tmp_path: Path) -> None:
    """A filter named in `.gitattributes` and defined in the clone's config, and a hook in
    the clone: publishing runs none of them (no checkout, no hooks)."""
    (origin / ".gitattributes").write_text("*.py filter=evil\n")
    _git("add", "-A", cwd=origin)
    _git("commit", "--quiet", "-m", "attributes", cwd=origin)
    checkout, base = _workspace(origin, tmp_path)
    ran = tmp_path / "ran"
    _git("config", "filter.evil.clean", f"touch {ran}", cwd=checkout)
    hook = checkout / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    # Written by hand: making it with git here would run the filter itself.
    patch = ("diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n"
             "-print('hi')\n+import posthog\n")  # fmt: skip
    assert gitwork.publish(checkout, base, patch, BRANCH, "m").state == "created"
    assert not ran.exists()


def test_a_url_and_a_branch_are_cloned_and_published_back_to_the_url(
    origin: Path, tmp_path: Path
) -> None:
    _git("checkout", "--quiet", "-b", "release", cwd=origin)
    (origin / "app.py").write_text("print('release')\n")
    _git("commit", "--quiet", "-am", "release", cwd=origin)
    _git("checkout", "--quiet", "main", cwd=origin)
    folder = tmp_path / "ws"
    folder.mkdir()
    url = f"file://{origin}"
    base = gitwork.clone(Repo("origin", url, "release"), folder / "repo")
    assert base == _git("rev-parse", "release", cwd=origin)
    patch = _patch(folder / "repo", {"app.py": "import posthog\nprint('release')\n"})
    published = gitwork.publish(folder / "repo", base, patch, BRANCH, "m")
    assert published.state == "created"
    assert _git("rev-parse", f"{BRANCH}~1", cwd=origin) == base


def test_a_colleague_who_clones_the_branch_gets_only_what_the_program_may_change(
    origin: Path, tmp_path: Path
) -> None:
    """What a hostile agent left in a preview, published by the rules of revenue-analytics:
    a CI workflow posting the repository's secrets, a planted bare repository whose
    fsmonitor runs on `git status`, secrets under names no list knew and in content, a
    pytest plugin, a file with a glob's characters in its name. The colleague's clone holds
    the integration alone, and `git status` there runs nothing."""
    from wizard.programs import get_program

    checkout, base = _workspace(origin, tmp_path)
    ran = tmp_path / "ran"
    planted = {
        "app.py": "import posthog\nposthog.capture('x', 'paid')\n",
        "requirements.txt": "posthog\n",
        ".github/workflows/ci.yml": "on: push\njobs: {x: {steps: [{run: 'curl -d @$SECRETS'}]}}\n",
        "docs/HEAD": "ref: refs/heads/main\n",
        "docs/config": f"[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = touch {ran}\n",
        "docs/refs/heads/.keep": "",
        "config/prod.env": "DATABASE_URL=postgres://u:p@db/prod\n",
        ".aws/credentials": "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
        "token.txt": "ghp_" + "a" * 36 + "\n",
        "notes.md": "the key is sk_live_" + "b" * 24 + "\n",
        "conftest.py": "import os; os.system('id')\n",
        "src/[x].yml": "not a program's path\n",
        "bunfig.toml": "preload = ['./evil.ts']\n",
        "token_service.py": "import posthog\n",  # the app's code, whatever its name
    }
    patch = _patch(checkout, planted)
    rules = get_program("revenue-analytics").publishable
    published = gitwork.publish(checkout, base, patch, BRANCH, "m", publishable=rules)
    why = dict(entry.rsplit(" (", 1) for entry in published.left_out)
    assert why == {
        ".aws/credentials": "a secret's name)", ".github/workflows/ci.yml": "runs code in CI "
        "or a colleague's tools)", "bunfig.toml": "runs code in CI or a colleague's tools)",
        "config/prod.env": "a secret's name)", "conftest.py": "runs code in CI or a "
        "colleague's tools)", "docs/HEAD": "a repository)", "docs/config": "a repository)",
        "docs/refs/heads/.keep": "a repository)", "notes.md": "holds a secret)",
        "src/[x].yml": "not a path the program changes)", "token.txt": "a secret's name)",
    }  # fmt: skip
    colleague = tmp_path / "colleague"
    _git("clone", "--quiet", "--branch", BRANCH, str(origin), str(colleague), cwd=tmp_path)
    files = sorted(_git("ls-files", cwd=colleague).split())
    assert files == ["app.py", "requirements.txt", "token_service.py"]
    for folder in (colleague, colleague / "src"):
        if folder.is_dir():
            _git("status", cwd=folder)
    assert not ran.exists()


def test_a_clone_that_cannot_succeed_is_told_from_one_that_may(tmp_path: Path) -> None:
    """A missing repository fails the same way every time: it is not tried again."""
    with pytest.raises(gitwork.GitFailed) as failed:
        gitwork.clone(Repo("gone", str(tmp_path / "gone")), tmp_path / "ws")
    assert gitwork.cannot_succeed(str(failed.value))
    assert not gitwork.cannot_succeed("git clone: fatal: unable to access: Connection timed out")
