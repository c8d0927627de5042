"""Which model gateway a run talks to, from flags and the environment.

`WIZARD_GATEWAY_URL`, `WIZARD_GATEWAY_KEY`, `WIZARD_GATEWAY_API` (`anthropic-messages`, the
default, or `openai-completions`) and `WIZARD_GATEWAY_REFUSAL_MARKER`, or the matching flags;
`ANTHROPIC_API_KEY` alone means Anthropic's own API. `WIZARD_MAX_RETRIES` (default 4; 0 turns
retries off) and `WIZARD_STREAM_IDLE_TIMEOUT` (seconds, default 90) set the gateway edge.

The URL is checked here, before any request: `http` or `https`, a host, no credentials in
it. The key crosses the network in clear over plain `http`, so that is refused for a host
that is not this machine unless `--allow-insecure-gateway` (`WIZARD_ALLOW_INSECURE_GATEWAY=1`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast, get_args
from urllib.parse import urlsplit

from wizard.config import number_setting
from wizard.errors import ConfigError, UsageError
from wizard.programs.registry import did_you_mean
from wizard.runner.harness.types import CA_FIX, GatewayApi, GatewaySettings
from wizard.signals import DEFAULT_GATEWAY_MARKER

ANTHROPIC_API_URL = "https://api.anthropic.com"


@dataclass(frozen=True)
class GatewayFlags:
    """Gateway settings given on the command line (None: not given)."""

    url: str | None = None
    key: str | None = None
    api: str | None = None
    allow_insecure: bool = False


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
    allow_insecure = flags.allow_insecure or environ.get("WIZARD_ALLOW_INSECURE_GATEWAY") == "1"
    check_gateway_url(url, allow_insecure)
    return GatewaySettings(
        url=url,
        api=cast(GatewayApi, api),
        key=key or None,
        refusal_marker=marker,
        retries=number_setting(environ, "WIZARD_MAX_RETRIES", 4, int),
        idle_timeout=number_setting(environ, "WIZARD_STREAM_IDLE_TIMEOUT", 90.0, float),
    )


_LOOPBACK = ("localhost", "127.0.0.1", "::1")


def check_gateway_url(url: str, allow_insecure: bool = False) -> None:
    """A `UsageError` naming the setting unless `url` is a gateway URL wizard may send a key to."""
    fix = "Set WIZARD_GATEWAY_URL (or --gateway-url) to the gateway's root, e.g. https://host."
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise UsageError(f"The gateway URL {url!r} is not valid: {exc}.", fix) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"The gateway URL {url!r} is not valid: it needs http:// or https:// and a host.", fix
        )
    if parts.username or parts.password:
        raise UsageError(
            "The gateway URL holds credentials; they would be sent in clear in every request.",
            "Put the key in WIZARD_GATEWAY_KEY (or --gateway-key) and remove it from the URL.",
        )
    local = parts.hostname in _LOOPBACK or parts.hostname.startswith("127.")
    if parts.scheme == "http" and not local and not allow_insecure:
        raise UsageError(
            f"The gateway URL {url} is plain http to another machine: the key would cross the "
            "network unencrypted.",
            "Use https, or pass --allow-insecure-gateway (WIZARD_ALLOW_INSECURE_GATEWAY=1) if "
            "you accept that.",
        )


def check_ca_settings(environ: Mapping[str, str]) -> None:
    """The CA bundle the environment names for an HTTPS gateway can be used: a readable PEM
    file of certificates (`SSL_CERT_FILE`), a folder (`SSL_CERT_DIR`); a `ConfigError` in one
    line naming the variable if not (it ended runs "failed unexpectedly")."""
    if file := environ.get("SSL_CERT_FILE"):
        try:
            with open(file, "rb") as bundle:
                pem = b"-----BEGIN CERTIFICATE-----" in bundle.read()
        except OSError as exc:
            raise ConfigError(f"SSL_CERT_FILE={file} cannot be read: {exc.strerror}.",
                              CA_FIX) from exc  # fmt: skip
        if not pem:
            raise ConfigError(f"SSL_CERT_FILE={file} holds no PEM certificate.", CA_FIX)
    if (folder := environ.get("SSL_CERT_DIR")) and not os.path.isdir(folder):
        raise ConfigError(f"SSL_CERT_DIR={folder} is not a folder.", CA_FIX)
