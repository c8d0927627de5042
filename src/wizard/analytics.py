"""Product analytics through the real PostHog Python SDK.

An event sink that sends each `AnalyticsEvent` as `wizard: <name>` (the remark keeps its own
name, `wizard remark`), tagged with the run's program, harness and sequence. It is off
unless a project key is configured (`WIZARD_POSTHOG_KEY`, host `WIZARD_POSTHOG_HOST`), and
always off when `DO_NOT_TRACK=1` or `WIZARD_TELEMETRY=0`. `shutdown()` flushes the queue
before the process exits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from wizard.events import AnalyticsEvent, Event
from wizard.logs import logger

log = logger(__name__)

DEFAULT_HOST = "https://us.i.posthog.com"


def event_name(name: str) -> str:
    """The PostHog event name for a core event name."""
    return name if name.startswith("wizard") else f"wizard: {name}"


def telemetry_enabled(environ: Mapping[str, str]) -> bool:
    """Whether the user allows telemetry."""
    return environ.get("DO_NOT_TRACK") not in ("1", "true") and environ.get(
        "WIZARD_TELEMETRY"
    ) not in ("0", "false", "off")


class Analytics:
    """Sends analytics events to PostHog."""

    def __init__(
        self, api_key: str, host: str, tags: Mapping[str, Any], distinct_id: str | None = None
    ) -> None:
        from posthog import Posthog

        self.distinct_id = distinct_id or f"wizard-{uuid.uuid4()}"
        self.tags = dict(tags)
        self._client = Posthog(api_key, host=host, max_retries=2, timeout=5)

    def __call__(self, event: Event) -> None:
        if isinstance(event, AnalyticsEvent):
            properties = {**self.tags, **event.properties, "$process_person_profile": False}
            self._client.capture(
                event_name(event.name), distinct_id=self.distinct_id, properties=properties
            )

    def shutdown(self) -> None:
        """Send everything queued, then stop."""
        try:
            self._client.shutdown()
        except Exception as exc:  # analytics must never change how a run ends
            log.warning("analytics flush failed: %s", exc)


def analytics_from_env(environ: Mapping[str, str], tags: Mapping[str, Any]) -> Analytics | None:
    """The configured analytics sink, or None when telemetry is off or unconfigured."""
    key = environ.get("WIZARD_POSTHOG_KEY")
    if not key or not telemetry_enabled(environ):
        return None
    try:
        return Analytics(key, environ.get("WIZARD_POSTHOG_HOST") or DEFAULT_HOST, tags)
    except ImportError:
        log.warning(
            "analytics is off: the posthog package, a dependency of wizard, is missing; "
            "reinstall wizard (for example `pip install --force-reinstall .`) to bring it back"
        )
        return None
