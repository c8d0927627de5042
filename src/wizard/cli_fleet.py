"""`wizard fleet`: one program across many repositories, durable on Temporal.

    wizard fleet run PROGRAM --repos FILE   start a fleet (or join it), serve it, burndown
    wizard fleet worker                     serve fleets on this machine too
    wizard fleet status [FLEET]             the burndown of a fleet (the latest by default)
    wizard fleet cancel FLEET               stop a fleet cleanly
    wizard fleet server stop                stop the embedded Temporal server

`wizard.cli` registers this app; like it, nothing here exits but through Typer. Temporal is
imported only inside the commands, with an install hint when it is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from wizard.cli_options import HarnessOpt, ModelOpt, a_duration, above_zero
from wizard.cli_refusals import cancellable, usage_exit
from wizard.errors import UsageError, WizardError
from wizard.outcome import EXIT_CANCELLED
from wizard.runner.harness.registry import HARNESSES, harness_names

if TYPE_CHECKING:
    from wizard.fleet.model import Burndown, Repo, Target
    from wizard.fleet.service import Client

_T = TypeVar("_T")
_CONTEXT = {"help_option_names": ["-h", "--help"]}
fleet_app = typer.Typer(help="Run one program across many repositories, durably (Temporal).",
                        no_args_is_help=True, context_settings=_CONTEXT)  # fmt: skip
server_app = typer.Typer(help="The embedded Temporal server.", no_args_is_help=True)
fleet_app.add_typer(server_app, name="server")

TemporalOpt = Annotated[
    str | None,
    typer.Option("--temporal", metavar="HOST:PORT",
                 help="An existing Temporal cluster (default: the embedded server).  "
                      "[env var: WIZARD_TEMPORAL]"),
]  # fmt: skip
NamespaceOpt = Annotated[str, typer.Option("--namespace", help="The Temporal namespace.")]
TlsOpt = Annotated[bool, typer.Option("--tls", help="Connect to --temporal over TLS.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="The burndown as JSON.")]
WorkerParallel = Annotated[
    int, typer.Option("--max-parallel", min=1, help="Repositories at once, on this worker.")
]


def _target(command: str, temporal: str | None, namespace: str, tls: bool) -> Target:
    """Which Temporal the command uses; a bad address is a usage error (exit 2)."""
    from wizard.fleet.model import Target

    address = temporal or os.environ.get("WIZARD_TEMPORAL") or None
    pattern = r"[\w.-]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5}"
    if address is not None and not re.fullmatch(pattern, address):
        error = UsageError(
            f"--temporal {address!r} is not HOST:PORT.", "For example: localhost:7233."
        )
        raise usage_exit(error, f"fleet {command}")
    return Target(address, namespace, tls)


def _with_temporal(command: str, work: Callable[[Client], Awaitable[_T]], target: Target) -> _T:
    """Connect (the embedded server by default) and do `work`; errors in wizard's words."""
    try:
        from wizard.fleet.service import connect
    except ImportError as exc:
        from wizard.fleet.server import INSTALL_HINT

        raise usage_exit(WizardError(f"`wizard fleet` needs Temporal's SDK: {exc}.", INSTALL_HINT),
                         f"fleet {command}") from exc  # fmt: skip

    async def go() -> _T:
        # Reading or stopping fleets never starts a server: one that is not up runs none.
        return await work(await connect(target, start=command in ("run", "worker")))

    try:
        return asyncio.run(go())
    except WizardError as exc:
        raise usage_exit(exc, f"fleet {command}") from exc


def _check_forges(repos: Sequence[Repo]) -> None:
    """Each repository's forge known, and a token for it here: a `UsageError` naming the
    setting otherwise, before anything starts."""
    from wizard.fleet.forges import ForgeError, forge_of, token_for

    for repo in repos:
        try:
            token_for(forge_of(repo.source, os.environ).kind, os.environ)
        except ForgeError as exc:
            raise UsageError(f"--publish pull-request: {exc}.", _FORGE_HINT) from exc


_FORGE_HINT = (
    "A pull request is opened through the forge's API with the worker's GITHUB_TOKEN or "
    "GITLAB_TOKEN; WIZARD_FORGE and WIZARD_FORGE_API name a forge its URL does not."
)


def _rate(text: str | None) -> float | None:
    if text is None:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*/\s*(min|m|h|hour)", text.strip())
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"--rate {text!r} is not a pace.", "Give it as N/min or N/h, e.g. 6/min.")
    per = 60.0 if match.group(2) in ("h", "hour") else 1.0
    return float(match.group(1)) / per


@fleet_app.command("run")
def run(
    program: Annotated[str, typer.Argument(metavar="PROGRAM", help="The program to run.")],
    repos: Annotated[
        Path,
        typer.Option("--repos", help="One repository a line: a path or git URL, and a branch."),
    ],
    fleet: Annotated[
        str | None,
        typer.Option("--fleet", help="The fleet's id (default: from the program and the file)."),
    ] = None,
    max_parallel: Annotated[
        int,
        typer.Option(
            "--max-parallel", min=1, help="Repositories at once, fleet-wide and on this worker."
        ),
    ] = 2,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost", min=0.0, help="USD, fleet-wide: no repository starts once spent."
        ),
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option("--rate", help="Repositories started per minute at most, e.g. 6/min."),
    ] = None,
    publish: Annotated[
        str,
        typer.Option(
            "--publish",
            help="none; branch: commit each result to wizard/PROGRAM; pull-request: and open "
            "(or update) a pull request from it (GitHub, GitLab).",
        ),
    ] = "none",
    run_max_cost: Annotated[
        float | None,
        typer.Option("--run-max-cost", callback=above_zero, help="USD per repository's run."),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Model requests per run.")
    ] = None,
    max_time: Annotated[
        str | None, typer.Option("--max-time", callback=a_duration, help="Time per run, e.g. 10m.")
    ] = None,
    verify: Annotated[str | None, typer.Option("--verify", help="basic or full, per run.")] = None,
    harness: HarnessOpt = None,
    model: ModelOpt = None,
    no_worker: Annotated[
        bool,
        typer.Option(
            "--no-worker", help="Start the fleet; leave the work to `wizard fleet worker`s."
        ),
    ] = False,
    temporal: TemporalOpt = None,
    namespace: NamespaceOpt = "default",
    tls: TlsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run PROGRAM on every repository of --repos, and print the burndown.

    Exit code: 0 when every repository ended set up, 1 otherwise (the burndown says how
    each ended). The fleet is durable: run the same command again to join it after a crash.
    """
    from wizard.fleet.model import FleetSpec, RunOptions
    from wizard.fleet.repos import fleet_id_for, read_repos
    from wizard.fleet.seal import ID
    from wizard.programs import get_program

    try:
        get_program(program)
        if publish not in ("none", "branch", "pull-request"):
            raise UsageError(
                f"--publish {publish!r} is not a way to publish.",
                "Use none, branch or pull-request.",
            )
        if verify not in (None, "basic", "full"):
            raise UsageError(f"--verify {verify!r} is not a level.", "Use basic or full.")
        if harness is not None and harness not in HARNESSES:
            raise UsageError(f"Unknown harness {harness!r}.", f"Use {harness_names()}.")
        if not no_worker:
            _check_gateway()
        if fleet is not None and not ID.fullmatch(fleet):
            raise UsageError(f"--fleet {fleet!r} is not a fleet id.",
                             "Use letters, digits, '.', '_' and '-' (up to 100), starting with "
                             "a letter or digit.")  # fmt: skip
        spec = FleetSpec(
            fleet_id=fleet or fleet_id_for(program, repos), program=program,
            repos=read_repos(repos),
            run=RunOptions(harness, model, verify, max_turns, max_time, run_max_cost),
            max_parallel=max_parallel, max_cost=max_cost, rate_per_minute=_rate(rate),
            publish="pull-request" if publish == "pull-request"
            else "branch" if publish == "branch" else "none",
        )  # fmt: skip
        if publish == "pull-request" and not no_worker:  # this process's worker publishes
            _check_forges(spec.repos)
    except WizardError as exc:
        raise usage_exit(exc, "fleet run") from exc
    target = _target("run", temporal, namespace, tls)

    async def work(client: Client) -> Burndown:
        from wizard.fleet.service import follow, serve, start_fleet, whole, worker_steps

        handle, started = await start_fleet(client, spec)
        if not started and (await handle.describe()).close_time is not None:
            typer.echo(f"Fleet {spec.fleet_id} has finished; its burndown follows. To run "
                       f"{program} on these repositories again, give the new fleet an id of "
                       "its own: --fleet ID.", err=True)  # fmt: skip
            return await whole(client, await handle.result())
        typer.echo(f"{'Started' if started else 'Joined'} fleet {spec.fleet_id}: {program} on "
                   f"{len(spec.repos)} repositories.", err=True)  # fmt: skip
        watched = asyncio.ensure_future(follow(client, handle, _progress()))
        if not no_worker:
            await serve(client, worker_steps(max_parallel), watched)
        return await watched

    final = _interruptible(lambda: _with_temporal("run", work, target), spec.fleet_id)
    _show(final, as_json)
    raise typer.Exit(0 if final.succeeded else 1)


@fleet_app.command("worker")
def worker(
    max_parallel: WorkerParallel = 2,
    temporal: TemporalOpt = None,
    namespace: NamespaceOpt = "default",
    tls: TlsOpt = False,
) -> None:
    """Serve fleets on this machine: take repositories, run them in their own sandbox, until
    Ctrl-C or SIGTERM (a repository it was running is taken again)."""
    try:
        _check_gateway()
    except WizardError as exc:
        raise usage_exit(exc, "fleet worker") from exc
    target = _target("worker", temporal, namespace, tls)

    async def work(client: Client) -> None:
        from wizard.fleet.service import serve, worker_steps

        steps = worker_steps(max_parallel)
        typer.echo(f"Worker serving fleets ({steps.queue}); Ctrl-C stops it.", err=True)
        await serve(client, steps, _stopped())

    _with_temporal("worker", work, target)


@fleet_app.command("status")
def status(
    fleet: Annotated[
        str | None, typer.Argument(metavar="[FLEET]", help="The fleet (default: the latest).")
    ] = None,
    temporal: TemporalOpt = None,
    namespace: NamespaceOpt = "default",
    tls: TlsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Print a fleet's burndown: one row per repository, totals, cost and time."""
    target = _target("status", temporal, namespace, tls)

    async def work(client: Client) -> Burndown:
        from wizard.fleet.service import burndown

        return await burndown(client, fleet)

    shown = _with_temporal("status", work, target)
    _show(shown, as_json)


@fleet_app.command("cancel")
def cancel(
    fleet: Annotated[str, typer.Argument(metavar="FLEET", help="The fleet to stop.")],
    temporal: TemporalOpt = None,
    namespace: NamespaceOpt = "default",
    tls: TlsOpt = False,
) -> None:
    """Stop a fleet: running repositories are stopped and cleaned up, queued ones never start."""
    target = _target("cancel", temporal, namespace, tls)

    async def work(client: Client) -> None:
        from wizard.fleet.service import cancel as cancel_fleet

        await cancel_fleet(client, fleet)

    _with_temporal("cancel", work, target)
    typer.echo(f"Asked fleet {fleet} to stop; `wizard fleet status {fleet}` follows it.")


@server_app.command("stop")
def server_stop() -> None:
    """Stop the embedded Temporal server (its state stays for the next start)."""
    from wizard.fleet.server import stop_server

    stopped = stop_server()
    typer.echo(f"Stopped the embedded Temporal server ({stopped.address})." if stopped
               else "The embedded Temporal server is not running.")  # fmt: skip


def _check_gateway() -> None:
    """A worker's runs read the gateway from its environment: it must have one."""
    from wizard.config import with_config
    from wizard.runner.gateway import GatewayFlags, resolve_gateway

    resolve_gateway(GatewayFlags(), with_config(os.environ))


async def _stopped() -> None:
    """Wait for SIGTERM (Ctrl-C arrives as a cancellation)."""
    import signal

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()


def _interruptible(work: Callable[[], _T], fleet_id: str) -> _T:
    try:
        return work()
    except KeyboardInterrupt:
        typer.echo(f"\nStopped following fleet {fleet_id}; it goes on at Temporal. "
                   f"Run the same command to join it again, or `wizard fleet cancel {fleet_id}`.",
                   err=True)  # fmt: skip
        raise typer.Exit(130) from None


def _progress() -> Callable[[Burndown], None]:
    """Each repository's change of status, as a line on stderr."""
    from wizard.ui.fleet import progress_line

    shown: dict[str, str] = {}

    def seen(burndown: Burndown) -> None:
        for row in burndown.rows:
            if shown.get(row.repo) != row.status:
                shown[row.repo] = row.status
                if row.status != "queued":
                    typer.echo(progress_line(row), err=True)

    return seen


def _show(burndown: Burndown, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(burndown.to_dict(), indent=1, sort_keys=True))
        return
    from wizard.ui.console import make_console
    from wizard.ui.fleet import burndown_view

    make_console().print(burndown_view(burndown))


def _interrupted_before(argv: list[str]) -> int:
    """Ctrl-C in a fleet command before it follows a fleet (`_interruptible` says what goes on
    then): one line, no run's cancelled screen (a fleet command runs no program itself)."""
    typer.echo("\nInterrupted: nothing more was started.", err=True)
    return EXIT_CANCELLED


cancellable(fleet_app, server_app, report=_interrupted_before)
