"""Self-driving: PostHog Signals working on the project's GitHub repository."""

from wizard.programs.types import (
    AbortCase,
    ConfigProof,
    Orchestration,
    ProgramCheck,
    ProgramConfig,
    TaskType,
)

# `.posthog/self-driving.json`: the goals Self-driving works toward, and the repository.
GOALS_SCHEMA = {
    "type": "object",
    "required": ["goals", "repository"],
    "properties": {
        "goals": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        "repository": {"type": "string", "minLength": 1},
    },
}

PLAN = Orchestration(
    seed_instructions=(
        "Enqueue `check-repository`, then `ask-goals` depending on it, then `write-config` "
        "depending on `ask-goals`: the steps need each other's answers, so they run in turn."
    ),
    task_types=(
        TaskType(
            "check-repository",
            "Check Signals and confirm the GitHub remote.",
            "Check the skill's first two stop conditions, then do step 1. Hand off the "
            "repository's remote URL.",
        ),
        TaskType(
            "ask-goals",
            "Ask the user for the product goals.",
            "Do step 2 of the skill; its stop conditions 3 and 4 apply to your questions. Hand "
            "off the goals exactly as the user gave them.",
        ),
        TaskType(
            "write-config",
            "Write .posthog/self-driving.json.",
            "Do step 3 of the skill with the repository and the goals from the handoffs.",
        ),
    ),
)


SELF_DRIVING = ProgramConfig(
    id="self-driving",
    label="Self-driving",
    description="Set up PostHog Self-driving for this project and its GitHub repository.",
    skill="self-driving",
    spinner_message="Setting up PostHog Self-driving...",
    success_message="PostHog Self-driving set up",
    docs_url="https://posthog.com/docs/self-driving",
    orchestration=PLAN,
    # What its skill must leave: checked before the run is called a success.
    checks=(ProgramCheck("file_exists", ".posthog/self-driving.json"),),
    proofs=(
        ConfigProof(
            "the goals are the user's, for the project's repository",
            ".posthog/self-driving.json",
            GOALS_SCHEMA,
            answered=("goals",),
            remote="repository",
        ),
    ),
    abort_cases=(
        AbortCase(
            match=r"^self-driving is not available for this project$",
            message="PostHog Self-driving is not available for this project",
            body=(
                "The PostHog Signals API could not be reached for this project, so Self-driving "
                "cannot be set up yet. Check that your organization has Self-driving enabled, "
                "then run this program again."
            ),
        ),
        AbortCase(
            match=r"^github connection declined$",
            message="GitHub connection required",
            body=(
                "Self-driving needs GitHub access to open pull requests on your repository. Run "
                "this program again and approve the GitHub connection when asked."
            ),
        ),
        AbortCase(
            match=r"^requires-interactive-mode$",
            message="Interactive terminal required",
            body=(
                "Self-driving setup asks you questions, so it needs an interactive terminal. Run "
                "it again without --ci, in a terminal."
            ),
        ),
        AbortCase(
            match=r"^requirements-incomplete$",
            message="Setup needs your input",
            body=(
                "The wizard could not collect the answers this setup needs. Run it again in an "
                "interactive terminal and answer its questions."
            ),
        ),
    ),
)
