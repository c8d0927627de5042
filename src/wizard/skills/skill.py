"""A skill: a folder with a `SKILL.md` whose YAML front matter is validated.

---
name: transactional-email
description: Send transactional email through the email API.
metadata: {author: wizard, version: "1.0"}
---
(the steps the agent follows, with its stop conditions)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wizard.errors import ConfigError

SKILL_FILE = "SKILL.md"
SKILL_ID = r"^[a-z0-9][a-z0-9._-]*$"


class SkillMetadata(BaseModel):
    """Who wrote a skill, and its version."""

    model_config = ConfigDict(extra="allow")

    author: str | None = None
    version: str | None = None


class SkillFrontMatter(BaseModel):
    """The validated front matter of a `SKILL.md`."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, Field(pattern=SKILL_ID)]
    description: Annotated[str, Field(min_length=1)]
    compatibility: str | None = None
    metadata: SkillMetadata | None = None


def parse_skill(text: str, origin: str) -> SkillFrontMatter:
    """Validate a `SKILL.md`'s front matter; a `ConfigError` naming the fix otherwise."""
    hint = (
        f"Fix {origin}: it must start with a '---' line, YAML with at least `name` (lower-case, "
        "digits, '-', '.', '_') and `description`, and a closing '---' line."
    )
    if not text.startswith("---"):
        raise ConfigError(f"Malformed skill {origin}: no front matter.", hint)
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        raise ConfigError(f"Malformed skill {origin}: the front matter is never closed.", hint)
    try:
        data = yaml.safe_load(parts[0].removeprefix("---"))
        return SkillFrontMatter.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"Malformed skill {origin}: {exc}", hint) from exc


def read_skill(folder: Path) -> SkillFrontMatter:
    """Validate the skill in `folder`."""
    path = folder / SKILL_FILE
    if not path.is_file():
        raise ConfigError(f"Malformed skill {folder}: no {SKILL_FILE}.", f"Add {path}.")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"Malformed skill {path}: it is not UTF-8 text (byte {exc.start}: {exc.reason}).",
            f"Save {path} as UTF-8, then run again.",
        ) from exc
    return parse_skill(text, str(path))
