"""Analytics through the real PostHog SDK, delivered to a local capture endpoint."""

from __future__ import annotations

import gzip
import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wizard.analytics import Analytics, analytics_from_env, event_name
from wizard.events import AnalyticsEvent, LogLine
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.testing.fake_session import FakeSession


@pytest.fixture
def capture() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            payload = json.loads(body)
            batch = payload.get("batch", [payload]) if isinstance(payload, dict) else payload
            received.extend(batch)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"status": 1}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def test_events_arrive_with_their_properties(capture: tuple[str, list[dict[str, Any]]]) -> None:
    host, received = capture
    analytics = Analytics("phc_test", host, {"program": "transactional-email"}, distinct_id="run-1")
    analytics(
        AnalyticsEvent(
            "agent aborted", {"reason": "the api is not enabled", "source": "gateway_policy"}
        )
    )
    analytics(AnalyticsEvent("wizard remark", {"remark": "more docs"}))
    analytics(LogLine("not analytics"))
    analytics.shutdown()
    names = [event["event"] for event in received]
    assert names == ["wizard: agent aborted", "wizard remark"]
    first = received[0]
    assert first["distinct_id"] == "run-1"
    assert first["properties"]["reason"] == "the api is not enabled"
    assert first["properties"]["source"] == "gateway_policy"
    assert first["properties"]["program"] == "transactional-email"


async def test_the_harness_tags_a_gateway_refusal_on_delivery(
    tmp_path: Path, capture: tuple[str, list[dict[str, Any]]]
) -> None:
    host, received = capture
    analytics = Analytics("phc_test", host, {"program": "transactional-email"})
    fake = FakeSession([[{"blocks": [{"text": "[posthog:abort] Blocked by policy."}]}]])
    inputs = RunInputs(
        project_dir=tmp_path,
        prompt="go",
        model="scripted-1",
        gateway=GatewaySettings(url="http://127.0.0.1:9"),
        sink=analytics,
    )
    result = await PiHarness(session_factory=fake).run(inputs)
    analytics.shutdown()
    assert result.abort_source == "gateway_policy"
    (event,) = received
    assert event["event"] == "wizard: agent aborted"
    assert event["properties"]["source"] == "gateway_policy"
    assert {"duration_ms", "model"} <= set(event["properties"])


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"WIZARD_POSTHOG_KEY": "k", "DO_NOT_TRACK": "1"},
        {"WIZARD_POSTHOG_KEY": "k", "WIZARD_TELEMETRY": "0"},
    ],
)
def test_analytics_is_off_without_a_key_or_when_refused(env: dict[str, str]) -> None:
    assert analytics_from_env(env, {}) is None


def test_analytics_is_on_with_a_key(capture: tuple[str, list[dict[str, Any]]]) -> None:
    host, _ = capture
    analytics = analytics_from_env({"WIZARD_POSTHOG_KEY": "k", "WIZARD_POSTHOG_HOST": host}, {})
    assert analytics is not None
    analytics.shutdown()


def test_event_names() -> None:
    assert event_name("agent completed") == "wizard: agent completed"
    assert event_name("wizard remark") == "wizard remark"


def test_a_missing_posthog_package_names_the_real_fix(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "posthog", None)  # import posthog → ImportError
    assert analytics_from_env({"WIZARD_POSTHOG_KEY": "k"}, {}) is None
    assert "reinstall wizard" in caplog.text
    assert "wizard[analytics]" not in caplog.text  # no such extra
