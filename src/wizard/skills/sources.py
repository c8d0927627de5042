"""Where skills come from: bundled in the package, a local directory, or a remote menu.

Every source can list its skills and copy one into a folder. A remote source serves
`<base>/skill-menu.json` (`{"categories": {"name": [{"id", "name", "downloadUrl"}]}}`) and a
zip archive per skill; both are fetched with retries, and archives are unpacked with a guard
against entries that would land outside the skill's folder.
"""

from __future__ import annotations

import io
import json
import shutil
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol
from urllib.parse import urljoin

from wizard.skills.skill import SKILL_FILE, read_skill


class SkillFetchError(Exception):
    """A source could not be read or a skill could not be downloaded."""


@dataclass(frozen=True)
class SkillEntry:
    """One skill a source offers."""

    id: str
    name: str
    category: str = "skills"


class SkillSource(Protocol):
    """Lists skills and copies one into a folder."""

    def menu(self) -> list[SkillEntry]:
        """Every skill this source offers; `SkillFetchError` if it cannot be read."""
        ...

    def fetch(self, skill_id: str, dest: Path) -> None:
        """Copy the skill's files into `dest` (which exists and is empty)."""

    def check(self, skill_id: str) -> None:
        """Validate the offered skill where it lies, if it can be read without fetching it."""


class DirectorySkills:
    """Skills as folders under one directory (`--skills-dir`, `WIZARD_SKILLS_DIR`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def menu(self) -> list[SkillEntry]:
        """Every sub-folder holding a SKILL.md."""
        if not self.root.is_dir():
            raise SkillFetchError(f"skills directory {self.root} does not exist")
        return [
            SkillEntry(id=child.name, name=child.name)
            for child in sorted(self.root.iterdir())
            if (child / SKILL_FILE).is_file()
        ]

    def fetch(self, skill_id: str, dest: Path) -> None:
        """Copy the folder."""
        shutil.copytree(self.root / skill_id, dest, dirs_exist_ok=True)

    def check(self, skill_id: str) -> None:
        """Validate the skill's own `SKILL.md`: a `ConfigError` names that file."""
        read_skill(self.root / skill_id)


class BundledSkills(DirectorySkills):
    """The skills shipped inside the package, one per program."""

    def __init__(self) -> None:
        super().__init__(Path(str(resources.files("wizard.skills") / "bundled")))


def _get(url: str, attempts: int = 3, timeout: float = 20.0) -> bytes:
    last: Exception | None = None
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as exc:
            last = exc
            if exc.code < 500 and exc.code != 429:
                break
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            last = exc
        if attempt + 1 < attempts:
            time.sleep(0.5 * 2**attempt)
    raise SkillFetchError(f"GET {url} failed: {last}")


def extract_zip(data: bytes, dest: Path) -> None:
    """Unpack a zip archive into `dest`, refusing entries that escape it."""
    root = dest.resolve()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for member in archive.infolist():
            target = (root / member.filename).resolve()
            if not target.is_relative_to(root):
                raise SkillFetchError(f"archive entry {member.filename!r} escapes the skill folder")
        archive.extractall(root)


class RemoteSkills:
    """Skills from a menu served over HTTP (`WIZARD_SKILLS_URL`)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self._downloads: dict[str, str] = {}

    def menu(self) -> list[SkillEntry]:
        """Read `skill-menu.json`."""
        raw = _get(urljoin(self.base_url, "skill-menu.json"))
        try:
            categories = json.loads(raw)["categories"]
            entries = []
            for category, items in categories.items():
                for item in items:
                    self._downloads[item["id"]] = urljoin(self.base_url, item["downloadUrl"])
                    entries.append(SkillEntry(item["id"], item.get("name", item["id"]), category))
            return entries
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SkillFetchError(f"skill-menu.json is malformed: {exc}") from exc

    def fetch(self, skill_id: str, dest: Path) -> None:
        """Download and unpack the skill's archive."""
        if skill_id not in self._downloads:
            self.menu()
        try:
            url = self._downloads[skill_id]
        except KeyError:
            raise SkillFetchError(f"the menu has no skill {skill_id}") from None
        try:
            extract_zip(_get(url), dest)
        except zipfile.BadZipFile as exc:
            raise SkillFetchError(f"{url} is not a zip archive: {exc}") from exc

    def check(self, skill_id: str) -> None:
        """A remote skill is validated once downloaded, by the install step."""


class ChainedSkills:
    """Several sources, asked in order; the first that offers a skill provides it."""

    def __init__(self, sources: Sequence[SkillSource]) -> None:
        self.sources = list(sources)

    def menu(self) -> list[SkillEntry]:
        """Every skill, first source first; a source that fails is skipped unless all do."""
        seen: dict[str, SkillEntry] = {}
        errors = []
        for source in self.sources:
            try:
                for entry in source.menu():
                    seen.setdefault(entry.id, entry)
            except SkillFetchError as exc:
                errors.append(str(exc))
        if errors and not seen:
            raise SkillFetchError("; ".join(errors))
        return list(seen.values())

    def fetch(self, skill_id: str, dest: Path) -> None:
        """Fetch from the first source whose menu has the skill."""
        for source in self.sources:
            try:
                if any(entry.id == skill_id for entry in source.menu()):
                    source.fetch(skill_id, dest)
                    return
            except SkillFetchError:
                continue
        raise SkillFetchError(f"no source offers the skill {skill_id}")

    def check(self, skill_id: str) -> None:
        """Validate the skill in the first source that offers it."""
        for source in self.sources:
            try:
                offered = any(entry.id == skill_id for entry in source.menu())
            except SkillFetchError:
                continue
            if offered:
                source.check(skill_id)
                return
