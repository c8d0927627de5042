"""`--ci` output: JSON Lines on stdout, one per event, ending with the outcome."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TextIO

from wizard.events import Event
from wizard.outcome import Outcome


class CiOutput:
    """An event sink that writes every event as one JSON line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, event: Event) -> None:
        data = asdict(event)
        self._write({"event": data.pop("kind"), **data})

    def outcome(self, outcome: Outcome) -> None:
        """The last line: how the run ended."""
        self._write({"event": "outcome", **outcome.to_dict()})

    def _write(self, data: dict[str, object]) -> None:
        self.stream.write(json.dumps(data, default=str) + "\n")
        self.stream.flush()
