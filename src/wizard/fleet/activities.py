"""A fleet's steps, as Temporal activities run by a worker.

`claim` runs on the fleet's shared task queue: the worker that takes it has a free slot and
answers with its own queue, where the repository's other steps then run (its workspace is
on that worker's disk). `run` is `wizard run --preview` itself, as a process: a fleet never
re-implements a run. Its outcome decides whether another attempt is worth it: an engine
failure, an API error or a rate limit are retried by Temporal with backoff; an abort case, a
security violation, an unverified result, a spent budget, or any other ending is the
repository's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from wizard.config import number_setting
from wizard.fleet import forges, gitwork, seal
from wizard.fleet.model import Published, RepoJob, RunResult, Workspace
from wizard.processes import with_parent_death
from wizard.programs import get_program
from wizard.walk import remove_tree

# Endings of a run worth another attempt: the gateway or the engine broke, not the work.
RATE_LIMITED = "WIZARD_RATE_LIMIT"
RETRIED = frozenset({"WIZARD_API_ERROR", RATE_LIMITED, "WIZARD_ENGINE_FAILURE"})
HEARTBEAT_SECONDS = 2.0
T = TypeVar("T")


class Steps:
    """The activities of one worker: its own task queue, its workspaces' folder, and how
    many repositories it takes at once."""

    def __init__(
        self,
        root: Path,
        max_parallel: int,
        # `-P`, and the workspace as its folder: nothing of the folder the worker was started
        # in is on the run's Python path.
        wizard: Sequence[str] = (sys.executable, "-P", "-m", "wizard"),
        key: bytes | None = None,
    ) -> None:
        self.root = root
        self.key = key if key is not None else seal.fleet_key(make=True)
        self.max_parallel = max_parallel
        self.queue = worker_queue(root)
        self.wizard = tuple(wizard)  # how to start `wizard` (a test's stand-in, at this edge)
        self.taken: set[str] = set()
        # The repositories whose run (a `wizard run` process) is going or still ending here.
        self.running: set[str] = set()

    def all(self) -> list[Any]:
        """The step activities (those on the worker's own queue)."""
        return [self.prepare, self.run, self.publish, self.clean_up]

    @activity.defn(name="claim")
    async def claim(self, job: RepoJob) -> str:
        """Take `job` if this worker has a free slot: its own task queue; if not, a retried
        error, so that the next attempt may reach another worker."""
        self._admit(job)
        if job.workflow_id not in self.taken and len(self.taken) >= self.max_parallel:
            raise _failure("every slot of this worker is taken", type="Busy")
        self.taken.add(job.workflow_id)
        return self.queue

    def _admit(self, job: RepoJob, workspace: Workspace | None = None) -> None:
        """Refuse, for good, a job this worker's owner did not start (its seal), with ids that
        are not folder names, or a workspace that is not the job's own."""
        try:
            seal.check(job, self.key)
        except seal.Unsealed as exc:
            raise _failure(f"this worker will not run it: {exc}", type="Refused",
                                   non_retryable=True) from exc  # fmt: skip
        if workspace is not None and Path(workspace.folder) != self._folder(job):
            raise _failure(f"{workspace.folder} is not the job's workspace",
                                   type="Refused", non_retryable=True)  # fmt: skip

    def _folder(self, job: RepoJob) -> Path:
        return self.root / job.fleet_id / job.repo.id

    @contextlib.asynccontextmanager
    async def _step(self, job: RepoJob) -> AsyncIterator[None]:
        """One step of `job`. If its workflow is gone while the step goes (terminated, or
        deleted: its cancellation says not found), no clean-up step will ever come for it,
        so the step removes the workspace and frees the slot itself before it ends."""
        try:
            yield
        except asyncio.CancelledError:
            details = activity.cancellation_details()
            if details is not None and details.not_found:
                with contextlib.suppress(Exception):  # it was cancelled all the same
                    await asyncio.shield(asyncio.to_thread(self._forget, job))
            raise

    def _forget(self, job: RepoJob) -> None:
        """Remove the job's workspace (and the fleet's folder, once empty), and free its slot."""
        self._remove(job)
        with contextlib.suppress(OSError):
            self._folder(job).parent.rmdir()
        self.taken.discard(job.workflow_id)

    def _remove(self, job: RepoJob) -> Path:
        """Remove the job's workspace, whatever modes the agent left in its preview; a
        retried error while a run of an earlier attempt is still ending here. Its folder."""
        if job.workflow_id in self.running:
            raise _failure("an earlier attempt's run is still ending", type="StillRunning")
        folder = self._folder(job)
        remove_tree(folder)
        return folder

    @activity.defn(name="prepare")
    async def prepare(self, job: RepoJob) -> Workspace:
        """A clean workspace for `job`: whatever an earlier attempt left goes, then a clone."""
        self._admit(job)
        self.taken.add(job.workflow_id)
        async with self._step(job):
            folder = await _beating(asyncio.to_thread(self._remove, job))
            folder.mkdir(parents=True)
            try:
                base = await _beating(asyncio.to_thread(gitwork.clone, job.repo, folder / "repo"))
            except gitwork.GitFailed as exc:
                raise _failure(
                    f"could not clone {job.repo.source}: {exc}",
                    type="CloneFailed",
                    non_retryable=gitwork.cannot_succeed(str(exc)),
                ) from exc
            return Workspace(self.queue, str(folder), base)

    @activity.defn(name="run")
    async def run(self, job: RepoJob, workspace: Workspace) -> RunResult:
        """`wizard run --preview` on the workspace; its outcome, or a retried error."""
        self._admit(job, workspace)
        if job.workflow_id in self.running:
            raise _failure("an earlier attempt's run is still ending", type="StillRunning")
        async with self._step(job):
            self.running.add(job.workflow_id)
            try:
                return await self._run(job, Path(workspace.folder))
            finally:
                self.running.discard(job.workflow_id)

    async def _run(self, job: RepoJob, folder: Path) -> RunResult:
        outcome_file, state = folder / "outcome.json", folder / "state"
        # The run's journal, preview and lock are the workspace's (`run_env`): an earlier
        # attempt's go, and all of them go with the workspace.
        await asyncio.to_thread(remove_tree, state)
        outcome_file.unlink(missing_ok=True)
        command = [*self.wizard, "run", job.program, "--project",
                   str(folder / "repo"), "--preview", "--patch-out", str(folder / "change.patch"),
                   "--outcome-json", str(outcome_file), "--ci", *job.run.arguments()]  # fmt: skip
        started = time.monotonic()
        code, tail = await _run_wizard(command, run_env(os.environ, state), folder)
        if not outcome_file.is_file():
            kind = "UsageError" if code == 2 else "WIZARD_ENGINE_FAILURE"
            raise _failure(f"wizard run ended {code} with no outcome: {tail}", type=kind,
                                   non_retryable=code == 2)  # fmt: skip
        outcome = json.loads(outcome_file.read_text(encoding="utf-8"))
        result = replace(run_result(outcome, time.monotonic() - started),
                         attempt=activity.info().attempt)  # fmt: skip
        if result.status == "cancelled":  # stopped from outside this worker: not its result
            raise _failure(f"wizard run was interrupted: {tail}", type="Interrupted")
        if result.status == "failed" and result.error_type in RETRIED:
            wait = None
            if result.error_type == RATE_LIMITED:  # the gateway wants fewer runs: slow the fleet
                wait = rate_limit_wait(result.attempt)
                fleet = activity.client().get_workflow_handle(job.fleet_id)
                await fleet.signal("slow_down", wait.total_seconds())
            raise _failure(result.reason or result.error_type or "failed",
                                   type=result.error_type, next_retry_delay=wait)  # fmt: skip
        return result

    @activity.defn(name="publish")
    async def publish(self, job: RepoJob, workspace: Workspace, result: RunResult) -> Published:
        """The run's patch as a commit on the fleet's branch of the repository, and a pull
        request from it opened or updated if the fleet asks for one (`forges`)."""
        self._admit(job, workspace)
        async with self._step(job):
            return await self._publish(job, workspace, result)

    async def _publish(self, job: RepoJob, workspace: Workspace, result: RunResult) -> Published:
        folder = Path(workspace.folder)
        patch = folder / "change.patch"
        text = patch.read_bytes().decode(errors="surrogateescape") if patch.is_file() else ""
        proofs = "".join(f"- {proof}\n" for proof in result.proofs)
        message = (f"wizard: {job.program}\n\nSet up by `wizard run {job.program}` "
                   f"({result.ended}).\n" + (f"\nProofs:\n{proofs}" if proofs else ""))  # fmt: skip
        try:
            published = await _beating(asyncio.to_thread(
                gitwork.publish, folder / "repo", workspace.base_commit, text, job.branch,
                message, result.changed_files, get_program(job.program).publishable,
            ))  # fmt: skip
        except gitwork.GitFailed as exc:
            raise _failure(f"could not publish: {exc}", type="PublishFailed") from exc
        if not job.pull_request or published.state == "nothing to publish":
            return published
        try:
            proposal = await _beating(
                asyncio.to_thread(_propose, job, result, published, os.environ)
            )
        except forges.ForgeError as exc:
            raise _failure(f"could not open the pull request: {exc}",
                           type="PublishFailed") from exc  # fmt: skip
        return replace(published, pull_request=proposal.url)

    @activity.defn(name="clean_up")
    async def clean_up(self, job: RepoJob) -> None:
        """Remove the repository's workspace (its run's journal and preview with it), and free
        its slot."""
        self._admit(job)
        await _beating(asyncio.to_thread(self._forget, job))


def _propose(
    job: RepoJob, result: RunResult, published: Published, environ: Mapping[str, str]
) -> forges.Proposal:
    """The pull request from the fleet's branch, opened or updated, its body the run's
    ending, proofs, cost and what the branch left out."""
    forge = forges.forge_of(job.repo.source, environ)
    token = forges.token_for(forge.kind, environ)
    body = pull_request_body(job, result, published)
    return forges.propose(forge, token, job.branch, job.repo.branch, f"wizard: {job.program}", body)


def pull_request_body(job: RepoJob, result: RunResult, published: Published) -> str:
    """What a pull request says: how the run ended, its proofs, its cost, what the branch
    left out, and how it was made (so a rerun updates it)."""
    lines = [f"Set up by `wizard run {job.program}`: **{result.ended}**.", ""]
    if result.proofs:
        lines += ["Proofs:", *(f"- {proof}" for proof in result.proofs), ""]
    if result.cost_usd is not None:
        lines += [f"Cost: ${result.cost_usd:.4f} ({result.seconds:.0f} s).", ""]
    if published.left_out:
        lines += ["Left out of this branch (the fleet publishes only what the program may "
                  "change):", *(f"- {path}" for path in published.left_out), ""]  # fmt: skip
    lines.append(f"Opened by wizard's fleet `{job.fleet_id}` from `{job.branch}`; running the "
                 "fleet again updates this pull request.")  # fmt: skip
    return "\n".join(lines)


def _failure(message: str, **options: Any) -> ApplicationError:
    """A step's failure: the repository's row says it, so the worker logs it at debug level
    only (a failed clone printed a hundred lines of tracebacks)."""
    return ApplicationError(message, category=ApplicationErrorCategory.BENIGN, **options)


def rate_limit_wait(attempt: int) -> timedelta:
    """How long a rate-limited run waits before its next attempt: `WIZARD_FLEET_RATE_WAIT`
    seconds (default 30), doubled at each attempt, at most 10 minutes."""
    first = number_setting(os.environ, "WIZARD_FLEET_RATE_WAIT", 30.0, float)
    return timedelta(seconds=min(first * 2 ** (attempt - 1), 600.0))


# What gives git or a forge write access: the publish step's alone, never a run's.
WRITE_CREDENTIALS = frozenset({
    "SSH_AUTH_SOCK", "SSH_ASKPASS", "GIT_ASKPASS", "GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN",
    "GL_TOKEN", "BITBUCKET_TOKEN", "GIT_SSH", "GIT_SSH_COMMAND",
})  # fmt: skip


def run_env(environ: Mapping[str, str], state: Path) -> dict[str, str]:
    """A run's environment: the worker's, without a credential that could push (`GIT_*`
    included, which could point git at another config), and with its state (its journal,
    its preview's copy, its project's lock) in `state`, the workspace's."""
    kept = {key: value for key, value in environ.items()
            if key not in WRITE_CREDENTIALS and not key.startswith("GIT_")}  # fmt: skip
    return kept | {"WIZARD_STATE_DIR": str(state)}


def worker_queue(root: Path) -> str:
    """A worker's own task queue: its machine and its workspaces' folder (two workers that
    share a folder share the queue, and so each other's workspaces)."""
    return f"wizard-fleet@{socket.gethostname()}:{root}"


def run_result(outcome: dict[str, Any], seconds: float) -> RunResult:
    """How a run ended, from its outcome (`Outcome.to_dict`): its row says proven or set up
    (succeeded), aborted, not applicable (the program does not fit the repository),
    unverified, or failed (any other ending, a refused run included)."""
    status = outcome.get("status", "failed")
    proofs = tuple(f"{p['name']}: {p['status']}"
                   for p in (outcome.get("verification") or {}).get("proofs") or ())  # fmt: skip
    ended = {"aborted": "aborted", "unverified": "unverified",
             "not_applicable": "not applicable"}.get(status, "failed")  # fmt: skip
    if status == "succeeded":
        ended = "proven" if proofs and all(p.endswith(": proven") for p in proofs) else "set up"
    usage = outcome.get("usage") or {}
    return RunResult(
        status=status, exit_code=int(outcome.get("exit_code", 1)), ended=ended,
        reason=outcome.get("reason") or "", error_type=outcome.get("error_type"),
        source=outcome.get("source"), cost_usd=usage.get("cost_usd"), seconds=seconds,
        proofs=proofs, changed_files=tuple(outcome.get("changed_files") or ()),
    )  # fmt: skip


async def _beating(work: Awaitable[T]) -> T:
    """`work`'s result, heartbeating while it goes: every step on a worker has a heartbeat
    timeout, so a worker that dies in the middle of one is known in seconds and the step is
    tried again (on its queue, which a worker started again takes up), not at the step's
    end-to-end limit (a killed worker's publish waited out its 10 minutes)."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_SECONDS)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        task.cancel()


async def _run_wizard(command: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run `command` to its end, heartbeating; on cancellation (or this worker's death) it
    gets SIGTERM and its own clean teardown. Its exit code and the tail of its errors."""
    process = await asyncio.create_subprocess_exec(
        *with_parent_death(command), env=env, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    assert process.stderr is not None
    errors = asyncio.ensure_future(process.stderr.read())
    try:
        code = await _beating(process.wait())
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await process.wait()
        raise
    return code, (await errors).decode(errors="replace")[-800:]
