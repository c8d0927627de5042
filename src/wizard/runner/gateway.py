"""Which model gateway a run talks to, from flags and the environment.

`WIZARD_GATEWAY_URL`, `WIZARD_GATEWAY_KEY`, `WIZARD_GATEWAY_API` (`anthropic-messages`, the
default, or `openai-completions`) and `WIZARD_GATEWAY_REFUSAL_MARKER`, or the matching flags;
`ANTHROPIC_API_KEY` alone means Anthropic's own API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast, get_args

from wizard.errors import ConfigError, UsageError
from wizard.programs.registry import did_you_mean
from wizard.runner.harness.types import GatewayApi, GatewaySettings
from wizard.signals import DEFAULT_GATEWAY_MARKER

ANTHROPIC_API_URL = "https://api.anthropic.com"


@dataclass(frozen=True)
class GatewayFlags:
    """Gateway settings given on the command line (None: not given)."""

    url: str | None = None
    key: str | None = None
    api: str | None = None


def resolve_gateway(flags: GatewayFlags, environ: Mapping[str, str]) -> GatewaySettings:
    """The gateway to use; a `ConfigError` naming the settings (and the demo) if none is."""
    url = flags.url or environ.get("WIZARD_GATEWAY_URL")
    key = flags.key or environ.get("WIZARD_GATEWAY_KEY")
    api = flags.api or environ.get("WIZARD_GATEWAY_API") or "anthropic-messages"
    marker = environ.get("WIZARD_GATEWAY_REFUSAL_MARKER") or DEFAULT_GATEWAY_MARKER
    if api not in get_args(GatewayApi):
        raise UsageError(
            f"Unknown gateway API '{api}'.", did_you_mean(api, list(get_args(GatewayApi)))
        )
    if not url and environ.get("ANTHROPIC_API_KEY"):
        url, key, api = ANTHROPIC_API_URL, environ["ANTHROPIC_API_KEY"], "anthropic-messages"
    if not url:
        raise ConfigError(
            "No model gateway is configured.",
            "Set WIZARD_GATEWAY_URL (with WIZARD_GATEWAY_KEY and, for an OpenAI-compatible "
            "endpoint, WIZARD_GATEWAY_API=openai-completions), pass --gateway-url, or set "
            "ANTHROPIC_API_KEY to use Anthropic's API. To try wizard offline with a scripted "
            "model, run `wizard demo`.",
        )
    return GatewaySettings(
        url=url, api=cast(GatewayApi, api), key=key or None, refusal_marker=marker
    )
