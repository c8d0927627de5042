"""A fleet from the outside: connect to Temporal, start or join a fleet, serve as a worker,
read its burndown, cancel it.

The embedded server (`server.py`, reached through its socket) is used when no address is
given; `--temporal HOST:PORT` (with a namespace, and TLS) reaches an existing cluster
instead. Everything here is async and returns values; the command line (`cli_fleet`) prints them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from wizard.errors import ConfigError, UsageError
from wizard.fleet.activities import Steps
from wizard.fleet.codec import DATA_CONVERTER
from wizard.fleet.model import TASK_QUEUE, Burndown, FleetSpec, Row, Target, repo_workflow_id
from wizard.fleet.seal import fleet_key, sealed
from wizard.fleet.server import connect_embedded, ensure_server, keep_records, running_server
from wizard.fleet.workflows import FleetWorkflow, RepoWorkflow
from wizard.layout import state_root

POLL_SECONDS = 0.5
# The largest start a fleet makes, in bytes (Temporal refuses a payload over 2 MiB).
LARGEST_START = 2_000_000
# Repository workflows' results read at once, for a burndown's earlier rows (`whole`).
READS_AT_ONCE = 32


async def connect(target: Target, start: bool = True) -> Client:
    """A client of `target`, or of the embedded server (through its socket) when no address
    is given: started if it is not up and `start` says so, else a `UsageError`."""
    try:
        if target.address is None:
            server = await asyncio.to_thread(ensure_server) if start else running_server()
            if server is None:
                raise UsageError("The embedded Temporal server is not running, so no fleet "
                                 "is running there.", "Start one: wizard fleet run.")  # fmt: skip
            client = await connect_embedded(server, target.namespace)
            if start:  # a fleet may be started or served: its rows must outlast it
                await keep_records(client)
            return client
        return await Client.connect(target.address, namespace=target.namespace, tls=target.tls,
                                    data_converter=DATA_CONVERTER)  # fmt: skip
    except RuntimeError as exc:  # the SDK's core says a connection failed this way
        where = target.address or "the embedded server"
        hint = "Check --temporal (HOST:PORT), --namespace and --tls."
        raise ConfigError(f"Cannot reach Temporal at {where}: {exc}", hint) from exc


async def start_fleet(
    client: Client, spec: FleetSpec
) -> tuple[WorkflowHandle[FleetWorkflow, Burndown], bool]:
    """Start `spec`'s fleet, each repository's job sealed with the owner's key (`seal`), or
    join it if it exists: running, or finished (its id is never reused: a finished fleet's
    burndown stays what it was, and following it gives that at once); the handle, and
    whether it started. A spec too large for one payload, even compressed, is refused."""
    spec = sealed(spec, fleet_key(make=True))
    (payload,) = await DATA_CONVERTER.encode([spec])
    if (size := payload.ByteSize()) > LARGEST_START:
        fits = len(spec.repos) * LARGEST_START // size
        raise UsageError(f"A fleet of {len(spec.repos):,} repositories is too large for one "
                         f"Temporal payload ({size:,} bytes, of {LARGEST_START:,}).",
                         f"Split the repositories file into fleets of at most {fits:,}, each "
                         "with its own --fleet id.")  # fmt: skip
    try:
        handle = await client.start_workflow(
            FleetWorkflow.run, spec, id=spec.fleet_id,
            task_queue=TASK_QUEUE, id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )  # fmt: skip
        return handle, True
    except WorkflowAlreadyStartedError:
        return client.get_workflow_handle_for(FleetWorkflow.run, spec.fleet_id), False


async def serve(client: Client, steps: Steps, until: Awaitable[object]) -> None:
    """Be a fleet worker until `until` is done: the workflows and `claim` on the shared
    queue, the steps on this worker's own."""
    shared = Worker(client, task_queue=TASK_QUEUE, workflows=[FleetWorkflow, RepoWorkflow],
                    activities=[steps.claim])  # fmt: skip
    own = Worker(client, task_queue=steps.queue, activities=steps.all(),
                 max_concurrent_activities=4 * steps.max_parallel)  # fmt: skip
    async with shared, own:
        await until


def worker_steps(max_parallel: int) -> Steps:
    """The steps of a worker on this machine, its workspaces in wizard's state folder."""
    return Steps(state_root() / "fleet" / "workspaces", max_parallel)


async def follow(
    client: Client,
    handle: WorkflowHandle[FleetWorkflow, Burndown],
    seen: Callable[[Burndown], None],
) -> Burndown:
    """Wait for the fleet's end, handing each new burndown (whole) to `seen`; the last one."""
    known: dict[str, Row] = {}
    result = asyncio.ensure_future(handle.result())
    last: Burndown | None = None
    while not result.done():
        current: Burndown | None = last
        with contextlib.suppress(RPCError):  # not queryable until its first task has run
            current = await whole(client, await handle.query(FleetWorkflow.burndown), known)
        if current is not None and current != last:
            seen(current)
            last = current
        await asyncio.wait([result], timeout=POLL_SECONDS)
    final = await whole(client, result.result(), known)
    if final != last:
        seen(final)
    return final


async def whole(client: Client, burndown: Burndown, known: dict[str, Row] | None = None
                ) -> Burndown:  # fmt: skip
    """`burndown` with every row: a fleet that continued as new names the repositories its
    earlier runs admitted (`Burndown.earlier`), whose rows are their repository workflows'
    results, read here (those already read are in `known`, which keeps what is read: a
    finished row never changes). One whose workflow is gone says so; any other `RPCError`
    is raised."""
    if not burndown.earlier:
        return burndown
    known = {} if known is None else known
    held = {row.repo: row for row in burndown.rows}
    limit = asyncio.Semaphore(READS_AT_ONCE)

    async def read(repo: str) -> None:
        workflow_id = repo_workflow_id(burndown.fleet_id, repo)
        async with limit:
            try:
                handle = client.get_workflow_handle(workflow_id, result_type=Row)
                known[repo] = await handle.result()
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                why = f"its record is gone from Temporal: {exc.message}"
                known[repo] = Row(repo=repo, source="", status="failed", reason=why)

    await asyncio.gather(*(read(repo) for repo in burndown.earlier
                           if repo not in held and repo not in known))  # fmt: skip
    earlier = set(burndown.earlier)
    rows = [held.get(repo) or known[repo] for repo in burndown.earlier]
    rows += [row for row in burndown.rows if row.repo not in earlier]
    return replace(burndown, rows=tuple(rows), earlier=())


async def burndown(client: Client, fleet_id: str | None) -> Burndown:
    """The burndown of fleet `fleet_id` (default: the latest started)."""
    fleet_id = fleet_id or await latest_fleet(client)
    handle = client.get_workflow_handle_for(FleetWorkflow.run, fleet_id)
    try:
        status = (await handle.describe()).status
    except RPCError as exc:
        hint = "`wizard fleet status` shows the latest fleet; check --temporal."
        raise UsageError(f"No fleet {fleet_id!r} at this Temporal.", hint) from exc
    if status == WorkflowExecutionStatus.COMPLETED:
        return await whole(client, await handle.result())
    # A query needs a worker: this process serves the workflows (never a step) while it asks.
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[FleetWorkflow, RepoWorkflow]):
        current = await handle.query(FleetWorkflow.burndown)
    return await whole(client, current)


async def latest_fleet(client: Client) -> str:
    """The id of the fleet started last."""
    async for execution in client.list_workflows("WorkflowType = 'FleetWorkflow'", limit=1):
        return execution.id
    raise UsageError("No fleet has run at this Temporal yet.", "Start one: wizard fleet run.")


async def cancel(client: Client, fleet_id: str) -> None:
    """Ask fleet `fleet_id` to stop: running repositories are cancelled and cleaned up,
    queued ones never start."""
    handle = client.get_workflow_handle_for(FleetWorkflow.run, fleet_id)
    try:
        await handle.cancel()
    except RPCError as exc:
        raise UsageError(f"Cannot cancel fleet {fleet_id!r}: {exc}",
                         "`wizard fleet status` shows the fleets.") from exc  # fmt: skip
