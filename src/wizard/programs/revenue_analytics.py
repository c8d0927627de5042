"""Revenue analytics: tag Stripe customers with their PostHog person."""

from wizard.programs.types import AbortCase, ProgramConfig

REVENUE_ANALYTICS = ProgramConfig(
    id="revenue-analytics",
    label="Revenue analytics",
    description="Connect Stripe revenue to PostHog persons so revenue shows up in PostHog.",
    skill="revenue-analytics",
    spinner_message="Setting up revenue analytics...",
    success_message="Revenue analytics set up",
    docs_url="https://posthog.com/docs/revenue-analytics",
    report_file="posthog-revenue-report.md",
    disallowed_tools=("wizard_ask",),
    abort_cases=(
        AbortCase(
            match=r"^could not find a posthog distinct_id$",
            message="Could not find a PostHog distinct_id",
            body=(
                "Revenue analytics links each Stripe customer to a PostHog person, so users must "
                "be identified in PostHog before they can be tagged in Stripe. Add PostHog "
                "identify calls to your sign-up and log-in flows (or run `wizard run "
                "posthog-integration` first), then run this program again."
            ),
            docs_url="https://posthog.com/docs/product-analytics/identify",
        ),
        AbortCase(
            match=r"^could not find a stripe integration$",
            message="Could not find a Stripe integration",
            body=(
                "The wizard could not find an existing Stripe customer, charge, subscription or "
                "checkout call in this project. Revenue analytics tags Stripe objects your code "
                "already creates: add Stripe to the project, then run this program again."
            ),
            docs_url="https://posthog.com/docs/revenue-analytics",
        ),
    ),
)
