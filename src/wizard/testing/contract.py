"""Checking what wizard writes for machines against its own schemas (`wizard.schemas`), so
a test that reads an outcome or a `--ci` line also proves it keeps the contract."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from wizard.schemas import events_schema, outcome_schema


@cache
def _validators() -> tuple[Any, Any]:
    from jsonschema import Draft202012Validator  # a test dependency

    return Draft202012Validator(outcome_schema()), Draft202012Validator(events_schema())


def assert_valid_outcome(outcome: Mapping[str, Any]) -> None:
    """Fail unless `outcome` (an `--outcome-json` document) keeps the outcome schema."""
    _validators()[0].validate(dict(outcome))


def assert_valid_line(line: Mapping[str, Any]) -> None:
    """Fail unless `line` (one `--ci` line) keeps the events schema."""
    _validators()[1].validate(dict(line))
