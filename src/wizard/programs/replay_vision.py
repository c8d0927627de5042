"""Replay vision: scanners that watch session replays."""

from wizard.programs.types import (
    AbortCase,
    ConfigProof,
    InitOptionProof,
    Orchestration,
    ProgramBinding,
    ProgramCheck,
    ProgramConfig,
    TaskType,
)

# `.posthog/replay-vision.json`: the flows the scanners watch.
FLOWS_SCHEMA = {
    "type": "object",
    "required": ["flows"],
    "properties": {
        "flows": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1},
                               "path": {"type": "string"}},
            },
        }
    },
}  # fmt: skip

PLAN = Orchestration(
    seed_instructions=(
        "Enqueue `check-availability` first; then `enable-replay` and `write-flows`, each "
        "depending on it only, so they run in parallel."
    ),
    task_types=(
        TaskType(
            "check-availability",
            "Check the stop condition: is Replay vision available for this project?",
            "Check the skill's stop condition. If it holds, write its stop line exactly. "
            "Otherwise change nothing and report done, with a handoff naming the file that "
            "initialises PostHog and the app's main user flows.",
        ),
        TaskType(
            "enable-replay",
            "Make sure session replay is enabled in the PostHog initialisation.",
            "Do step 1 of the skill in the file named in the handoff. Report 'not needed' if "
            "replay is already on.",
        ),
        TaskType(
            "write-flows",
            "Write .posthog/replay-vision.json with the flows to watch.",
            "Do step 2 of the skill with the flows named in the handoff.",
        ),
    ),
)


REPLAY_VISION = ProgramConfig(
    id="replay-vision",
    label="Replay vision",
    description="Set up Replay vision scanners for this project's session replays.",
    skill="replay-vision",
    spinner_message="Setting up Replay vision...",
    success_message="Replay vision set up",
    docs_url="https://posthog.com/docs/session-replay",
    binding=ProgramBinding(sequence="orchestrator", harness="anthropic"),
    orchestration=PLAN,
    # What its skill must leave: checked before the run is called a success.
    checks=(ProgramCheck("file_exists", ".posthog/replay-vision.json"),),
    proofs=(
        ConfigProof("the scanners' flows are valid", ".posthog/replay-vision.json", FLOWS_SCHEMA),
        InitOptionProof(
            "session replay is on where PostHog starts", "posthog.init", "disable_session_recording"
        ),
    ),
    abort_cases=(
        AbortCase(
            match=r"^replay vision not available for this project$",
            message="Replay vision is not available for this project",
            body=(
                "Every Replay vision scanner endpoint reported that the feature is not available "
                "for this project. Ask PostHog support to enable Replay vision, then run this "
                "program again."
            ),
        ),
    ),
)
