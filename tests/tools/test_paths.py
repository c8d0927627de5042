"""`ProjectRoot`: the one walk that judges and opens a path, against hostile names and files.

Every case plants the trap on disk first (links out, look-alike names, pipes, hard links to a
secret, `.git` internals) and then asks wizard's file tools to use it; the assertion is on
what was read or written, not on a message.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wizard.atomic import write_in
from wizard.tools.files import edit_text, read_text, write_text
from wizard.tools.paths import ProjectRoot, Refusal

SECRET = "canary-0f9e-outside"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[ProjectRoot, Path, Path]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('app')\n")
    (project / ".env").write_text(f"KEY={SECRET}\n")
    return ProjectRoot(project), project, outside


def read(root: ProjectRoot, path: str) -> tuple[bool, str]:
    result = read_text(root, {"path": path})
    return not result.is_error, result.text


@pytest.mark.parametrize(
    "variant", ["a\u00a0b", "a\u2003b", "a\u202fb", "a\u3000b", "it\u2019s", "cafe\u0301"]
)
def test_a_look_alike_name_is_opened_as_written_never_as_its_variant(tree, variant):
    """pi mapped these to another name; the name judged must be the name opened."""
    root, project, outside = tree
    (project / variant).symlink_to(outside / "secret.txt")
    plain = variant.replace("\u00a0", " ").replace("\u2003", " ").replace("\u202f", " ")
    plain = plain.replace("\u3000", " ").replace("\u2019", "'").replace("cafe\u0301", "café")
    for name in (variant, plain):
        ok, text = read(root, name)
        assert not ok and SECRET not in text


@pytest.mark.parametrize(
    "link_target",
    ["../../outside/secret.txt", "ABS", "../../outside", "/etc/passwd", "/proc/self/environ"],
)
def test_links_that_leave_the_project_are_refused_at_any_depth(tree, link_target):
    root, project, outside = tree
    target = str(outside / "secret.txt") if link_target == "ABS" else link_target
    (project / "src" / "out").symlink_to(target)
    for name in ("src/out", "src/out/secret.txt", "src/../src/out"):
        ok, text = read(root, name)
        assert not ok and SECRET not in text
        assert write_text(root, {"path": name, "content": "pwned"}).is_error
    assert (outside / "secret.txt").read_text() == SECRET


def test_links_inside_the_project_are_followed_and_writes_land_on_the_target(tree):
    root, project, _ = tree
    (project / "lib").symlink_to("src")
    (project / "main.py").symlink_to(project / "src" / "app.py")
    assert read(root, "lib/app.py") == (True, "print('app')\n")
    assert read(root, str(project / "main.py")) == (True, "print('app')\n")
    assert not write_text(root, {"path": "main.py", "content": "print('new')\n"}).is_error
    assert (project / "main.py").is_symlink()
    assert (project / "src" / "app.py").read_text() == "print('new')\n"


def test_a_link_loop_is_refused(tree):
    root, project, _ = tree
    (project / "a").symlink_to("b")
    (project / "b").symlink_to("a")
    ok, text = read(root, "a")
    assert not ok and "loop" in text


def test_a_pipe_a_socket_and_a_folder_are_refused_without_blocking(tree):
    root, project, _ = tree
    os.mkfifo(project / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(project / "sock"))
    try:
        for name in ("pipe", "sock", "src"):
            ok, _ = read(root, name)
            assert not ok
            assert edit_text(
                root, {"path": name, "edits": [{"oldText": "a", "newText": "b"}]}
            ).is_error
            assert write_text(root, {"path": name, "content": "x"}).is_error
        assert stat.S_ISFIFO((project / "pipe").lstat().st_mode)
    finally:
        server.close()


def test_env_files_are_closed_under_every_name(tree):
    root, project, _ = tree
    os.link(project / ".env", project / "src" / "config.txt")
    (project / "envlink").symlink_to(".env")
    for name in (".env", "./.env", "src/../.env", "envlink", "src/config.txt"):
        ok, text = read(root, name)
        assert not ok and SECRET not in text
    # Neither another name of a file that is no `.env`, nor an `.env` name of one, is an alias.
    (project / "src" / "a.txt").write_text("a")
    os.link(project / "src" / "a.txt", project / "b.txt")
    os.link(project / ".env", project / "src" / ".env.copy")
    assert root.env_aliases() == [project / "src" / "config.txt"]


@pytest.mark.parametrize("name", [".git/config", "sub/.git/hooks/post-checkout", ".GIT/config",
                                  ".git/modules/lib/config"])  # fmt: skip
def test_nothing_under_a_git_folder_is_opened(tree, name):
    root, project, _ = tree
    (project / name).parent.mkdir(parents=True, exist_ok=True)
    (project / name).write_text("[core]\n")
    assert read(root, name)[0] is False
    assert write_text(root, {"path": name, "content": "[core]\n\tfsmonitor = evil\n"}).is_error
    assert (project / name).read_text() == "[core]\n"


def test_outside_names_are_refused(tree):
    root, _, outside = tree
    for name in (
        "../outside/secret.txt",
        str(outside / "secret.txt"),
        "~/x",
        "src/../../outside/secret.txt",
    ):
        ok, text = read(root, name)
        assert not ok and "outside" in text


def test_write_makes_folders_keeps_modes_and_reads_back(tree):
    root, project, _ = tree
    (project / "run.sh").write_text("echo hi\n")
    (project / "run.sh").chmod(0o750)
    assert not write_text(root, {"path": "run.sh", "content": "echo bye\n"}).is_error
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o750
    assert not write_text(root, {"path": "a/b/c.txt", "content": "deep"}).is_error
    assert (project / "a" / "b" / "c.txt").read_text() == "deep"
    assert not any(p.name.endswith(".tmp") for p in project.rglob("*"))


def test_a_folder_swapped_for_a_link_after_the_check_still_gets_the_write(tree):
    """The write goes into the folder that was checked (held open), not where a name now points."""
    root, project, outside = tree
    located = root.locate("src/new.txt")
    assert not isinstance(located, Refusal)
    with located:
        (project / "src").rename(project / "src-moved")
        (project / "src").symlink_to(outside)
        write_in(located.folder, located.name, b"held", 0o644)
    assert (project / "src-moved" / "new.txt").read_text() == "held"
    assert not (outside / "new.txt").exists()


def test_edit_keeps_line_endings_and_a_bom(tree):
    root, project, _ = tree
    (project / "w.txt").write_bytes("\ufeffone\r\ntwo\r\n".encode())
    result = edit_text(root, {"path": "w.txt", "oldText": "two", "newText": "2"})
    assert not result.is_error, result.text
    assert (project / "w.txt").read_bytes() == "\ufeffone\r\n2\r\n".encode()
    assert edit_text(
        root, {"path": "w.txt", "edits": [{"oldText": "zzz", "newText": "y"}]}
    ).is_error


def test_read_pages_long_files(tree):
    root, project, _ = tree
    (project / "long.txt").write_text("\n".join(str(n) for n in range(1, 3001)))
    first = read_text(root, {"path": "long.txt"}).text
    assert first.splitlines()[1999] == "2000" and "offset=2001" in first
    assert read_text(root, {"path": "long.txt", "offset": 2999}).text == "2999\n3000"


_PARTS = st.sampled_from(
    ["..", ".", "src", "out", "app.py", "secret.txt", "", "loop", ".env", "in"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PARTS, min_size=1, max_size=6), st.booleans())
def test_no_name_reaches_outside(tmp_path_factory, parts, absolute):
    """Whatever the agent writes, a read never shows the outside secret or the env file."""
    base = tmp_path_factory.mktemp("h")
    project, outside = base / "p", base / "o"
    (project / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (project / ".env").write_text(SECRET)
    (project / "src" / "app.py").write_text("ok")
    (project / "out").symlink_to(outside)
    (project / "loop").symlink_to("loop")
    (project / "in").symlink_to("src")
    root = ProjectRoot(project)
    name = "/".join(parts)
    if absolute:
        name = f"{project}/{name}"
    _, text = read(root, name)
    assert SECRET not in text
    write_text(root, {"path": name, "content": "x"})
    assert (outside / "secret.txt").read_text() == SECRET
    assert list(outside.iterdir()) == [outside / "secret.txt"]


def test_a_previews_mount_is_read_through_the_folder_wizard_named_and_never_written(
    tmp_path: Path,
) -> None:
    real = tmp_path / "project" / "node_modules"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg" / "index.js").write_text("module.exports = 1\n")
    copy, outside = tmp_path / "copy", tmp_path / "outside"
    copy.mkdir()
    outside.mkdir()
    (outside / "index.js").write_text(SECRET)
    (copy / "app.js").write_text("app\n")
    (copy / "node_modules").symlink_to(real)
    root = ProjectRoot(copy, {"node_modules": real})
    assert root.read_bytes("node_modules/pkg/index.js") == b"module.exports = 1\n"
    assert root.read_bytes("node_modules/../app.js") == b"app\n"
    for path in ("node_modules/pkg/index.js", "node_modules/new/file.js"):
        refused = root.write_bytes(path, b"pwned")
        assert isinstance(refused, Refusal) and "read-only" in refused.reason
    assert (real / "pkg" / "index.js").read_text() == "module.exports = 1\n"
    assert not (real / "new").exists()
    # The agent swaps the mount's link for one of its own: the named folder is still read.
    (copy / "node_modules").unlink()
    (copy / "node_modules").symlink_to(outside / ".." / "outside")
    assert root.read_bytes("node_modules/index.js") != SECRET.encode()
    assert root.read_bytes("node_modules/pkg/index.js") == b"module.exports = 1\n"
    # Without the mount, the same link is one that leads outside, refused.
    assert isinstance(ProjectRoot(copy).read_bytes("node_modules/index.js"), Refusal)


def test_a_file_over_the_read_limit_is_refused_with_the_way_to_read_it(tree):
    from wizard.tools.paths import MAX_READ_BYTES

    root, project, _ = tree
    with (project / "huge.log").open("wb") as handle:
        handle.truncate(MAX_READ_BYTES + 1)  # sparse: no disk
    ok, text = read(root, "huge.log")
    assert not ok and "more than the" in text and "head, sed -n" in text
    (project / "edge.log").write_bytes(b"x" * 10)
    assert root.read_bytes("edge.log", max_bytes=10) == b"x" * 10
    assert isinstance(root.read_bytes("edge.log", max_bytes=9), Refusal)
