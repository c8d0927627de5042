"""Scripted tool calls that set a program up for real, the smallest way, so that a test of
something else (undo, preview, the sandbox) runs to a success its proofs accept."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from wizard.testing.script import Block, call

SENDER = """import json
import subprocess
from pathlib import Path
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
