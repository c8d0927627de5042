"""Gateway configuration from flags and the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.errors import ConfigError, UsageError
from wizard.runner.gateway import ANTHROPIC_API_URL, GatewayFlags, resolve_gateway


def test_environment() -> None:
    env = {
        "WIZARD_GATEWAY_URL": "https://gw",
        "WIZARD_GATEWAY_KEY": "k",
        "WIZARD_GATEWAY_API": "openai-completions",
    }
    gateway = resolve_gateway(GatewayFlags(), env)
    assert (gateway.url, gateway.key, gateway.api) == ("https://gw", "k", "openai-completions")
    assert gateway.refusal_marker == "[posthog:abort]"


def test_flags_beat_environment() -> None:
    gateway = resolve_gateway(
        GatewayFlags(url="https://flag"), {"WIZARD_GATEWAY_URL": "https://env"}
    )
    assert gateway.url == "https://flag" and gateway.api == "anthropic-messages"


def test_anthropic_key_alone_means_anthropic() -> None:
    gateway = resolve_gateway(GatewayFlags(), {"ANTHROPIC_API_KEY": "sk-ant"})
    assert (gateway.url, gateway.key) == (ANTHROPIC_API_URL, "sk-ant")


def test_refusal_marker_is_per_gateway() -> None:
    env = {"WIZARD_GATEWAY_URL": "https://gw", "WIZARD_GATEWAY_REFUSAL_MARKER": "[acme:refuse]"}
    assert resolve_gateway(GatewayFlags(), env).refusal_marker == "[acme:refuse]"


def test_nothing_configured_names_the_settings_and_the_demo() -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_gateway(GatewayFlags(), {})
    hint = raised.value.hint or ""
    for name in ("WIZARD_GATEWAY_URL", "WIZARD_GATEWAY_KEY", "ANTHROPIC_API_KEY", "wizard demo"):
        assert name in hint


def test_unknown_api_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="openai"):
        resolve_gateway(GatewayFlags(url="https://gw", api="openai"), {})


def test_the_key_is_kept_out_of_reprs() -> None:
    gateway = resolve_gateway(GatewayFlags(url="https://gw", key="sekret"), {})
    assert gateway.key == "sekret" and "sekret" not in repr(gateway)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("htp:/x", "needs http:// or https:// and a host"),
        ("gateway.example", "needs http:// or https:// and a host"),
        ("https://user:pw@gw.example", "holds credentials"),
        ("http://gw.example", "plain http to another machine"),
        ("https://gw.example:notaport", "is not valid"),
    ],
)
def test_a_gateway_url_the_key_must_not_go_to_is_refused(url: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        resolve_gateway(GatewayFlags(url=url, key="k"), {})


def test_plain_http_is_fine_on_this_machine_or_when_allowed() -> None:
    assert resolve_gateway(GatewayFlags(url="http://127.0.0.1:8080"), {}).url
    assert resolve_gateway(GatewayFlags(url="http://localhost:8080"), {}).url
    allowed = GatewayFlags(url="http://gw.example", allow_insecure=True)
    assert resolve_gateway(allowed, {}).url == "http://gw.example"
    env = {"WIZARD_ALLOW_INSECURE_GATEWAY": "1"}
    assert resolve_gateway(GatewayFlags(url="http://gw.example"), env).url


def test_retry_and_idle_settings() -> None:
    env = {"WIZARD_MAX_RETRIES": "0", "WIZARD_STREAM_IDLE_TIMEOUT": "12.5"}
    gateway = resolve_gateway(GatewayFlags(url="https://gw"), env)
    assert (gateway.retries, gateway.idle_timeout) == (0, 12.5)
    assert resolve_gateway(GatewayFlags(url="https://gw"), {}).retries == 4
    with pytest.raises(UsageError, match="WIZARD_MAX_RETRIES"):
        resolve_gateway(GatewayFlags(url="https://gw"), {"WIZARD_MAX_RETRIES": "many"})


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (
            "SSL_CERT_FILE",
            "/nonexistent/ca.pem",
            "SSL_CERT_FILE=/nonexistent/ca.pem cannot be read",
        ),
        ("SSL_CERT_FILE", "/", "SSL_CERT_FILE=/ cannot be read: Is a directory"),
        ("SSL_CERT_FILE", "{text}", "holds no PEM certificate"),
        ("SSL_CERT_DIR", "{text}", "is not a folder"),
    ],
)
def test_a_ca_bundle_that_cannot_be_used_is_one_line_naming_the_variable(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    from wizard.runner.gateway import check_ca_settings

    text = tmp_path / "hostname"
    text.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=said) as refused:
        check_ca_settings({variable: value.format(text=text)})
    assert "\n" not in refused.value.message and variable in (refused.value.hint or "")


def test_a_pem_bundle_and_a_folder_are_taken() -> None:
    import certifi

    from wizard.runner.gateway import check_ca_settings

    check_ca_settings({"SSL_CERT_FILE": certifi.where(), "SSL_CERT_DIR": "/"})
