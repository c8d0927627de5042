"""What a failed model request means, for any harness: rate limit or API error, and why.

The message an engine reports is often the provider SDK's terse one ("Connection error."). A
failure to reach the gateway at all gets the gateway's URL and the fix added, so the screen
says which URL failed and what to check.
"""

from __future__ import annotations

import re

from wizard.outcome import AgentErrorType

_RATE_LIMITED = re.compile(r"rate.?limit|\b429\b", re.IGNORECASE)
_UNREACHABLE = re.compile(
    r"connection error|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ETIMEDOUT|fetch failed"
    r"|socket hang up",
    re.IGNORECASE,
)


# How wizard's gateway edge begins what it says about the gateway: each names what to check.
GATEWAY_SAID = ("The model gateway at ", "Could not connect to the model gateway at ",
                "Could not reach the model gateway at ")  # fmt: skip


def classify_failure(message: str, gateway_url: str) -> tuple[AgentErrorType, str]:
    """The error type of a failed model request, and the message to show for it."""
    if _RATE_LIMITED.search(message):
        return AgentErrorType.RATE_LIMIT, message
    if message.startswith(GATEWAY_SAID):
        return AgentErrorType.API_ERROR, message
    if _UNREACHABLE.search(message):
        return AgentErrorType.API_ERROR, (
            f"Could not reach the model gateway at {gateway_url} ({message.strip()}). Check "
            "WIZARD_GATEWAY_URL (or --gateway-url) and that the gateway is up and reachable "
            "from here; `wizard demo` runs offline."
        )
    return AgentErrorType.API_ERROR, message
