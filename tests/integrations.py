"""Scripted tool calls that set a program up for real, the smallest way, so that a test of
something else (undo, preview, the sandbox) runs to a success its proofs accept."""

from __future__ import annotations

import json

from wizard.testing.script import Block, call

SENDER = """import json
import os
import urllib.request


def send_email(to):
    request = urllib.request.Request(
        os.environ["EMAIL_API_HOST"] + "/api/email/send",
        data=json.dumps({"to": to, "subject": "Hello"}).encode(),
        headers={"Authorization": "Bearer " + os.environ["POSTHOG_EMAIL_API_KEY"]},
    )
    urllib.request.urlopen(request, timeout=10).read()
"""


def email_sent() -> list[Block]:
    """transactional-email, set up: a sender that posts to the email API's host from the
    environment with the key from it, and the entry wizard's probe calls."""
    entry = {"module": "wizard_test_sender", "function": "send_email", "args": ["{recipient}"]}
    return [
        call("write", path="wizard_test_sender.py", content=SENDER),
        call("write", path=".posthog/email-probe.json", content=json.dumps(entry)),
    ]
