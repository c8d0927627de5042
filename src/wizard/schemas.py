"""The machine contract: JSON Schemas of the outcome, of the `--ci` events and of a fleet's
burndown, generated from the dataclasses that write them (`wizard schema
outcome|events|fleet` prints them).

Every `--ci` line and every outcome carries `schema_version` (`SCHEMA_VERSION`, major.minor).
The promise: within a major version, fields are only ever added, never removed, renamed or
changed in type, so a reader written for 1.0 reads every 1.x; a breaking change bumps the
major version.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import TypeAdapter

from wizard.events import SCHEMA_VERSION, Event
from wizard.fleet.model import FLEET_SCHEMA_VERSION, Burndown
from wizard.outcome import Outcome

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_VERSION = {"type": "string", "const": SCHEMA_VERSION}


def outcome_schema() -> dict[str, Any]:
    """The outcome (`--outcome-json`, and the last `--ci` line without its `event` and `ts`)."""
    schema = TypeAdapter(Outcome).json_schema(mode="serialization")
    schema["properties"] |= {"exit_code": {"type": "integer"}, "schema_version": _VERSION}
    schema["required"] = [*schema.get("required", []), "exit_code", "schema_version"]
    return {**schema, "$schema": DRAFT, "title": "wizard outcome"}


def events_schema() -> dict[str, Any]:
    """One `--ci` line: an event of the run, or the outcome as the last line."""
    defs: dict[str, Any] = {}
    members = []
    for kind in typing.get_args(Event):
        schema = TypeAdapter(kind).json_schema(mode="serialization")
        defs |= schema.pop("$defs", {})
        properties = {k: v for k, v in schema["properties"].items() if k != "kind"}
        name = kind.__dataclass_fields__["kind"].default
        properties |= {
            "event": {"const": name},
            "ts": {"type": "string"},
            "run_id": {"type": "string"},
            "schema_version": _VERSION,
        }
        required = [k for k in schema.get("required", []) if k != "kind"]
        required += ["event", "ts", "run_id", "schema_version"]
        member = {"type": "object", "title": kind.__name__, "properties": properties}
        members.append({**member, "required": required})
    outcome = outcome_schema()
    defs |= outcome.pop("$defs", {})
    outcome.pop("$schema")
    outcome["properties"] |= {"event": {"const": "outcome"}, "ts": {"type": "string"}}
    outcome["required"] = [*outcome["required"], "event", "ts"]
    members.append(outcome)
    return {"$schema": DRAFT, "title": "wizard --ci event", "oneOf": members, "$defs": defs}


def fleet_schema() -> dict[str, Any]:
    """A fleet's burndown (`wizard fleet status --json`, `wizard fleet run --json`)."""
    schema = TypeAdapter(Burndown).json_schema(mode="serialization")
    del schema["properties"]["earlier"]  # the workflow's own: the JSON has every row
    schema["properties"] |= {
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "succeeded": {"type": "boolean"},
        "temporal_ui": {"type": ["string", "null"]},
        "schema_version": {"type": "string", "const": FLEET_SCHEMA_VERSION},
    }
    schema["required"] = [*schema.get("required", []), "counts", "succeeded", "schema_version"]
    return {**schema, "$schema": DRAFT, "title": "wizard fleet burndown"}
