"""`--ci` output: JSON Lines on stdout, one per event, ending with the outcome.

Every line carries its kind (`event`), an ISO timestamp (`ts`) and the run id (`run_id`).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from wizard.events import Event, event_record, iso_now
from wizard.outcome import Outcome


class CiOutput:
    """An event sink that writes every event as one JSON line."""

    def __init__(self, stream: TextIO, run_id: str) -> None:
        self.stream = stream
        self.run_id = run_id

    def __call__(self, event: Event) -> None:
        self._write(event_record(event, self.run_id))

    def outcome(self, outcome: Outcome) -> None:
        """The last line: how the run ended."""
        self._write({"event": "outcome", "ts": iso_now(), **outcome.to_dict()})

    def _write(self, data: dict[str, Any]) -> None:
        self.stream.write(json.dumps(data, default=str) + "\n")
        self.stream.flush()
