"""Transactional email: send email from the project's code through the PostHog email API."""

from wizard.programs.types import AbortCase, ProgramConfig

TRANSACTIONAL_EMAIL = ProgramConfig(
    id="transactional-email",
    label="Transactional email",
    description="Send transactional email (receipts, password resets) through the email API.",
    skill="transactional-email",
    spinner_message="Setting up transactional email...",
    success_message="Transactional email set up",
    docs_url="https://posthog.com/docs/workflows/email",
    report_file="posthog-email-report.md",
    abort_cases=(
        AbortCase(
            match=r"^the api is not enabled for this project$",
            message="The email API is not enabled for this project",
            body=(
                "Nothing was changed. Turn on the email API for this project (PostHog → "
                "Workflows → Channels → Email), put its key in your .env file as "
                "POSTHOG_EMAIL_API_KEY, then run `wizard run transactional-email` again."
            ),
            docs_url="https://posthog.com/docs/workflows/email",
        ),
        AbortCase(
            match=r"^unsupported language for transactional email$",
            message="Unsupported language for transactional email",
            body=(
                "Transactional email setup supports Python and JavaScript/TypeScript projects. "
                "This project uses neither, so nothing was changed; see the docs to call the "
                "email API over HTTP yourself."
            ),
            docs_url="https://posthog.com/docs/workflows/email",
        ),
        AbortCase(
            match=r"^no email sending code found$",
            message="No email sending code found",
            body=(
                "The wizard looked for code that sends email (SMTP, an email SDK, or a mailer) "
                "and found none, so there was nothing to move to the email API. Add the flow "
                "that should send email, then run this program again."
            ),
            docs_url="https://posthog.com/docs/workflows/email",
        ),
    ),
)
