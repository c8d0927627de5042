"""The switchboard: the one place that decides which sequence, harness and model run.

Each of the three is resolved on its own with the precedence CLI flag > environment
(`WIZARD_SEQUENCE`, `WIZARD_HARNESS`, `WIZARD_MODEL`, with the config file's settings
beneath it) > the program's binding > default. The plan asks it once the CLI has parsed the
command line (`resolve_binding`); `__main__` asks it the harness before (`command_harness`),
from the raw command line, to start that engine while wizard loads.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence

from wizard.argv import AGENT_COMMANDS, option_value, run_words
from wizard.errors import UsageError
from wizard.layout import config_path
from wizard.programs.registry import PROGRAMS, did_you_mean
from wizard.programs.types import Binding, ProgramBinding, ProgramConfig
from wizard.runner.harness.registry import HARNESSES

__all__ = ["Binding", "command_harness", "resolve_binding"]

DEFAULT_BINDING = ProgramBinding(sequence="linear", harness="pi", model="claude-sonnet-4-6")
# `wizard demo` runs the offline demo on pi, whatever the environment says (its flag).
DEMO_HARNESS = "pi"

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


def command_harness(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The harness a command line runs on, decided as its plan will decide it (`_pick`, the
    config file beneath the environment), before the CLI has parsed it: for `run PROGRAM`,
    `skill NAME` and `demo`; None for any other command, a program wizard does not know, or
    a call for help (the CLI says what is wrong; nothing was started for it)."""
    words = run_words(argv, AGENT_COMMANDS)
    if words is None:
        return None
    if words[0] == "demo":
        return DEMO_HARNESS
    # Among the words, an option's value may stand before the program's name.
    program = next((PROGRAMS[word] for word in words[1:] if word in PROGRAMS), None)
    if len(words) < 2 or (words[0] == "run" and program is None):
        return None
    configured = _configured_harness(environ)
    environ = {**({"WIZARD_HARNESS": configured} if configured else {}), **environ}
    binding = program.binding if program is not None and words[0] == "run" else ProgramBinding()
    return _pick("harness", option_value(argv, "--harness"), environ, binding)[0]


def _configured_harness(environ: Mapping[str, str]) -> str | None:
    """The config file's `[run] harness`, read as `config.with_config` puts it beneath the
    environment (a file that cannot be read is the plan's to report)."""
    try:
        data = tomllib.loads(config_path(environ).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    run = data.get("run")
    harness = run.get("harness") if isinstance(run, dict) else None
    return harness if isinstance(harness, str) else None
