"""`PiHarness.run` at its public entry, with the pi engine replaced by the strict fake.

One test (or a few) per item of checklist §10.2 (items 11–30).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from wizard.events import EventRecorder, SpinnerMessage, SpinnerStarted
from wizard.outcome import AgentErrorType, AgentResult
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.state import CONTINUE_INSTRUCTION, MAX_CONTINUE_NUDGES
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.signals import REMARK_INSTRUCTION
from wizard.testing.fake_session import FakeSession, Turn
from wizard.testing.script import call, reply, text

PROMPT = "Set up the program. Read the skill."


WORK = reply(text("[STATUS] Editing"), call("write", path="a.txt", content="x"))
DONE = reply(text("All done."))
REMARK = [reply(text("[WIZARD-REMARK] more docs please"))]


class Harnessed:
    """A harness run against a fake session, with everything a test asserts on."""

    def __init__(self, tmp_path: Path, turns: list[Turn], **fake: Any) -> None:
        self.fake = FakeSession(turns, **fake)
        self.recorder = EventRecorder()
        self.inputs = RunInputs(
            project_dir=tmp_path,
            prompt=PROMPT,
            model="scripted-1",
            gateway=GatewaySettings(url="http://127.0.0.1:9"),
            success_message="Program set up",
            error_message="Program failed",
            sink=self.recorder,
        )

    async def run(self) -> AgentResult:
        result = await PiHarness(session_factory=self.fake).run(self.inputs)
        self.fake.assert_complete()
        assert self.fake.closed
        return result

    def names(self) -> list[str]:
        return [e.name for e in self.recorder.analytics()]


async def test_11_marker_in_the_second_text_block_ends_the_run(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path, [[reply(text("Looking."), text("[ABORT] Could not find a Stripe integration"))]]
    )
    result = await h.run()
    assert result == AgentResult(
        AgentErrorType.ABORT, "Could not find a Stripe integration", "skill"
    )
    assert h.fake.aborts == 1


async def test_11_marker_in_the_first_text_block(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path, [[reply(text("[ABORT] Could not find a Stripe integration\n"), text("more"))]]
    )
    result = await h.run()
    assert result.error is AgentErrorType.ABORT
    assert result.message == "Could not find a Stripe integration"
    assert h.fake.prompts == [PROMPT]


@pytest.mark.parametrize(
    "turn",
    [
        [reply({"thinking": "[ABORT] just thinking"}, WORK["blocks"][1]), DONE],
        [reply(call("write", path="x.md", content="[ABORT] in tool arguments")), DONE],
        [reply(call("TaskCreate", content="[ABORT] echoed by the tool result")), DONE],
    ],
    ids=["thinking", "tool-arguments", "tool-result"],
)
async def test_12_markers_outside_assistant_text_are_never_read(tmp_path: Path, turn: Turn) -> None:
    turns = [
        turn,
        *(
            [[reply(call("TaskUpdate", taskId="task-1", status="completed")), DONE]]
            if "TaskCreate" in str(turn)
            else []
        ),
        REMARK,
    ]
    h = Harnessed(tmp_path, turns)
    result = await h.run()
    assert result.ok, result
    assert h.fake.aborts == 0


async def test_12_a_prompt_holding_a_marker_does_not_stop_the_run(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[WORK, DONE], REMARK])
    h.inputs = RunInputs(
        **{**h.inputs.__dict__, "prompt": "If stuck, write [ABORT] requirements-incomplete"}
    )
    assert (await h.run()).ok


@pytest.mark.parametrize("stream_text", [True, False], ids=["streamed", "message-end-only"])
async def test_13_blocks_are_not_joined(tmp_path: Path, stream_text: bool) -> None:
    h = Harnessed(
        tmp_path, [[reply(text("x [ABORT] reason"), text("more"))]], stream_text=stream_text
    )
    assert (await h.run()).message == "reason"


async def test_11_message_end_alone_ends_the_run_on_its_second_block(tmp_path: Path) -> None:
    turns: list[Turn] = [[reply(text("Looking."), text("[ABORT] found at message_end"))]]
    h = Harnessed(tmp_path, turns, stream_text=False)
    result = await h.run()
    assert (result.error, result.message) == (AgentErrorType.ABORT, "found at message_end")
    assert not any(e["type"] == "text_delta" for e in h.fake.events)


async def test_14_the_first_marker_wins_over_later_ones(tmp_path: Path) -> None:
    turn = [reply(text("[ABORT] first reason\n[posthog:abort] later"), text("[ABORT] second"))]
    h = Harnessed(tmp_path, [turn])
    result = await h.run()
    assert (result.message, result.abort_source) == ("first reason", "skill")


async def test_15_within_one_block_the_earlier_position_wins(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("[posthog:abort] policy\n[ABORT] skill"))]])
    result = await h.run()
    assert (result.message, result.abort_source) == ("policy", "gateway_policy")


async def test_16_latching_aborts_the_turn_in_flight(tmp_path: Path) -> None:
    tail = "tail " * 200
    h = Harnessed(
        tmp_path,
        [
            [
                reply(
                    text("Looking... [ABORT] stop here\n" + tail), call("bash", command="rm -rf x")
                ),
                DONE,
            ]
        ],
    )
    result = await h.run()
    assert result.message == "stop here"
    assert h.fake.aborts == 1
    streamed = "".join(e["delta"] for e in h.fake.events if e["type"] == "text_delta")
    assert len(streamed) < 60, "the turn kept streaming after the marker's line"
    assert not any(e["type"] == "tool_start" for e in h.fake.events)


async def test_16_a_marker_split_across_deltas_is_found(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("ok [AB" + "ORT] split reason\nafter"))]], chunk_chars=1)
    assert (await h.run()).message == "split reason"


async def test_17_no_nudge_after_a_marker_even_with_open_tasks(tmp_path: Path) -> None:
    turn = [reply(call("TaskCreate", content="wire stripe")), reply(text("[ABORT] no stripe"))]
    h = Harnessed(tmp_path, [turn])
    result = await h.run()
    assert result.error is AgentErrorType.ABORT
    assert h.fake.prompts == [PROMPT]


async def test_18_a_marker_in_the_third_nudge_stops_the_nudges(tmp_path: Path) -> None:
    open_task = [reply(call("TaskCreate", content="t")), reply(text("pausing"))]
    idle = [reply(text("still working"))]
    h = Harnessed(
        tmp_path, [open_task, idle, idle, [reply(text("[ABORT] gave up on nudge three"))]]
    )
    result = await h.run()
    assert result.message == "gave up on nudge three"
    assert h.fake.prompts == [
        PROMPT,
        CONTINUE_INSTRUCTION,
        CONTINUE_INSTRUCTION,
        CONTINUE_INSTRUCTION,
    ]


async def test_19_no_remark_after_a_latched_abort(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("[WIZARD-REMARK] early remark\n[ABORT] nope"))]])
    await h.run()
    assert REMARK_INSTRUCTION not in h.fake.prompts
    assert "wizard remark" not in h.names()


@pytest.mark.parametrize("answer", ["[ABORT] x", "[posthog:abort] refused"])
async def test_20_the_remark_reply_never_ends_a_run(tmp_path: Path, answer: str) -> None:
    h = Harnessed(tmp_path, [[WORK, DONE], [reply(text(answer))]])
    result = await h.run()
    assert result.ok
    assert h.fake.prompts[-1] == REMARK_INSTRUCTION
    assert h.fake.aborts == 0
    assert "agent completed" in h.names()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[ERROR-MCP-MISSING] in the remark", None),
        ("[ERROR-RESOURCE-MISSING] in the remark", None),
        ("[DASHBOARD_URL] https://remark/d/9", None),
    ],
)
async def test_20_the_remark_reply_never_reclassifies_a_run(
    tmp_path: Path, answer: str, expected: AgentErrorType | None
) -> None:
    h = Harnessed(tmp_path, [[WORK, DONE], [reply(text(f"[WIZARD-REMARK] ok\n{answer}"))]])
    result = await h.run()
    assert result == AgentResult(expected)
    assert h.names() == ["wizard remark", "agent completed"]


async def test_20_a_tool_call_in_the_remark_reply_is_no_progress(tmp_path: Path) -> None:
    remark_with_tool = [reply(call("read", path="README.md")), reply(text("[WIZARD-REMARK] -"))]
    h = Harnessed(tmp_path, [[reply(text("I looked and did nothing."))], remark_with_tool])
    result = await h.run()
    assert result.error is AgentErrorType.NO_PROGRESS
    assert "agent no progress" in h.names()


async def test_21_gateway_refusal_returns_its_source(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("[posthog:abort] This request violates policy."))]])
    result = await h.run()
    assert result == AgentResult(
        AgentErrorType.ABORT, "This request violates policy.", "gateway_policy"
    )


async def test_21_bare_marker_is_not_an_abort(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[WORK, reply(text("[ABORT]"))], REMARK])
    assert (await h.run()).ok


async def test_22_abort_outranks_no_progress(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("[ABORT] nothing to do"))]])
    result = await h.run()
    assert result.error is AgentErrorType.ABORT
    assert "agent no progress" not in h.names() and "agent incomplete tasks" not in h.names()


async def test_22_abort_outranks_incomplete_tasks(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(call("TaskCreate", content="t")), reply(text("[ABORT] stop"))]])
    assert (await h.run()).error is AgentErrorType.ABORT
    assert "agent incomplete tasks" not in h.names()


async def test_23_a_critical_fence_violation_outranks_a_marker(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path,
        [
            [
                reply(
                    call("write", path="../outside.txt", content="x"),
                    call("bash", command="ls"),
                    text("[ABORT] x"),
                )
            ]
        ],
    )
    harness_inputs = h.inputs
    from wizard.runner.harness import state as run_module

    class TinyCap(run_module.Fence):
        def __init__(self, project_dir: Path, **kwargs: Any) -> None:
            super().__init__(project_dir, **{**kwargs, "max_calls": 1})

    original = run_module.Fence
    run_module.Fence = TinyCap  # type: ignore[misc]
    try:
        result = await PiHarness(session_factory=h.fake).run(harness_inputs)
    finally:
        run_module.Fence = original  # type: ignore[misc]
    assert result.error is AgentErrorType.SECURITY_VIOLATION
    assert "exceeded 1 tool calls" in (result.message or "")
    assert h.recorder.spinner_stops() == ["Security violation detected"]


async def test_24_agent_aborted_tags_only_gateway_refusals(tmp_path: Path) -> None:
    skill = Harnessed(tmp_path, [[reply(text("[ABORT] a"))]])
    await skill.run()
    gateway = Harnessed(tmp_path, [[reply(text("[posthog:abort] b"))]])
    await gateway.run()
    (skill_event,) = skill.recorder.analytics("agent aborted")
    (gateway_event,) = gateway.recorder.analytics("agent aborted")
    assert "source" not in skill_event.properties
    assert gateway_event.properties["source"] == "gateway_policy"
    assert set(skill_event.properties) == {"duration_ms", "duration_seconds", "model"}


async def test_25_no_completed_event_on_abort(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[WORK, reply(text("[SKILL-INSTALL-FAILED] menu down\n[ABORT] stop"))]])
    await h.run()
    assert h.names() == ["agent aborted"]


async def test_26_spinner_stops_with_wizard_aborted(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("[ABORT] stop"))]])
    await h.run()
    assert h.recorder.spinner_stops() == ["Wizard aborted"]
    assert isinstance(h.recorder.events[0], SpinnerStarted)


async def test_27_status_and_urls_of_the_aborting_turn_still_apply(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path,
        [[reply(text("[STATUS] Checking Stripe\n[DASHBOARD_URL] https://d/1\n[ABORT] no stripe"))]],
    )
    result = await h.run()
    assert SpinnerMessage("Checking Stripe") in h.recorder.events
    assert result.dashboard_url == "https://d/1"


async def test_28_text_tool_call_text_marker(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path, [[reply(text("Let me check."), call("bash", command="ls"), text("[ABORT] x"))]]
    )
    result = await h.run()
    assert (result.error, result.message) == (AgentErrorType.ABORT, "x")


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        ("429 rate limit exceeded", AgentErrorType.RATE_LIMIT),
        ("500 internal error", AgentErrorType.API_ERROR),
    ],
)
async def test_29_model_errors_before_a_marker(
    tmp_path: Path, failure: str, expected: AgentErrorType
) -> None:
    h = Harnessed(tmp_path, [[reply(text("partial"), error=failure)]])
    result = await h.run()
    assert (result.error, result.message) == (expected, failure)
    assert h.recorder.spinner_stops() == ["Program failed"]


async def test_a_connection_error_names_the_gateway_url_and_the_fix(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(error="Connection error.")]])
    result = await h.run()
    assert result.error is AgentErrorType.API_ERROR
    message = result.message or ""
    assert "Could not reach the model gateway at http://127.0.0.1:9" in message
    assert "WIZARD_GATEWAY_URL" in message and "Connection error." in message


async def test_29_engine_failure_before_a_marker_is_never_an_abort(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [{"raise": "pi exited unexpectedly"}])
    result = await h.run()
    assert (result.error, result.message) == (
        AgentErrorType.ENGINE_FAILURE,
        "pi exited unexpectedly",
    )


async def test_29_a_model_error_after_a_latch_is_still_the_abort(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("[ABORT] real reason"), error="terminated")]])
    result = await h.run()
    assert (result.error, result.message) == (AgentErrorType.ABORT, "real reason")


async def test_29_an_engine_exception_after_a_latch_is_still_the_abort(tmp_path: Path) -> None:
    turn = [{**reply(text("[ABORT] real reason\n")), "raise": "pi exited unexpectedly"}]
    h = Harnessed(tmp_path, [turn])
    result = await h.run()
    assert (result.error, result.message) == (AgentErrorType.ABORT, "real reason")
    assert h.recorder.spinner_stops() == ["Wizard aborted"]


async def test_a_custom_refusal_marker_through_the_harness(tmp_path: Path) -> None:
    custom = Harnessed(tmp_path, [[reply(text("[acme:refuse] not allowed here"))]])
    custom.inputs = replace(
        custom.inputs,
        gateway=GatewaySettings(url="http://127.0.0.1:9", refusal_marker="[acme:refuse]"),
    )
    result = await custom.run()
    assert (result.error, result.message, result.abort_source) == (
        AgentErrorType.ABORT,
        "not allowed here",
        "gateway_policy",
    )
    default = Harnessed(tmp_path, [[WORK, reply(text("[posthog:abort] not ours"))], REMARK])
    default.inputs = replace(
        default.inputs,
        gateway=GatewaySettings(url="http://127.0.0.1:9", refusal_marker="[acme:refuse]"),
    )
    assert (await default.run()).ok


async def test_30_success_without_markers(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[WORK, reply(text("[DASHBOARD_URL] https://app/d/7"))], REMARK])
    result = await h.run()
    assert result == AgentResult(dashboard_url="https://app/d/7")
    assert h.fake.prompts == [PROMPT, REMARK_INSTRUCTION]
    assert h.names() == ["wizard remark", "agent completed"]
    (completed,) = h.recorder.analytics("agent completed")
    assert completed.properties["num_turns"] == 3
    assert completed.properties["input_tokens"] == 10
    assert h.recorder.spinner_stops() == ["Program set up"]


async def test_30_open_tasks_get_nudges_then_incomplete(tmp_path: Path) -> None:
    idle = [reply(text("thinking about it"))]
    turns: list[Turn] = [[reply(call("TaskCreate", content="t")), reply(text("pause"))]]
    turns += [idle] * 20 + [REMARK]
    h = Harnessed(tmp_path, turns)
    result = await h.run()
    assert result.error is AgentErrorType.INCOMPLETE_TASKS
    assert MAX_CONTINUE_NUDGES == 20, "the spec's cap is 20 nudges"
    assert h.fake.prompts.count(CONTINUE_INSTRUCTION) == 20
    assert "agent incomplete tasks" in h.names()


async def test_30_nudges_stop_once_tasks_are_completed(tmp_path: Path) -> None:
    turns: list[Turn] = [
        [reply(call("TaskCreate", content="t")), reply(text("pause"))],
        [reply(call("TaskUpdate", taskId="task-1", status="completed")), DONE],
        REMARK,
    ]
    h = Harnessed(tmp_path, turns)
    assert (await h.run()).ok
    assert h.fake.prompts == [PROMPT, CONTINUE_INSTRUCTION, REMARK_INSTRUCTION]


async def test_30_no_tool_call_is_no_progress(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[reply(text("I looked and did nothing."))], REMARK])
    result = await h.run()
    assert result.error is AgentErrorType.NO_PROGRESS
    assert h.recorder.spinner_stops() == ["Agent made no changes"]
    assert "agent no progress" in h.names()


@pytest.mark.parametrize(
    ("marker", "error"),
    [
        ("[ERROR-MCP-MISSING]", AgentErrorType.MCP_MISSING),
        ("[ERROR-RESOURCE-MISSING]", AgentErrorType.RESOURCE_MISSING),
    ],
)
async def test_missing_resource_markers(tmp_path: Path, marker: str, error: AgentErrorType) -> None:
    h = Harnessed(tmp_path, [[WORK, reply(text(f"{marker} cannot reach it"))], REMARK])
    result = await h.run()
    assert result.error is error
    assert "agent completed" not in h.names()


async def test_no_tool_runs_once_a_marker_is_latched(tmp_path: Path) -> None:
    # The marker streams before the message's tool calls run: they are refused, not run.
    h = Harnessed(tmp_path, [[reply(text("[ABORT] stop now"), call("TaskCreate", content="t"))]])
    result = await h.run()
    assert result.error is AgentErrorType.ABORT
    (end,) = [e for e in h.fake.events if e["type"] == "tool_end"]
    assert end["isError"] and "the run is ending" in end["result"]
