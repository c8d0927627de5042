"""The user's config file: gateway and switchboard settings, below the environment and flags.

`$WIZARD_CONFIG`, else `$XDG_CONFIG_HOME/wizard/config.toml`, else
`~/.config/wizard/config.toml`::

    [gateway]
    url = "https://gateway.example"
    key = "..."
    api = "anthropic-messages"        # or "openai-completions"
    refusal_marker = "[posthog:abort]"

    [run]
    harness = "pi"
    sequence = "linear"
    model = "claude-sonnet-4-6"
    max_turns = 60                    # budgets: model turns, USD, wall time
    max_cost = 2.5
    max_time = "20m"
    preview = true                    # every run a preview, applied with `wizard apply`

    [prices]                          # USD per million tokens: in, out, cache read, write
    "my-model" = [1.0, 5.0, 0.1, 1.25]

Each setting stands for the environment variable named beside it below; a variable that is
set wins over the file, and a flag wins over both.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from wizard.errors import ConfigError, UsageError
from wizard.layout import config_path

Number = TypeVar("Number", int, float)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GatewaySection(_Section):
    """`[gateway]`: where the model is."""

    url: str | None = None
    key: str | None = None
    api: str | None = None
    refusal_marker: str | None = None


class RunSection(_Section):
    """`[run]`: the switchboard's defaults."""

    harness: str | None = None
    sequence: str | None = None
    model: str | None = None
    max_turns: int | None = None
    max_cost: float | None = None
    max_time: str | None = None
    preview: bool | None = None


class ConfigFile(_Section):
    """The whole file."""

    gateway: GatewaySection = GatewaySection()
    run: RunSection = RunSection()
    # Model id (prefix) → [input, output, cache read, cache write], USD per million tokens.
    prices: dict[str, tuple[float, float, float, float]] = {}


# (section, key) → the environment variable the setting stands for.
VARIABLES = {
    ("gateway", "url"): "WIZARD_GATEWAY_URL",
    ("gateway", "key"): "WIZARD_GATEWAY_KEY",
    ("gateway", "api"): "WIZARD_GATEWAY_API",
    ("gateway", "refusal_marker"): "WIZARD_GATEWAY_REFUSAL_MARKER",
    ("run", "harness"): "WIZARD_HARNESS",
    ("run", "sequence"): "WIZARD_SEQUENCE",
    ("run", "model"): "WIZARD_MODEL",
    ("run", "max_turns"): "WIZARD_MAX_TURNS",
    ("run", "max_cost"): "WIZARD_MAX_COST",
    ("run", "max_time"): "WIZARD_MAX_TIME",
    ("run", "preview"): "WIZARD_PREVIEW",
}


def read_config(path: Path) -> ConfigFile:
    """The validated config file (empty when there is none); a `ConfigError` naming it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ConfigFile()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read the config file {path}: {exc}", _HINT) from exc
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"The config file {path} is not valid: {in_our_words(exc)}.",
                          _HINT) from exc  # fmt: skip


# What a value's problem is, in wizard's words (pydantic's error types).
_WORDS = {
    "extra_forbidden": "is not a setting wizard knows",
    "missing": "is missing",
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "is not a whole number"),
    **dict.fromkeys(("float_parsing", "float_type"), "is not a number"),
    **dict.fromkeys(("bool_parsing", "bool_type"), "is not true or false"),
    "string_type": "is not text",
    **dict.fromkeys(("dict_type", "model_type"), "is not a table"),
}


def in_our_words(exc: ValidationError) -> str:
    """What was wrong with each value pydantic refused, said as wizard says it: where, the
    value, and why (never pydantic's own text, error codes or links)."""
    said = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        value = error.get("input")
        shown = (
            repr(value)
            if error["type"] not in ("missing", "extra_forbidden")
            and isinstance(value, str | int | float | bool)
            else ""
        )
        why = _WORDS.get(error["type"], error["msg"][:1].lower() + error["msg"][1:])
        said.append(" ".join(part for part in (where, shown, why) if part))
    return "; ".join(said)


_HINT = (
    "It takes [gateway] url, key, api, refusal_marker, [run] harness, sequence, model, "
    "max_turns, max_cost, max_time, preview and [prices] "
    "(see the README's Configuration); fix it or move it away."
)


def with_config(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment with the config file's settings beneath it (set variables win)."""
    config = read_config(config_path(environ))
    merged: dict[str, str] = {}
    for (section, key), variable in VARIABLES.items():
        value = getattr(getattr(config, section), key)
        if value is not None:
            merged[variable] = str(value)
    if config.prices:
        merged["WIZARD_PRICES"] = json.dumps(config.prices)
    return {**merged, **environ}


def number_setting(
    environ: Mapping[str, str], name: str, default: Number, kind: Callable[[str], Number]
) -> Number:
    """A number ≥ 0 from the variable `name` (`default` when unset); a `UsageError` if not one."""
    value = environ.get(name)
    if not value:
        return default
    try:
        number = kind(value)
    except ValueError:
        number = None
    if number is None or number < 0:
        raise UsageError(f"{name}={value!r} is not a number ≥ 0.", f"Set {name} to a number.")
    return number


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def switch_setting(environ: Mapping[str, str], name: str, *, default: bool) -> bool:
    """An on/off variable (`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`; `default` when
    unset); a `UsageError` naming it for anything else."""
    value = environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in _ON or value in _OFF:
        return value in _ON
    choices = f"{', '.join(_ON)} (on), {', '.join(_OFF)} (off)"
    raise UsageError(f"{name}={environ[name]!r} is neither on nor off.",
                     f"Set {name} to one of: {choices}.")  # fmt: skip
