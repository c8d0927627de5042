"""What a run did to the files, counted from the journal: exact on CRLF and non-UTF-8 text."""

from __future__ import annotations

from pathlib import Path

from wizard.journal import Journal


def test_edits_count_files_and_lines_and_what_existing_files_lost(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    (project / "settings.ini").write_bytes(b"a=1\r\nb=2\r\nc=3\r\nd=4\r\n")  # CRLF
    (project / "latin1.txt").write_bytes("caf\xe9\nna\xefve\n".encode("latin-1"))  # not UTF-8
    (project / "old.py").write_text("x = 1\n")
    (project / "kept.py").write_text("y = 2\n")
    journal = Journal(project, root=tmp_path / "state")
    record = journal.begin("r1", "transactional-email")
    (project / "settings.ini").write_bytes(b"a=1\r\n")  # three lines of configuration gone
    (project / "latin1.txt").write_bytes("caf\xe9\nbien\nplus\n".encode("latin-1"))
    (project / "old.py").unlink()
    (project / "new.py").write_text("z = 3\nw = 4\n")
    skill = project / ".claude" / "skills" / "transactional-email"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# skill\n")
    finished = journal.finish(record, "succeeded")
    edits = journal.edits(finished)
    assert edits is not None
    assert (edits.added, edits.changed, edits.removed) == (
        ("new.py",), ("latin1.txt", "settings.ini"), ("old.py",),
    )  # fmt: skip
    assert edits.skill_files == (".claude/skills/transactional-email/SKILL.md",)
    # new.py +2; latin1.txt +2 -1; settings.ini -3; old.py -1 (the skill's lines apart)
    assert (edits.lines_added, edits.lines_removed) == (4, 5)
    assert dict(edits.removed_from_existing) == {"settings.ini": 3, "latin1.txt": 1, "old.py": 1}
    assert next(iter(edits.removed_from_existing)) == "settings.ini"  # the most lost, first
