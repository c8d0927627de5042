"""Gateway configuration from flags and the environment."""

from __future__ import annotations

import pytest

from wizard.errors import ConfigError, UsageError
from wizard.runner.gateway import ANTHROPIC_API_URL, GatewayFlags, resolve_gateway


def test_environment() -> None:
    env = {
        "WIZARD_GATEWAY_URL": "http://gw",
        "WIZARD_GATEWAY_KEY": "k",
        "WIZARD_GATEWAY_API": "openai-completions",
    }
    gateway = resolve_gateway(GatewayFlags(), env)
    assert (gateway.url, gateway.key, gateway.api) == ("http://gw", "k", "openai-completions")
    assert gateway.refusal_marker == "[posthog:abort]"


def test_flags_beat_environment() -> None:
    gateway = resolve_gateway(GatewayFlags(url="http://flag"), {"WIZARD_GATEWAY_URL": "http://env"})
    assert gateway.url == "http://flag" and gateway.api == "anthropic-messages"


def test_anthropic_key_alone_means_anthropic() -> None:
    gateway = resolve_gateway(GatewayFlags(), {"ANTHROPIC_API_KEY": "sk-ant"})
    assert (gateway.url, gateway.key) == (ANTHROPIC_API_URL, "sk-ant")


def test_refusal_marker_is_per_gateway() -> None:
    env = {"WIZARD_GATEWAY_URL": "http://gw", "WIZARD_GATEWAY_REFUSAL_MARKER": "[acme:refuse]"}
    assert resolve_gateway(GatewayFlags(), env).refusal_marker == "[acme:refuse]"


def test_nothing_configured_names_the_settings_and_the_demo() -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_gateway(GatewayFlags(), {})
    hint = raised.value.hint or ""
    for name in ("WIZARD_GATEWAY_URL", "WIZARD_GATEWAY_KEY", "ANTHROPIC_API_KEY", "wizard demo"):
        assert name in hint


def test_unknown_api_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="openai"):
        resolve_gateway(GatewayFlags(url="http://gw", api="openai"), {})


def test_the_key_is_kept_out_of_reprs() -> None:
    gateway = resolve_gateway(GatewayFlags(url="http://gw", key="sekret"), {})
    assert gateway.key == "sekret" and "sekret" not in repr(gateway)
