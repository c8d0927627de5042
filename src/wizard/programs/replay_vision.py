"""Replay vision: scanners that watch session replays."""

from wizard.programs.types import AbortCase, ProgramBinding, ProgramConfig

REPLAY_VISION = ProgramConfig(
    id="replay-vision",
    label="Replay vision",
    description="Set up Replay vision scanners for this project's session replays.",
    skill="replay-vision",
    spinner_message="Setting up Replay vision...",
    success_message="Replay vision set up",
    docs_url="https://posthog.com/docs/session-replay",
    binding=ProgramBinding(sequence="orchestrator"),
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
