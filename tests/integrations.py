"""Scripted tool calls that set a program up for real, the smallest way, so that a test of
something else (undo, preview, the sandbox) runs to a success its proofs accept, and the
smallest app each program fits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from wizard.testing.script import Block, call

MAILER = """import smtplib
from email.message import EmailMessage


def send_welcome(to):
    message = EmailMessage()
    message["To"], message["Subject"] = to, "Welcome"
    with smtplib.SMTP("localhost") as smtp:
        smtp.send_message(message)
"""
SENDER = """import json
import os
import urllib.request


def send_welcome(to):
    request = urllib.request.Request(
        os.environ["EMAIL_API_HOST"] + "/api/email/send",
        data=json.dumps({"to": to, "subject": "Welcome"}).encode(),
        headers={"Authorization": "Bearer " + os.environ["POSTHOG_EMAIL_API_KEY"]},
    )
    urllib.request.urlopen(request, timeout=10).read()
"""
ENTRY = {"module": "mailer", "function": "send_welcome", "args": ["{recipient}"]}


BILLING = """import stripe


def checkout(user):
    return stripe.checkout.Session.create(mode="payment")
"""


def stripe_app(project: Path) -> Path:
    """`project` made an app that calls Stripe, untagged (`billing.py`): one the
    revenue-analytics program fits."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "billing.py").write_text(BILLING)
    return project


def email_app(project: Path) -> Path:
    """`project` made an app that sends email over SMTP (`mailer.py`): one the
    transactional-email program fits."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "mailer.py").write_text(MAILER)
    return project


def email_sent() -> list[Block]:
    """transactional-email, set up on an `email_app`: its mailer moved onto the email API
    (the host and the key from the environment), and the entry wizard's probe calls."""
    return [
        call("write", path="mailer.py", content=SENDER),
        call("write", path=".posthog/email-probe.json", content=json.dumps(ENTRY)),
    ]


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that nothing trusts, and its key (openssl)."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
         "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
