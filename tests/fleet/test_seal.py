"""A worker runs only what its owner started: each job is sealed with the owner's key, and a
job with another seal, a changed source or branch, or ids that are not folder names is
refused before any step touches the disk."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from wizard.errors import ConfigError
from wizard.fleet import seal
from wizard.fleet.activities import Steps
from wizard.fleet.model import FleetSpec, Repo, RepoJob, Workspace

KEY = b"k" * 64


def _spec(**changes: object) -> FleetSpec:
    spec = FleetSpec("fleet-1", "revenue-analytics", (Repo("web", "/srv/web"),), publish="branch")
    return replace(spec, **changes)  # type: ignore[arg-type]


def _job(spec: FleetSpec, key: bytes = KEY) -> RepoJob:
    return seal.sealed(spec, key).job(seal.sealed(spec, key).repos[0])


def test_a_sealed_job_passes_and_any_change_to_it_does_not() -> None:
    job = _job(_spec())
    seal.check(job, KEY)
    forged = [
        replace(job, repo=replace(job.repo, source="https://evil.example/x.git")),
        replace(job, repo=replace(job.repo, branch="main")),
        replace(job, branch="main"),
        replace(job, program="other"),
        replace(job, run=replace(job.run, harness="anthropic")),
        replace(job, repo=replace(job.repo, seal="")),
    ]
    for changed in forged:
        with pytest.raises(seal.Unsealed, match="does not match this worker's fleet key"):
            seal.check(changed, KEY)
    with pytest.raises(seal.Unsealed, match="does not match"):
        seal.check(job, b"another owner's key" * 3)


@pytest.mark.parametrize("fleet_id", ["/root/.ssh", "..", ".", "a/b", "", "-x"])
def test_ids_that_are_not_one_folder_name_are_refused_even_sealed(fleet_id: str) -> None:
    with pytest.raises(seal.Unsealed, match="is not a folder name"):
        seal.check(_job(_spec(fleet_id=fleet_id)), KEY)


def test_the_key_is_made_once_owner_only_and_refused_when_others_may_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "keys" / "fleet.key"
    monkeypatch.setenv("WIZARD_FLEET_KEY_FILE", str(path))
    with pytest.raises(ConfigError, match="Cannot read the fleet key"):
        seal.fleet_key()
    made = seal.fleet_key(make=True)
    assert len(made) == 64 and seal.fleet_key(make=True) == made
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="not the user's alone") as refused:
        seal.fleet_key()
    assert "0600" in (refused.value.hint or "")


def test_a_forged_job_leaves_the_disk_alone(tmp_path: Path) -> None:
    """The attack that was seen: a job whose fleet id is an absolute path had `clean_up`
    delete a folder inside a 0700 directory, and one with another source was cloned."""
    victim = tmp_path / "private" / "secrets"
    victim.mkdir(parents=True)
    (victim / "kept.txt").write_text("kept\n")
    steps = Steps(tmp_path / "workspaces", 2, key=KEY)
    env = ActivityEnvironment()
    planted = RepoJob(str(victim.parent), "p", Repo(victim.name, "/srv/x"), _spec().run, True,
                      "wizard/p")  # fmt: skip
    foreign = _job(_spec(), b"another owner's key" * 3)
    for job in (planted, foreign):
        for step in (steps.claim, steps.prepare, steps.clean_up):
            with pytest.raises(ApplicationError, match="will not run it") as refused:
                asyncio.run(env.run(step, job))
            assert refused.value.non_retryable and refused.value.type == "Refused"
    own = _job(_spec())
    elsewhere = Workspace(steps.queue, str(victim))
    with pytest.raises(ApplicationError, match="is not the job's workspace"):
        asyncio.run(env.run(steps.publish, own, elsewhere, None))
    assert (victim / "kept.txt").read_text() == "kept\n"
    assert not (tmp_path / "workspaces").exists() and not steps.taken
    assert os.listdir(victim.parent) == ["secrets"]
