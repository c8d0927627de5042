"""What a program is: the skill it runs, its copy, its abort cases and its binding."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

POSTHOG_DOCS_URL = "https://posthog.com/docs"
# The hosts a PostHog setup talks to: the sandbox lets the agent's commands reach them.
POSTHOG_HOSTS = (
    "us.i.posthog.com",
    "eu.i.posthog.com",
    "us.posthog.com",
    "eu.posthog.com",
    "app.posthog.com",
)


@dataclass(frozen=True)
class ProgramCheck:
    """A check the program's run must pass before wizard says it succeeded: a file the skill
    must write exists, a key the setup needs is in `.env` (by name only), or a command (run in
    the OS sandbox, in the project) exits 0."""

    kind: Literal["file_exists", "env_key", "command"]
    value: str

    @property
    def name(self) -> str:
        """How the outcome and the outro name it."""
        return {
            "file_exists": f"{self.value} exists",
            "env_key": f"{self.value} is in .env",
            "command": self.value,
        }[self.kind]


@dataclass(frozen=True)
class CallSiteProof:
    """Static: every call whose callee ends with one of `calls` (an attribute chain such as
    `checkout.Session.create`) passes `argument` (a keyword in Python, a property of an object
    argument in JavaScript, or inside `params`) holding the key `key`, whose value comes from
    the app (the request, a parameter, a field the app sets: never a constant, nor a field
    nothing sets); and there is at least one such call. A call that creates an object may
    leave it to one of `followed_by` on its result (`customers.update(customer.id, ...)`)."""

    name: str
    calls: tuple[str, ...]
    argument: str
    key: str
    followed_by: tuple[str, ...] = ()
    kind: Literal["static"] = "static"


@dataclass(frozen=True)
class InitOptionProof:
    """Static: the SDK is initialised (a call ending with `call`, such as `posthog.init`) in
    code a page of the app loads (a script, inline or by `src`, of an HTML page or template,
    or a front-end framework's entry, and what they import), and no initialisation sets
    `option` to true (`disable_session_recording`: replay stays on)."""

    name: str
    call: str
    option: str
    kind: Literal["static"] = "static"


@dataclass(frozen=True)
class ConfigProof:
    """Static: the JSON file the skill writes (`path`) validates against `schema`; each field
    in `answered` holds what the user answered to `wizard_ask` in this run (a run no one can
    answer: `defaults`), and the field `remote`, when given, names one of the project's git
    remotes."""

    name: str
    path: str
    schema: Mapping[str, Any]
    answered: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    remote: str | None = None
    kind: Literal["static"] = "static"


@dataclass(frozen=True)
class CallPattern:
    """Calls a static query looks for: those whose callee's last name is one of `names`, in
    a file that imports one of `modules` (any file, when empty)."""

    names: tuple[str, ...]
    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class SendProof:
    """Runtime: wizard calls the entry the skill records in `entry_file` (a JSON object:
    `module` (a Python module or a JavaScript file), `function`, `args`, where the string
    `{recipient}` stands for the probe's recipient) in the run's sandbox, with `host_variable`
    pointing at a local sink and `key_variable` holding a probe key; the sink must receive
    exactly one request to `path` carrying both. The entry must be the app's: a function the
    app had before the run, or one that code it had calls. When the program moves the app
    off another way of sending, none of the calls in `replaces` may be left."""

    name: str
    entry_file: str
    path: str
    key_variable: str
    host_variable: str
    replaces: tuple[CallPattern, ...] = ()
    kind: Literal["runtime"] = "runtime"


@dataclass(frozen=True)
class McpProof:
    """Runtime: wizard starts the MCP server the skill records in `entry_file` (a JSON object:
    `command`, the server's argv; `tool` and `arguments`, one call to make) over stdio in the
    run's sandbox, with `host_variable` pointing at a local sink and `key_variable` holding a
    probe key; it lists the server's tools, calls the recorded one with a maintained MCP
    client, and the sink must receive, after that call, an event with the tool's name as a
    property and the key. The server must be the app's: a file it had before the run, one
    its manifests or MCP configs start, or what its build makes of such a file."""

    name: str
    entry_file: str
    key_variable: str
    host_variable: str
    kind: Literal["runtime"] = "runtime"


@dataclass(frozen=True)
class Fit:
    """What a project needs for a program to fit it, checked on the project before the run:
    source files in one of `languages` (python, javascript), and, in them or in the
    project's manifests, one of `signals` (lowercase words: `mail`, `stripe`). `lacking` says
    what is missing when none is there ("no code here sends email"), `found` what is there
    when the program would fit ("Stripe is used here")."""

    languages: tuple[str, ...]
    signals: tuple[str, ...]
    lacking: str
    found: str
    # Words in a file's path that make it worth reading first (`mailer.py`, `billing/`).
    hints: tuple[str, ...] = ()


# What a program shows about its run before wizard says "set up" (`runner.proofs`).
ProgramProof = CallSiteProof | InitOptionProof | ConfigProof | SendProof | McpProof


@dataclass(frozen=True)
class AbortCase:
    """A screen for a known stop: shown when `match` (case-insensitive) finds the reason."""

    match: str
    message: str
    body: str
    docs_url: str | None = None

    def matches(self, reason: str) -> bool:
        """Whether this case is the one for `reason` (search semantics, like JS `test`)."""
        return re.search(self.match, reason, re.IGNORECASE) is not None


@dataclass(frozen=True)
class ProgramBinding:
    """How a program runs unless the user or the environment says otherwise."""

    sequence: str | None = None
    harness: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Binding:
    """How one run runs, and where each choice came from (flag, env, program, default): the
    switchboard's answer, which a sequence carries."""

    sequence: str
    harness: str
    model: str
    sources: Mapping[str, str] = field(default_factory=dict)


PostRunHook = Callable[[Path], None]


@dataclass(frozen=True)
class TaskType:
    """A kind of step the orchestrator's planner may enqueue, and how its agent works.

    `description` tells the planner what a task of this type is for; `instructions` are the
    program's words to the agent that runs one. `model` and the tool lists, when given,
    replace the run's for these tasks. Only a type the program declares `optional` may be
    enqueued as optional (its failure does not fail the run): the program decides what a
    setup can do without, never the planner.
    """

    id: str
    description: str
    instructions: str
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    optional: bool = False


@dataclass(frozen=True)
class Orchestration:
    """How a program runs as a planned task graph: the planner's brief and its task types."""

    seed_instructions: str
    task_types: tuple[TaskType, ...]

    def task_type(self, type_id: str) -> TaskType:
        """The task type `type_id`; `KeyError` if the program has none by that name."""
        for task_type in self.task_types:
            if task_type.id == type_id:
                return task_type
        raise KeyError(type_id)


# Any program, run as a task graph without a plan of its own: check, change, report.
GENERIC_ORCHESTRATION = Orchestration(
    seed_instructions=(
        "Read the skill, then plan its work as tasks: first one `check` task for the skill's "
        "stop conditions, then one `change` task per step the skill lists (steps that touch "
        "different files need not depend on each other), and a `report` task last if the "
        "skill asks for a report. Every change task depends on the check task."
    ),
    task_types=(
        TaskType(
            "check",
            "Check the skill's stop conditions against the project; change nothing.",
            "Check every stop condition of the skill against the project, in order. If one "
            "holds, write its stop line exactly as the skill gives it. Otherwise report done "
            "with what you found (files, frameworks, entry points) in the handoff.",
        ),
        TaskType(
            "change",
            "Carry out one step of the skill in the project.",
            "Carry out the one step of the skill named in your label, and nothing else. Use "
            "the handoffs for what earlier tasks found and changed.",
        ),
        TaskType(
            "report",
            "Write the report the skill asks for, from the handoffs.",
            "Write the report the skill asks for, from the handoffs of the tasks before you.",
        ),
    ),
)


# What an integration in an app changes: its code, pages and styles, its dependency
# manifests and their locks, an environment template, what git ignores, and documentation.
APP_FILES = (
    "*.py", "*.pyi", "*.js", "*.mjs", "*.cjs", "*.jsx", "*.ts", "*.mts", "*.cts", "*.tsx",
    "*.vue", "*.svelte", "*.astro", "*.html", "*.htm", "*.jinja", "*.jinja2", "*.j2", "*.ejs",
    "*.hbs", "*.handlebars", "*.njk", "*.pug", "*.erb", "*.php", "*.rb", "*.go", "*.java",
    "*.kt", "*.swift", "*.cs", "*.rs", "*.css", "*.scss", "*.md", "*.mdx", "*.rst", "*.txt",
    "package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock",
    "pyproject.toml", "poetry.lock", "uv.lock", "Pipfile", "Pipfile.lock", "Gemfile",
    "Gemfile.lock", "go.mod", "go.sum", "Cargo.toml", "Cargo.lock", "composer.json",
    "composer.lock", ".env.example", ".env.sample", ".env.template", "tsconfig*.json",
    ".gitignore",
)  # fmt: skip


@dataclass(frozen=True)
class ProgramConfig:
    """One program: what a run is for, and what the user sees when it ends."""

    id: str
    label: str
    description: str
    skill: str
    spinner_message: str
    success_message: str
    docs_url: str = POSTHOG_DOCS_URL
    error_message: str | None = None
    abort_cases: tuple[AbortCase, ...] = ()
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    binding: ProgramBinding = field(default_factory=ProgramBinding)
    post_run: PostRunHook | None = None
    report_file: str | None = None
    prompt_intro: str = ""
    orchestration: Orchestration = GENERIC_ORCHESTRATION
    # Hosts the agent's commands may reach besides the package registries (the sandbox).
    network_hosts: tuple[str, ...] = POSTHOG_HOSTS
    # What its run must pass, beside the checks wizard derives from what changed.
    checks: tuple[ProgramCheck, ...] = ()
    # What shows that the integration works: static queries and runtime probes.
    proofs: tuple[ProgramProof, ...] = ()
    # A run sets something up: one that changed no app file and proved nothing never did
    # (`wizard skill` runs a skill that may only read).
    sets_up: bool = True
    # What a project must have for the program to fit it: a project without it ends
    # `not_applicable` before the agent starts (None: any project).
    fits: Fit | None = None
    # The paths its integration may change (patterns; `*` crosses `/`, a pattern without
    # one matches a file's name): all a fleet's published branch may carry of its run,
    # besides the files its checks, proofs and report name (`publishable`).
    publishes: tuple[str, ...] = APP_FILES

    @property
    def written_files(self) -> tuple[str, ...]:
        """The files the program's skill must write (its `file_exists` checks)."""
        return tuple(check.value for check in self.checks if check.kind == "file_exists")

    @property
    def publishable(self) -> tuple[str, ...]:
        """Every path pattern a published branch may carry of a run (`publishes`, and the
        files the program itself names)."""
        named = [*self.written_files, *(self.report_file or "").split()]
        named += [proof.path for proof in self.proofs if isinstance(proof, ConfigProof)]
        return (*self.publishes, *named)

    @property
    def failure_message(self) -> str:
        """The spinner's text when the run fails."""
        return self.error_message or f"{self.label} failed"

    def abort_case_for(self, reason: str) -> AbortCase | None:
        """The first declared case that matches `reason`."""
        return next((case for case in self.abort_cases if case.matches(reason)), None)
