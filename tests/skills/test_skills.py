"""Skills: front matter, sources (bundled, local, remote), and installing into a project."""

from __future__ import annotations

import http.server
import io
import re
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from wizard.errors import ConfigError
from wizard.programs import PROGRAMS
from wizard.skills.install import MARKER, install_skill
from wizard.skills.skill import parse_skill, read_skill
from wizard.skills.sources import BundledSkills, ChainedSkills, DirectorySkills, RemoteSkills

GOOD = "---\nname: my-skill\ndescription: Does a thing.\n---\n# Steps\n"


def test_front_matter_is_validated() -> None:
    assert parse_skill(GOOD, "x").name == "my-skill"
    for bad, why in [
        ("# no front matter", "no front matter"),
        ("---\nname: x\n", "never closed"),
        ("---\nname: Bad Name\ndescription: d\n---\n", "name"),
        ("---\nname: ok\n---\n", "description"),
        ("---\n: : :\n---\n", "Malformed"),
    ]:
        with pytest.raises(ConfigError, match=why) as raised:
            parse_skill(bad, "SKILL.md")
        assert "Fix SKILL.md" in (raised.value.hint or "")


def test_every_program_skill_is_bundled_and_valid() -> None:
    bundled = {entry.id for entry in BundledSkills().menu()}
    for program in PROGRAMS.values():
        assert program.skill in bundled
        read_skill(BundledSkills().root / program.skill)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_skills_write_exactly_the_reasons_their_cases_match(program: str) -> None:
    config = PROGRAMS[program]
    text = (BundledSkills().root / config.skill / "SKILL.md").read_text()
    reasons = re.findall(r"^\s*\[ABORT\] (.+)$", text, re.MULTILINE)
    assert reasons, "the skill has no stop conditions"
    for reason in reasons:
        assert config.abort_case_for(reason.strip()) is not None, reason
    for case in config.abort_cases:
        assert any(case.matches(r.strip()) for r in reasons), case.match


def _skill_dir(root: Path, name: str, body: str = GOOD) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(body.replace("my-skill", name))
    return folder


def test_install_into_the_project(tmp_path: Path) -> None:
    source = DirectorySkills(tmp_path / "skills")
    _skill_dir(tmp_path / "skills", "alpha")
    project = tmp_path / "project"
    project.mkdir()
    result = install_skill(source, "alpha", project)
    assert result.ok and result.path == Path(".claude/skills/alpha")
    assert (project / ".claude/skills/alpha/SKILL.md").is_file()
    assert (project / ".claude/skills/alpha" / MARKER).is_file()
    assert install_skill(source, "alpha", project).ok  # reinstalling our own is fine


def test_install_never_overwrites_a_folder_the_user_owns(tmp_path: Path) -> None:
    _skill_dir(tmp_path / "skills", "alpha")
    project = tmp_path / "project"
    mine = project / ".claude/skills/alpha"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("my own notes")
    result = install_skill(DirectorySkills(tmp_path / "skills"), "alpha", project)
    assert result.kind == "conflict" and "move it away" in result.message()
    assert (mine / "SKILL.md").read_text() == "my own notes"


@pytest.mark.parametrize("link", [".claude", ".claude/skills", ".claude/skills/alpha"])
def test_install_refuses_a_link_on_the_way_out_of_the_project(tmp_path: Path, link: str) -> None:
    _skill_dir(tmp_path / "skills", "alpha")
    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(home)
    result = install_skill(DirectorySkills(tmp_path / "skills"), "alpha", project)
    assert result.kind == "unsafe-path" and "Nothing was changed" in result.message()
    assert list(home.iterdir()) == []


def test_install_failures_name_the_fix(tmp_path: Path) -> None:
    _skill_dir(tmp_path / "skills", "broken", body="no front matter")
    source = DirectorySkills(tmp_path / "skills")
    assert install_skill(source, "missing", tmp_path).kind == "skill-not-found"
    broken = install_skill(source, "broken", tmp_path)
    assert broken.kind == "invalid-skill" and not (tmp_path / ".claude/skills/broken").exists()
    gone = install_skill(DirectorySkills(tmp_path / "nowhere"), "x", tmp_path)
    assert gone.kind == "menu-fetch-failed" and "--skills-dir" in gone.message()


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.fixture
def skill_server() -> Iterator[tuple[str, dict[str, bytes], list[str]]]:
    routes: dict[str, bytes] = {}
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/skills", routes, hits
    server.shutdown()
    server.server_close()


def test_remote_menu_and_archive(
    tmp_path: Path, skill_server: tuple[str, dict[str, bytes], list[str]]
) -> None:
    base, routes, _ = skill_server
    routes["/skills/skill-menu.json"] = (
        b'{"categories": {"email": [{"id": "remote-one", "name": "Remote", '
        b'"downloadUrl": "remote-one.zip"}]}}'
    )
    routes["/skills/remote-one.zip"] = _zip(
        {"SKILL.md": GOOD.replace("my-skill", "remote-one"), "refs/a.md": "x"}
    )
    result = install_skill(RemoteSkills(base), "remote-one", tmp_path)
    assert result.ok
    assert (tmp_path / ".claude/skills/remote-one/refs/a.md").read_text() == "x"


def test_remote_archive_cannot_escape(
    tmp_path: Path, skill_server: tuple[str, dict[str, bytes], list[str]]
) -> None:
    base, routes, _ = skill_server
    routes["/skills/skill-menu.json"] = (
        b'{"categories": {"x": [{"id": "evil", "downloadUrl": "evil.zip"}]}}'
    )
    routes["/skills/evil.zip"] = _zip({"SKILL.md": GOOD, "../../escaped.txt": "gotcha"})
    result = install_skill(RemoteSkills(base), "evil", tmp_path / "project")
    assert result.kind == "download-failed" and "escapes" in result.detail
    assert not list(tmp_path.rglob("escaped.txt"))


def test_remote_menu_retries_then_fails(
    tmp_path: Path, skill_server: tuple[str, dict[str, bytes], list[str]]
) -> None:
    base, _, hits = skill_server
    result = install_skill(RemoteSkills(base), "x", tmp_path)
    assert result.kind == "menu-fetch-failed"
    assert hits == ["/skills/skill-menu.json"]  # a 404 is final, not retried


def test_chained_sources_prefer_the_first(tmp_path: Path) -> None:
    _skill_dir(tmp_path / "local", "transactional-email", GOOD + "local version\n")
    chain = ChainedSkills([DirectorySkills(tmp_path / "local"), BundledSkills()])
    project = tmp_path / "p"
    project.mkdir()
    assert install_skill(chain, "transactional-email", project).ok
    assert "local version" in (project / ".claude/skills/transactional-email/SKILL.md").read_text()
    assert install_skill(chain, "revenue-analytics", project).ok
