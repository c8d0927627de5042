"""Switchboard precedence: CLI flag > environment (the config file beneath it) > program
binding > default; decided the same before the CLI parses (`command_harness`) as by the plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from wizard.errors import UsageError
from wizard.programs import get_program
from wizard.programs.types import ProgramBinding
from wizard.runner.switchboard import resolve_binding

PROGRAM = get_program("transactional-email")
BOUND = replace(PROGRAM, binding=ProgramBinding(model="program-model"))


def test_defaults_are_linear_pi() -> None:
    binding = resolve_binding(PROGRAM, ProgramBinding(), {})
    assert (binding.sequence, binding.harness, binding.model) == (
        "linear",
        "pi",
        "claude-sonnet-4-6",
    )
    assert set(binding.sources.values()) == {"default"}


def test_program_binding_beats_default() -> None:
    binding = resolve_binding(BOUND, ProgramBinding(), {})
    assert (binding.model, binding.sources["model"]) == ("program-model", "program")


def test_environment_beats_program_binding() -> None:
    binding = resolve_binding(BOUND, ProgramBinding(), {"WIZARD_MODEL": "env-model"})
    assert (binding.model, binding.sources["model"]) == ("env-model", "env")


def test_flag_beats_environment() -> None:
    env = {"WIZARD_MODEL": "env-model", "WIZARD_HARNESS": "pi", "WIZARD_SEQUENCE": "linear"}
    binding = resolve_binding(BOUND, ProgramBinding(model="flag-model"), env)
    assert (binding.model, binding.sources["model"]) == ("flag-model", "flag")
    assert binding.sources["harness"] == "env" and binding.sources["sequence"] == "env"


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        (ProgramBinding(harness="py"), {}, "Did you mean 'pi'?"),
        (ProgramBinding(sequence="linaer"), {}, "Did you mean 'linear'?"),
        (ProgramBinding(), {"WIZARD_HARNESS": "claude"}, "Choose one of"),
    ],
)
def test_unknown_names_are_usage_errors(
    flags: ProgramBinding, env: dict[str, str], expected: str
) -> None:
    with pytest.raises(UsageError) as raised:
        resolve_binding(PROGRAM, flags, env)
    assert expected in (raised.value.hint or "")


def test_replay_vision_defaults_to_the_orchestrator_and_the_rest_to_linear() -> None:
    from wizard.programs.registry import PROGRAMS

    sequences = {
        program_id: resolve_binding(program, ProgramBinding(), {}).sequence
        for program_id, program in PROGRAMS.items()
    }
    assert sequences.pop("replay-vision") == "orchestrator"
    assert set(sequences.values()) == {"linear"}
    harnesses = {p: resolve_binding(c, ProgramBinding(), {}).harness for p, c in PROGRAMS.items()}
    assert harnesses.pop("replay-vision") == "anthropic"  # the reference's binding table
    assert set(harnesses.values()) == {"pi"}
    flag = resolve_binding(PROGRAMS["replay-vision"], ProgramBinding(sequence="linear"), {})
    assert (flag.sequence, flag.sources["sequence"]) == ("linear", "flag")


def test_the_anthropic_harness_without_the_sdk_names_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from wizard.ahead import Timeline
    from wizard.runner import make_harness

    real = importlib.util.find_spec

    def missing(name: str, *args: object) -> object:
        return None if name == "claude_agent_sdk" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", missing)
    with pytest.raises(UsageError) as raised:
        make_harness("anthropic", Timeline())
    assert "pip install 'wizard[anthropic]'" in (raised.value.hint or "")
    assert "--harness pi" in (raised.value.hint or "")


def test_every_registered_harness_is_offered_and_checked_against_its_gateway(
    tmp_path: Path,
) -> None:
    """One registry: the --harness help names each entry, and a gateway whose API a harness
    does not speak is refused while planning, naming one that does."""
    from wizard.cli_options import HarnessOpt
    from wizard.programs import get_program
    from wizard.runner import RunFlags, plan_run
    from wizard.runner.harness.registry import HARNESSES

    help_text = HarnessOpt.__metadata__[0].help
    assert all(name in help_text for name in HARNESSES)
    flags = RunFlags(
        project=tmp_path,
        harness="anthropic",
        gateway_url="http://127.0.0.1:9",
        gateway_api="openai-completions",
    )
    with pytest.raises(UsageError) as raised:
        plan_run(get_program("transactional-email"), flags, {"WIZARD_SANDBOX": "off"})
    assert "The anthropic harness speaks only anthropic-messages" in raised.value.message
    assert "--harness pi" in (raised.value.hint or "")


RUN = ["run", "transactional-email"]


@pytest.mark.parametrize(
    ("argv", "environ", "config", "expected"),
    [
        (RUN, {}, "", "pi"),
        (["run", "--ci", "revenue-analytics", "--project", "app"], {}, "", "pi"),
        (["run", "--project", "app", "--ci", "replay-vision"], {}, "", "anthropic"),
        (["skill", "posthog-email"], {}, "", "pi"),
        ([*RUN, "--harness", "anthropic"], {}, "", "anthropic"),
        ([*RUN, "--harness=anthropic"], {}, "", "anthropic"),
        ([*RUN, "--harness", "pi"], {"WIZARD_HARNESS": "anthropic"}, "", "pi"),
        (RUN, {"WIZARD_HARNESS": "anthropic"}, "", "anthropic"),
        # The config file, beneath the environment and above the program's binding.
        (RUN, {}, 'harness = "anthropic"', "anthropic"),
        (RUN, {"WIZARD_HARNESS": "pi"}, 'harness = "anthropic"', "pi"),
        (["run", "replay-vision"], {}, 'harness = "pi"', "pi"),
        # A program whose binding picks another harness.
        (["run", "replay-vision"], {}, "", "anthropic"),
        (["run", "replay-vision", "--harness", "pi"], {}, "", "pi"),
        # The demo runs pi, whatever the environment says.
        (["demo", "--scenario", "skill-abort"], {"WIZARD_HARNESS": "anthropic"}, "", "pi"),
        # No run, or none wizard would start.
        ([*RUN, "--help"], {}, "", None),
        (["--version"], {}, "", None),
        (["run"], {}, "", None),
        (["run", "no-such-program"], {}, "", None),
        (["runs"], {}, "", None),
        (["fleet", "run", "transactional-email"], {}, "", None),
        ([], {}, "", None),
    ],
)
def test_the_harness_is_decided_before_the_cli_parses_as_the_plan_decides_it(
    tmp_path: Path, argv: list[str], environ: dict[str, str], config: str, expected: str | None
) -> None:
    """`__main__` starts an engine on `command_harness`; the plan (the config file read as
    the CLI reads it, then `resolve_binding`) picks the same harness from the same input."""
    from wizard.argv import option_value
    from wizard.config import with_config
    from wizard.programs import PROGRAMS
    from wizard.runner.switchboard import command_harness

    path = tmp_path / "config.toml"
    path.write_text(f"[run]\n{config}\n")
    environ = {**environ, "WIZARD_CONFIG": str(path)}
    assert command_harness(argv, environ) == expected
    if expected is not None and argv[0] == "run":
        program = next(PROGRAMS[word] for word in argv if word in PROGRAMS)  # as the CLI parses
        flag = ProgramBinding(harness=option_value(argv, "--harness"))
        assert resolve_binding(program, flag, with_config(environ)).harness == expected
