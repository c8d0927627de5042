"""One run plan: what the user asked for, resolved once into what a run uses.

The command line fills `RunFlags` by keyword (None: not given). `plan_run` resolves them
with the environment beneath (the config file's settings beneath that) into the frozen
`RunPlan`: binding, gateway, skill source, prices and budget, sandbox, preview, verification,
parallelism, timeouts, resume. Every `WIZARD_*` setting a run depends on is read here, and a
bad value, like a bad flag, is a usage error before anything starts: nothing is locked,
copied or journaled yet.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from wizard.config import number_setting, switch_setting
from wizard.engines.bundle import engines_dir
from wizard.errors import UsageError
from wizard.journal.runs import journal_keep
from wizard.journal.store import DEFAULT_MAX_FILE
from wizard.layout import config_path, state_root
from wizard.programs.registry import did_you_mean
from wizard.programs.types import ProgramBinding, ProgramConfig
from wizard.runner.gateway import GatewayFlags, check_ca_settings, resolve_gateway
from wizard.runner.harness.registry import HARNESSES
from wizard.runner.harness.types import GatewaySettings
from wizard.runner.harness.usage import Budget, BudgetFlags, price_table, run_budget
from wizard.runner.sequence.context import DEFAULT_MAX_PARALLEL
from wizard.runner.switchboard import Binding, resolve_binding
from wizard.skills.sources import (
    BundledSkills,
    ChainedSkills,
    DirectorySkills,
    RemoteSkills,
    SkillFetchError,
    SkillSource,
)
from wizard.tools.sandbox import sandbox_enabled

Verify = Literal["off", "basic", "full"]
ENGINE_TIMEOUT_S = 150.0


@dataclass(frozen=True)
class RunFlags:
    """What the command line asked for, one field per run option (`wizard.cli_options`'
    `RUN_OPTIONS` fills it by name); None (or False) where it said nothing."""

    project: Path = Path(".")
    harness: str | None = None
    sequence: str | None = None
    model: str | None = None
    skills_dir: Path | None = None
    gateway_url: str | None = None
    gateway_key: str | None = None
    gateway_api: str | None = None
    allow_insecure_gateway: bool = False
    max_turns: int | None = None
    max_cost: float | None = None
    max_time: str | None = None
    max_parallel: int | None = None
    no_sandbox: bool = False
    # `--no-verify` wins over `--verify full`.
    no_verify: bool = False
    verify: Literal["basic", "full"] = "basic"
    # `--preview` / `--no-preview`; None: `WIZARD_PREVIEW`.
    preview: bool | None = None
    # `wizard resume`: the interrupted orchestrator run to carry on.
    resume_from: str | None = None

    @property
    def binding(self) -> ProgramBinding:
        return ProgramBinding(sequence=self.sequence, harness=self.harness, model=self.model)

    @property
    def gateway(self) -> GatewayFlags:
        return GatewayFlags(
            self.gateway_url, self.gateway_key, self.gateway_api, self.allow_insecure_gateway
        )

    @property
    def budget(self) -> BudgetFlags:
        return BudgetFlags(self.max_turns, self.max_cost, self.max_time)

    @property
    def verify_level(self) -> Verify:
        return "off" if self.no_verify else self.verify


@dataclass(frozen=True)
class RunPlan:
    """Everything one run uses, resolved once (`plan_run`)."""

    program: ProgramConfig
    project: Path
    skills: SkillSource
    binding: Binding
    gateway: GatewaySettings
    prices: Mapping[str, tuple[float, ...]]
    budget: Budget
    max_parallel: int
    engine_timeout: float
    # The OS sandbox is on (off: `--no-sandbox` or `WIZARD_SANDBOX=off`).
    sandbox: bool
    preview: bool
    verify: Verify
    resume_from: str | None
    # The environment the run's own parts still read (the sandbox's allowed hosts and limits,
    # the engines' settings), with the config file's settings beneath it.
    environ: Mapping[str, str]


def plan_run(program: ProgramConfig, flags: RunFlags, environ: Mapping[str, str]) -> RunPlan:
    """The plan for `program` as `flags` ask, over `environ`; a `UsageError` (or
    `ConfigError`) naming the fix when something asked for cannot be."""
    preview = preview_wanted(flags.preview, environ)
    # A preview works on a copy: nothing, not even a check, writes in the project.
    check_project(flags.project, environ, writes=not preview)
    binding = resolve_binding(program, flags.binding, environ)
    skills = skill_source(flags.skills_dir, environ)
    check_skill(skills, program.skill)
    gateway = resolve_gateway(flags.gateway, environ)
    if gateway.url.startswith("https:"):
        check_ca_settings(environ)
    speaks = HARNESSES[binding.harness].apis
    if gateway.api not in speaks:
        others = [name for name, entry in HARNESSES.items() if gateway.api in entry.apis]
        raise UsageError(
            f"The {binding.harness} harness speaks only {' and '.join(speaks)}; the gateway "
            f"is {gateway.api}.",
            f"Use --harness {' or '.join(others)} for this gateway, or point the gateway at an "
            f"endpoint that speaks {' or '.join(speaks)}.",
        )
    prices = price_table(environ)
    budget = run_budget(flags.budget, environ, binding.model, prices)
    journal_keep(environ)  # a bad value is refused now, not after the agent's run
    number_setting(environ, "WIZARD_JOURNAL_MAX_FILE", DEFAULT_MAX_FILE, int)
    sandbox = sandbox_enabled(environ, flags.no_sandbox)
    if preview and not sandbox:
        raise UsageError(
            "A preview needs the OS sandbox: without it the agent's commands run as you, "
            "and could change the project the preview promises to leave untouched.",
            "Leave out --no-sandbox (and WIZARD_SANDBOX=off), or run without --preview.",
        )
    return RunPlan(
        program=program,
        project=flags.project,
        skills=skills,
        binding=binding,
        gateway=gateway,
        prices=prices,
        budget=budget,
        max_parallel=_max_parallel(flags.max_parallel, environ),
        engine_timeout=number_setting(environ, "WIZARD_ENGINE_TIMEOUT", ENGINE_TIMEOUT_S, float),
        sandbox=sandbox,
        preview=preview,
        verify=flags.verify_level,
        resume_from=flags.resume_from,
        environ=environ,
    )


def check_project(project: Path, environ: Mapping[str, str], *, writes: bool = True) -> None:
    """The project must be an app's folder the agent can write to (`writes`); a
    `UsageError` naming the fix."""
    if not project.exists():
        raise UsageError(
            f"Project directory {project} does not exist.",
            "Pass --project DIR with an existing directory.",
        )
    if not project.is_dir():
        raise UsageError(
            f"{project} is not a directory.", "Pass --project DIR with the project's folder."
        )
    _not_too_wide(project.resolve(), environ)
    if not writes:
        return
    try:  # as the agent would: root ignores permission bits, not read-only mounts
        with tempfile.NamedTemporaryFile(dir=project, prefix=".wizard-write-check-"):
            pass
    except OSError as exc:
        raise UsageError(
            f"The project {project} cannot be written: {exc.strerror}.",
            "The agent edits files there: make the folder writable, then run again.",
        ) from exc


def _not_too_wide(project: Path, environ: Mapping[str, str]) -> None:
    """Not the whole disk, not the home folder or a folder that holds it (its SSH keys, cloud
    credentials and shell profile would be the agent's to read), and not a folder that holds
    wizard's own state, engines or config."""
    fix = "Pass --project DIR with the app's own folder (or run wizard inside it)."
    if project == Path(project.anchor):
        raise UsageError(f"The project {project} is the whole disk.", fix)
    home = Path.home().resolve()
    if home == project or home.is_relative_to(project):
        where = "your home folder" if home == project else f"a folder that holds your home {home}"
        raise UsageError(f"The project {project} is {where}: its keys, credentials and "
                         "shell profile would be the agent's to read.", fix)  # fmt: skip
    owned = {"state": state_root(), "engines": engines_dir(), "config": config_path(environ)}
    for what, folder in owned.items():
        if folder.exists() and folder.resolve().is_relative_to(project):
            raise UsageError(f"The project {project} holds wizard's own {what} ({folder}).",
                             fix)  # fmt: skip


def skill_source(skills_dir: Path | None, environ: Mapping[str, str]) -> SkillSource:
    """Local folder first (`--skills-dir`, else `WIZARD_SKILLS_DIR`), then the remote menu
    (`WIZARD_SKILLS_URL`), then the bundled skills."""
    sources: list[SkillSource] = []
    setting = "--skills-dir" if skills_dir else "WIZARD_SKILLS_DIR"
    local = skills_dir or (
        Path(environ["WIZARD_SKILLS_DIR"]) if environ.get("WIZARD_SKILLS_DIR") else None
    )
    if local is not None:
        if not local.is_dir():
            raise UsageError(
                f"The skills folder {local} ({setting}) does not exist.",
                f"Point {setting} at a folder of skills (one sub-folder with a SKILL.md each), "
                "or leave it unset to use the bundled skills.",
            )
        sources.append(DirectorySkills(local))
    if environ.get("WIZARD_SKILLS_URL"):
        sources.append(RemoteSkills(environ["WIZARD_SKILLS_URL"]))
    sources.append(BundledSkills())
    return ChainedSkills(sources)


def check_skill(skills: SkillSource, skill_id: str) -> None:
    """The skill must exist and be well formed where it will come from, before a run starts."""
    try:
        offered = [entry.id for entry in skills.menu()]
    except SkillFetchError:
        return  # the install step reports an unreadable menu, with its fix
    if skill_id not in offered:
        raise UsageError(
            f"Unknown skill '{skill_id}'.",
            did_you_mean(skill_id, offered) + " Run `wizard programs` to list the bundled "
            "skills, or point --skills-dir at a folder that holds it.",
        )
    skills.check(skill_id)


def preview_wanted(flag: bool | None, environ: Mapping[str, str]) -> bool:
    """Whether the run is a preview: `--preview`/`--no-preview`, else `WIZARD_PREVIEW` (the
    config file's `[run] preview`)."""
    if flag is not None:
        return flag
    return switch_setting(environ, "WIZARD_PREVIEW", default=False)


def _max_parallel(flag: int | None, environ: Mapping[str, str]) -> int:
    """The orchestrator's limit on task runs at once: `--max-parallel`, else
    `WIZARD_MAX_PARALLEL_TASKS`, else 3; at least 1."""
    value = (
        flag
        if flag is not None
        else number_setting(environ, "WIZARD_MAX_PARALLEL_TASKS", DEFAULT_MAX_PARALLEL, int)
    )
    if value < 1:
        raise UsageError(
            f"The orchestrator needs at least one task at a time (got {value}).",
            "Pass --max-parallel N (or set WIZARD_MAX_PARALLEL_TASKS) with N ≥ 1.",
        )
    return value
