"""Transactional email: send email from the project's code through the PostHog email API."""

from wizard.programs.types import (
    AbortCase,
    CallPattern,
    Fit,
    Orchestration,
    ProgramConfig,
    SendProof,
    TaskType,
)

# Where the skill records the send path wizard calls to prove a send reaches the API.
ENTRY_FILE = ".posthog/email-probe.json"

# How apps send email without the API: none of these calls may be left once the program ran.
EMAIL_SENDS = (
    CallPattern(("SMTP", "SMTP_SSL", "LMTP", "sendmail", "send_message"), ("smtplib",)),
    CallPattern(("send", "send_message"), ("flask_mail", "flask_mailman")),
    CallPattern(
        ("send_mail", "send_mass_mail", "mail_admins", "mail_managers", "send"),
        ("django.core.mail",),
    ),
    CallPattern(
        ("send", "send_email"),
        ("sendgrid", "yagmail", "postmarker", "resend", "mailjet_rest", "mailchimp_transactional"),
    ),
    CallPattern(("createTransport", "sendMail"), ("nodemailer",)),
    CallPattern(("send", "sendMultiple"), ("@sendgrid/mail",)),
    CallPattern(
        ("send", "sendEmail", "sendEmailWithTemplate"),
        ("resend", "postmark", "@aws-sdk/client-ses", "@aws-sdk/client-sesv2"),
    ),
)

# What a project must show before the agent looks: code that sends email.
EMAIL_FIT = Fit(
    languages=("python", "javascript"),
    signals=(
        "smtp",
        "mailer",
        "sendmail",
        "send_mail",
        "sendemail",
        "send_email",
        "nodemailer",
        "flask_mail",
        "flask-mail",
        "django.core.mail",
        "sendgrid",
        "postmark",
        "mailgun",
        "resend",
        "client-ses",
        "mail.send",
        "mail_send",
        "email.send",
    ),
    lacking="no code here sends email (nothing names SMTP, a mailer or an email service)",
    found="the code sends email",
    hints=("mail", "smtp", "notif"),
)

PLAN = Orchestration(
    seed_instructions=(
        "Enqueue `check` first; then `client`, depending on `check`; then one `replace-sends` "
        "task per file that sends email (its path in `inputs`), each depending on `client`; "
        "then `report`, depending on every `replace-sends` task."
    ),
    task_types=(
        TaskType(
            "check",
            "Check the stop conditions: language, the email API key, code that sends email.",
            "Check the skill's three stop conditions in order. If one holds, write its stop "
            "line exactly. Otherwise change nothing and report done, with a handoff naming the "
            "language and each file and function that sends email.",
        ),
        TaskType(
            "client",
            "Add the small PostHog email client module.",
            "Do step 1 of the skill next to the code named in the handoff. Hand off the "
            "module's path and how to import it.",
        ),
        TaskType(
            "replace-sends",
            "Move the email sends of one file (inputs.path) onto the client.",
            "Do steps 2 and 3 of the skill in the file named in your inputs, and only there.",
        ),
        TaskType(
            "report",
            "Record the send path for wizard's probe, then write posthog-email-report.md.",
            "Do steps 4 and 5 of the skill from the handoffs.",
        ),
    ),
)


TRANSACTIONAL_EMAIL = ProgramConfig(
    id="transactional-email",
    label="Transactional email",
    description="Send transactional email (receipts, password resets) through the email API.",
    skill="transactional-email",
    spinner_message="Setting up transactional email...",
    success_message="Transactional email set up",
    docs_url="https://posthog.com/docs/workflows/email",
    report_file="posthog-email-report.md",
    proofs=(
        SendProof(
            "one send reaches the email API",
            entry_file=ENTRY_FILE,
            path="/api/email/send",
            key_variable="POSTHOG_EMAIL_API_KEY",
            host_variable="EMAIL_API_HOST",
            replaces=EMAIL_SENDS,
        ),
    ),
    fits=EMAIL_FIT,
    orchestration=PLAN,
    abort_cases=(
        AbortCase(
            match=r"^the api is not enabled for this project$",
            message="The email API is not enabled for this project",
            body=(
                "Turn on the email API for this project (PostHog → "
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
