"""The machine contract: the schemas cover every event and the outcome, and hold them."""

from __future__ import annotations

import json
import typing

import pytest
from jsonschema import ValidationError
from typer.testing import CliRunner

from wizard.cli import app
from wizard.events import (
    SCHEMA_VERSION,
    AnalyticsEvent,
    Event,
    LogLine,
    QueueTaskChanged,
    RunStarted,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
    TodosChanged,
    TodoView,
    ToolCalled,
    event_record,
)
from wizard.outcome import (
    AgentErrorType,
    CheckResult,
    Outcome,
    Outro,
    Usage,
    Verification,
)
from wizard.schemas import events_schema
from wizard.testing.contract import assert_valid_line, assert_valid_outcome

ONE_OF_EACH: list[Event] = [
    SpinnerStarted("Working..."),
    SpinnerMessage("Editing"),
    SpinnerStopped("Done"),
    TodosChanged((TodoView("task-1", "Add the client", "completed"),)),
    QueueTaskChanged("a", "tag", "Tag customers", "running", 1, 1.0),
    LogLine("a line", "warning"),
    ToolCalled("write", {"path": "a.txt"}),
    RunStarted("p", "/app", "pi", "linear", "m", "http://127.0.0.1:9", True),
    AnalyticsEvent("agent completed", {"num_turns": 3}),
]


def test_every_kind_of_event_has_its_schema() -> None:
    kinds = {kind.__name__ for kind in typing.get_args(Event)}
    assert {type(event).__name__ for event in ONE_OF_EACH} == kinds
    titles = {member["title"] for member in events_schema()["oneOf"]}
    assert kinds <= titles


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda event: type(event).__name__)
def test_each_event_line_keeps_the_schema(event: Event) -> None:
    record = json.loads(json.dumps(event_record(event, "r1"), default=str))
    assert record["schema_version"] == SCHEMA_VERSION
    assert_valid_line(record)


def test_a_full_outcome_keeps_the_schema_and_a_broken_one_does_not() -> None:
    check = CheckResult("changed Python files parse", "python3 -c ...", "failed", "passed", 0.5)
    outcome = Outcome(
        "unverified", "transactional-email", "pi", "linear", None, "check failed",
        outro=Outro("error", "A check failed", "body"), run_id="r1", project="/app",
        changed_files=("a.py",), verification=Verification("failed", (check,)),
        edits={"added": ["a.py"], "removed_from_existing": {}}, usage=Usage(model_requests=2),
        tasks=({"id": "a", "status": "done"},),
    )  # fmt: skip
    document = json.loads(outcome.to_json())
    assert document["schema_version"] == SCHEMA_VERSION and document["exit_code"] == 4
    assert_valid_outcome(document)
    assert_valid_line({"event": "outcome", "ts": "2026-11-30T00:00:00Z", **document})
    for broken in ({**document, "status": "fine"}, {**document, "exit_code": "4"},
                   {k: v for k, v in document.items() if k != "schema_version"}):  # fmt: skip
        with pytest.raises(ValidationError):
            assert_valid_outcome(broken)
    aborted = Outcome("aborted", "p", error_type=AgentErrorType.ABORT, source="skill")
    assert_valid_outcome(json.loads(aborted.to_json()))


def test_wizard_schema_prints_each_schema() -> None:
    for what, title in (("outcome", "wizard outcome"), ("events", "wizard --ci event")):
        result = CliRunner().invoke(app, ["schema", what])
        assert result.exit_code == 0 and json.loads(result.output)["title"] == title
    assert CliRunner().invoke(app, ["schema", "nope"]).exit_code == 2


def test_the_fleet_schema_names_exactly_what_the_burndowns_json_holds() -> None:
    """`wizard schema fleet` and `fleet status --json` agree, field for field: the ids a
    fleet that continued as new names beside its rows (`Burndown.earlier`) are the
    workflow's own, read back into rows before any JSON is written, and in neither."""
    pytest.importorskip("temporalio")
    from jsonschema import validate

    from wizard.fleet.model import Burndown, Row
    from wizard.schemas import fleet_schema

    burndown = Burndown("f", "revenue-analytics", (Row("r", "/r", "set up"),), generation=2)
    schema = fleet_schema()
    assert set(schema["properties"]) == set(burndown.to_dict())
    validate(json.loads(json.dumps(burndown.to_dict())), schema)
