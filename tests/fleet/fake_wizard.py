"""A stand-in for `wizard run` at the fleet's edge (the run activity starts it as a process),
so the fleet's own logic can be tested in seconds: retries, pace, cancellation, parallelism.

It reads `FAKE_WIZARD_SCRIPT` (JSON: repository id → one ending per attempt), appends what it
did to `FAKE_WIZARD_LOG` (JSON Lines), and writes the outcome and patch files `wizard run`
would. An ending: {"status", "error_type", "reason", "cost", "sleep", "file"}. On SIGTERM it
logs that and exits 143 with no outcome, as an interrupted run does.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def main(argv: list[str]) -> int:
    project = Path(_arg(argv, "--project"))
    repo = project.parent.name  # …/<fleet>/<repo id>/repo
    log = Path(os.environ["FAKE_WIZARD_LOG"])
    before = log.read_text().splitlines() if log.exists() else []
    attempt = 1 + sum(1 for line in before if json.loads(line)["repo"] == repo and
                      json.loads(line)["event"] == "start")  # fmt: skip
    endings = json.loads(Path(os.environ["FAKE_WIZARD_SCRIPT"]).read_text())[repo]
    ending = endings[min(attempt, len(endings)) - 1]

    def note(event: str) -> None:
        with open(log, "a") as out:
            out.write(json.dumps({"repo": repo, "event": event, "attempt": attempt,
                                  "at": time.time(), "pid": os.getpid()}) + "\n")  # fmt: skip

    def stopped(signum: int, frame: object) -> None:
        note("terminated")
        os._exit(143)

    signal.signal(signal.SIGTERM, stopped)
    note("start")
    time.sleep(ending.get("sleep", 0.0))
    status = ending.get("status", "succeeded")
    if name := ending.get("file"):
        Path(_arg(argv, "--patch-out")).write_text(
            f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n"
            f"@@ -0,0 +1 @@\n+set up\n"
        )
    outcome = {"status": status, "exit_code": {"succeeded": 0, "aborted": 3, "unverified": 4}
               .get(status, 1), "error_type": ending.get("error_type"),
               "reason": ending.get("reason"), "usage": {"cost_usd": ending.get("cost", 0.01)},
               "changed_files": [name] if name else []}  # fmt: skip
    Path(_arg(argv, "--outcome-json")).write_text(json.dumps(outcome))
    note("end")
    return outcome["exit_code"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
