"""Which command lines start pi's host with the process (`runner.harness.pi.early`)."""

from __future__ import annotations

import pytest

from wizard.runner.harness.pi.early import runs_pi


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["run", "revenue-analytics", "--project", "app"], {}, ("run", "revenue-analytics")),
        (["run", "--ci", "transactional-email"], {}, ("run", "transactional-email")),
        (["skill", "posthog-email"], {}, ("skill", "posthog-email")),
        (["demo", "--scenario", "skill-abort"], {}, ("demo", "skill-abort")),
        (["demo"], {}, ("demo", "")),
        (["run", "x", "--harness", "pi"], {"WIZARD_HARNESS": "anthropic"}, ("run", "x")),
        (["run", "x", "--harness", "anthropic"], {}, None),
        (["run", "x", "--harness=anthropic"], {}, None),
        (["run", "x"], {"WIZARD_HARNESS": "anthropic"}, None),
        (["run", "x", "--help"], {}, None),
        (["--version"], {}, None),
        (["run"], {}, None),
        (["runs"], {}, None),
        (["fleet", "run", "x"], {}, None),
        ([], {}, None),
    ],
)
def test_only_a_pi_run_starts_pi_early(
    argv: list[str], environ: dict[str, str], expected: tuple[str, str] | None
) -> None:
    assert runs_pi(argv, environ) == expected
