"""The command line's shared options, declared once: every command that takes one uses the
same flag, help text and check (`wizard.cli` holds the commands)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from wizard.runner.harness.registry import harness_names


def _folder(value: str | Path) -> Path:
    """A `--project` folder as typed: an empty one is a mistake, never this folder."""
    if isinstance(value, Path):  # the default
        return value
    if not value.strip():
        raise typer.BadParameter("is empty: name the project's folder (`.` for this one)")
    return Path(value)


Project = Annotated[Path, typer.Option("--project", help="The project to set up.", parser=_folder)]
HarnessOpt = Annotated[
    str | None,
    typer.Option("--harness", help=f"Agent harness: {harness_names()}.  [env var: WIZARD_HARNESS]"),
]
SequenceOpt = Annotated[
    str | None,
    typer.Option(
        "--sequence", help="Sequence: linear or orchestrator.  [env var: WIZARD_SEQUENCE]"
    ),
]


def _at_least_one(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be 1 or more, not {value}")
    return value


def above_zero(value: float | None) -> float | None:
    """A budget's callback: above 0, or not given."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be above 0, not {value:g}")
    return value


def a_duration(value: str | None) -> str | None:
    """`--max-time`'s callback: a duration (`10m`, `1h30m`), or not given."""
    from wizard.errors import UsageError
    from wizard.runner.harness.usage import duration_seconds

    if value is not None:
        try:
            duration_seconds(value)
        except UsageError as exc:
            raise typer.BadParameter(exc.message) from exc
    return value


MaxParallel = Annotated[
    int | None,
    typer.Option(
        "--max-parallel",
        callback=_at_least_one,
        help="Orchestrator: task runs at once (default 3).  [env var: WIZARD_MAX_PARALLEL_TASKS]",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", help="Model id at the gateway.  [env var: WIZARD_MODEL]"),
]
SkillsDir = Annotated[
    Path | None,
    typer.Option(
        "--skills-dir", help="Read skills from this folder first.  [env var: WIZARD_SKILLS_DIR]"
    ),
]
Ci = Annotated[bool, typer.Option("--ci", help="No animation or questions; JSON Lines out.")]
OutcomeJson = Annotated[
    Path | None, typer.Option("--outcome-json", help="Write the outcome as JSON to this file.")
]
GatewayUrl = Annotated[
    str | None,
    typer.Option("--gateway-url", envvar="WIZARD_GATEWAY_URL", help="The gateway's root URL."),
]
GatewayKey = Annotated[
    str | None,
    typer.Option("--gateway-key", envvar="WIZARD_GATEWAY_KEY", help="The gateway's API key."),
]
GatewayApi = Annotated[
    str | None,
    typer.Option(
        "--gateway-api",
        envvar="WIZARD_GATEWAY_API",
        help="anthropic-messages (default) or openai-completions.",
    ),
]
AllowInsecure = Annotated[
    bool,
    typer.Option(
        "--allow-insecure-gateway",
        envvar="WIZARD_ALLOW_INSECURE_GATEWAY",
        help="Allow a plain-http gateway on another machine (the key crosses in clear).",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", help="Show every tool call.")]
MaxTurns = Annotated[
    int | None,
    typer.Option("--max-turns", callback=_at_least_one,
                 help="End the run at its model request after N.  [env var: WIZARD_MAX_TURNS]"),
]  # fmt: skip
MaxCost = Annotated[
    float | None,
    typer.Option("--max-cost", callback=above_zero,
                 help="End the run once it has cost this many USD (needs the "
                 "model's price).  [env var: WIZARD_MAX_COST]"),
]  # fmt: skip
MaxTime = Annotated[
    str | None,
    typer.Option("--max-time", help="End the run after this long, e.g. 10m or 1h.  "
                 "[env var: WIZARD_MAX_TIME]"),
]  # fmt: skip
NoVerify = Annotated[
    bool,
    typer.Option(
        "--no-verify",
        help="Skip the checks after the agent's work (the outcome warns that it did).",
    ),
]


def _verify_level(value: str) -> str:
    if value not in ("basic", "full"):
        raise typer.BadParameter(f"must be basic or full, not {value}")
    return value


Verify = Annotated[
    str,
    typer.Option(
        "--verify",
        callback=_verify_level,
        help="basic: check what the run changed; full: also the project's own build and "
        "tests (npm run build, npm test, pytest).",
    ),
]
NoSandbox = Annotated[
    bool,
    typer.Option(
        "--no-sandbox",
        help="Run the agent's commands without the OS sandbox (the fence alone; unsafe).  "
        "[env var: WIZARD_SANDBOX=off]",
    ),
]

PreviewOpt = Annotated[
    bool | None,
    typer.Option(
        "--preview/--no-preview",
        help="Work on a copy of the project, to apply (`wizard apply`) or discard after.  "
        "[env var: WIZARD_PREVIEW]",
    ),
]
PatchOut = Annotated[
    Path | None,
    typer.Option(
        "--patch-out",
        help="With --preview: write its change to this file as a patch for git apply.",
    ),
]


# The options of every command that runs an agent: each fills the `RunFlags` field of its
# name (a new run option is one line here, its field and resolution in the plan, and its one
# consumer). `SCREEN_OPTIONS` fill the `Screen` the same way.
RUN_OPTIONS: dict[str, tuple[object, object]] = {
    "project": (Project, Path(".")),
    "harness": (HarnessOpt, None),
    "sequence": (SequenceOpt, None),
    "model": (ModelOpt, None),
    "skills_dir": (SkillsDir, None),
    "gateway_url": (GatewayUrl, None),
    "gateway_key": (GatewayKey, None),
    "gateway_api": (GatewayApi, None),
    "allow_insecure_gateway": (AllowInsecure, False),
    "max_parallel": (MaxParallel, None),
    "no_sandbox": (NoSandbox, False),
    "no_verify": (NoVerify, False),
    "verify": (Verify, "basic"),
    "max_turns": (MaxTurns, None),
    "max_cost": (MaxCost, None),
    "max_time": (MaxTime, None),
    "preview": (PreviewOpt, None),
}
SCREEN_OPTIONS: dict[str, tuple[object, object]] = {
    "ci": (Ci, False),
    "verbose": (Verbose, False),
    "outcome_json": (OutcomeJson, None),
    "patch_out": (PatchOut, None),
}


def run_options(
    *, omit: frozenset[str] = frozenset()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command every run and screen option but those in `omit` or declared by the
    command itself: Typer sees them after the command's own parameters, and the command
    receives them gathered as `flags: RunFlags` and `screen: Screen` (one it does not take
    keeps its field's default)."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        gathered_as = {"RunFlags": object, "Screen": object}  # named only for type checkers
        signature = inspect.signature(command, eval_str=True, locals=gathered_as).parameters
        own = [param for name, param in signature.items() if name not in ("flags", "screen")]
        shared = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                              default=default)
            for name, (kind, default) in (RUN_OPTIONS | SCREEN_OPTIONS).items()
            if name not in omit and name not in signature
        ]  # fmt: skip

        def gathered(**given: Any) -> None:
            from wizard.launch import Screen
            from wizard.runner.plan import RunFlags

            taken = {param.name: given.pop(param.name) for param in shared}
            screen = Screen(**{name: taken[name] for name in SCREEN_OPTIONS if name in taken})
            flags = RunFlags(**{name: taken[name] for name in RUN_OPTIONS if name in taken})
            command(**given, flags=flags, screen=screen)

        gathered.__name__, gathered.__doc__ = command.__name__, command.__doc__
        gathered.__signature__ = inspect.Signature([*own, *shared])  # type: ignore[attr-defined]
        gathered.__annotations__ = {param.name: param.annotation for param in [*own, *shared]}
        return gathered

    return decorate


JournalProject = Annotated[
    Path, typer.Option("--project", help="The project whose runs to use.", parser=_folder)
]
RunArg = Annotated[
    str | None, typer.Argument(help="The run id, or a prefix of it (default: the latest run).")
]
