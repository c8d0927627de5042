"""Sends the app's email over SMTP."""

import os
import smtplib
from email.message import EmailMessage


def send_password_reset(to: str, link: str) -> None:
    """Email a password-reset link."""
    message = EmailMessage()
    message["Subject"] = "Reset your password"
    message["From"] = "no-reply@example.com"
    message["To"] = to
    message.set_content(f"Reset your password: {link}")
    with smtplib.SMTP(os.environ.get("SMTP_HOST", "localhost")) as smtp:
        smtp.send_message(message)
