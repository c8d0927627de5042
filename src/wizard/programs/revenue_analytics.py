"""Revenue analytics: tag Stripe customers with their PostHog person."""

from wizard.programs.types import (
    AbortCase,
    CallSiteProof,
    Fit,
    Orchestration,
    ProgramConfig,
    TaskType,
)

# Stripe calls that create or update a customer or a checkout, in Python and in Node.
STRIPE_CALLS = (
    "Customer.create", "Customer.modify", "checkout.Session.create",
    "customers.create", "customers.update", "checkout.sessions.create",
)  # fmt: skip

PLAN = Orchestration(
    seed_instructions=(
        "Enqueue `find-stripe` first (id `find-stripe`). Then `tag-customers` and "
        "`tag-checkouts`, each depending on it only, so they run in parallel; then `report`, "
        "depending on both."
    ),
    task_types=(
        TaskType(
            "find-stripe",
            "Check the stop conditions: the Stripe calls and where users are identified.",
            "Check the skill's two stop conditions. If one holds, write its stop line exactly. "
            "Otherwise change nothing and report done, with a handoff that lists each Stripe "
            "call (file, line, kind) and the expression that holds the PostHog distinct_id.",
        ),
        TaskType(
            "tag-customers",
            "Add the distinct_id metadata where Stripe customers are created or updated.",
            "Do step 1 of the skill for every customer call in the handoff. Report 'not "
            "needed' if there is none.",
        ),
        TaskType(
            "tag-checkouts",
            "Pass the same metadata on Stripe checkout sessions.",
            "Do step 2 of the skill for every checkout call in the handoff. Report 'not "
            "needed' if there is none.",
            optional=True,  # customers tagged without checkouts still attribute revenue
        ),
        TaskType(
            "report",
            "Write posthog-revenue-report.md from the handoffs.",
            "Do step 3 of the skill from the handoffs: the files changed and how to check a "
            "customer in Stripe.",
        ),
    ),
)


REVENUE_ANALYTICS = ProgramConfig(
    id="revenue-analytics",
    label="Revenue analytics",
    description="Connect Stripe revenue to PostHog persons so revenue shows up in PostHog.",
    skill="revenue-analytics",
    spinner_message="Setting up revenue analytics...",
    success_message="Revenue analytics set up",
    docs_url="https://posthog.com/docs/revenue-analytics",
    report_file="posthog-revenue-report.md",
    proofs=(
        CallSiteProof(
            "every Stripe customer and checkout call carries the PostHog distinct id",
            calls=STRIPE_CALLS,
            argument="metadata",
            key="posthog_person_distinct_id",
            followed_by=("Customer.modify", "customers.update"),
        ),
    ),
    fits=Fit(
        languages=("python", "javascript"),
        signals=("stripe",),
        lacking="nothing here uses Stripe",
        found="Stripe is used here",
        hints=("stripe", "billing", "pay", "checkout", "subscri"),
    ),
    disallowed_tools=("wizard_ask",),
    orchestration=PLAN,
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
