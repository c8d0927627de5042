"""The repositories file: paths, URLs and branches, and bad lines named with their fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wizard.errors import UsageError
from wizard.fleet.repos import read_repos


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(path)], check=True)
    return path


def test_paths_urls_branches_comments_and_unique_ids(tmp_path: Path) -> None:
    _repo(tmp_path / "services" / "billing")
    _repo(tmp_path / "other" / "billing")
    listing = tmp_path / "repos.txt"
    listing.write_text(
        "# the fleet\n\nservices/billing\nother/billing   release  # a comment\n"
        "https://github.com/acme/web.git main\ngit@github.com:acme/api.git\n"
        "ssh://git@host.example/acme/ops.git\n"
    )
    repos = read_repos(listing)
    assert [(r.source, r.branch) for r in repos] == [
        (str(tmp_path / "services" / "billing"), None),
        (str(tmp_path / "other" / "billing"), "release"),
        ("https://github.com/acme/web.git", "main"),
        ("git@github.com:acme/api.git", None),
        ("ssh://git@host.example/acme/ops.git", None),
    ]
    ids = [r.id for r in repos]
    assert ids[0] == "billing" and ids[1].startswith("billing-")
    assert ids[2:] == ["web", "api", "ops"] and len(set(ids)) == 5


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("missing-folder", "does not exist"),
        ("plain", "not a git repository"),
        ("https://x/y.git main extra", "more than a repository and a branch"),
        ("https://x/y.git -delete", "branch git would not take"),
        ("https://x/y.git a..b", "branch git would not take"),
        ("ext::sh%20-c%20touch%20/tmp/pwned", "git transport wizard does not run"),
        ("fd::3", "git transport wizard does not run"),
        ("gopher://x/y.git", "git transport wizard does not run"),
        ("https://me:ghp_abc@github.com/acme/web.git", "URL with credentials"),
        ("https://ghp_abc@github.com/acme/web.git", "URL with credentials"),
        ("ssh://me:hunter2@host/acme/web.git", "URL with credentials"),
    ],
)
def test_a_bad_line_is_named_with_its_number(tmp_path: Path, line: str, said: str) -> None:
    (tmp_path / "plain").mkdir()
    listing = tmp_path / "repos.txt"
    listing.write_text(f"# first\n{line}\n")
    with pytest.raises(UsageError) as caught:
        read_repos(listing)
    assert "line 2" in caught.value.message and said in caught.value.message
    assert caught.value.hint


def test_an_empty_list_a_duplicate_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    listing = tmp_path / "repos.txt"
    listing.write_text("# nothing\n")
    with pytest.raises(UsageError, match="lists no repository"):
        read_repos(listing)
    listing.write_text("https://x/y.git\nhttps://x/y.git\n")
    with pytest.raises(UsageError, match="twice"):
        read_repos(listing)
    with pytest.raises(UsageError, match="Cannot read"):
        read_repos(tmp_path / "absent.txt")
