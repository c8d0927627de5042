"""The switchboard: the one place that decides which sequence, harness and model run.

Each of the three is resolved on its own with the precedence CLI flag > environment
(`WIZARD_SEQUENCE`, `WIZARD_HARNESS`, `WIZARD_MODEL`) > the program's binding > default.
"""

from __future__ import annotations

from collections.abc import Mapping

from wizard.errors import UsageError
from wizard.programs.registry import did_you_mean
from wizard.programs.types import ProgramBinding, ProgramConfig
from wizard.runner.harness.registry import HARNESSES
from wizard.runner.sequence.context import Binding

__all__ = ["Binding", "resolve_binding"]

DEFAULT_BINDING = ProgramBinding(sequence="linear", harness="pi", model="claude-sonnet-4-6")

SEQUENCES = ("linear", "orchestrator")


def _pick(
    name: str,
    cli: str | None,
    environ: Mapping[str, str],
    program: ProgramBinding,
) -> tuple[str, str]:
    env_value = environ.get(f"WIZARD_{name.upper()}")
    for value, source in (
        (cli, "flag"),
        (env_value, "env"),
        (getattr(program, name), "program"),
        (getattr(DEFAULT_BINDING, name), "default"),
    ):
        if value:
            return value, source
    raise AssertionError(f"no default {name}")  # DEFAULT_BINDING names every field


def _check(kind: str, value: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise UsageError(f"Unknown {kind} '{value}'.", did_you_mean(value, list(known)))


def resolve_binding(
    program: ProgramConfig, cli: ProgramBinding, environ: Mapping[str, str]
) -> Binding:
    """Resolve sequence, harness and model for `program`."""
    sequence, sequence_source = _pick("sequence", cli.sequence, environ, program.binding)
    harness, harness_source = _pick("harness", cli.harness, environ, program.binding)
    model, model_source = _pick("model", cli.model, environ, program.binding)
    _check("sequence", sequence, SEQUENCES)
    _check("harness", harness, tuple(HARNESSES))
    sources = {"sequence": sequence_source, "harness": harness_source, "model": model_source}
    return Binding(sequence, harness, model, sources)
