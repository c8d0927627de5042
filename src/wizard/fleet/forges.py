"""Pull requests on GitHub and merge requests on GitLab, for `--publish pull-request`.

Once a result is pushed to the fleet's branch (`gitwork.publish`), the publish step opens a
pull request from that branch, or updates the one already open, through the forge's REST
API. It is idempotent: a rerun finds the open one by its branch and updates its title and
body (or leaves it be when they are the same); it never opens a second.

The calls, and nothing else:

- GitHub (`Authorization: Bearer`, API version 2022-11-28):
  `GET /repos/{owner}/{repo}/pulls?head={owner}:{branch}&state=open`, then
  `PATCH /repos/{owner}/{repo}/pulls/{number}` (title, body) if one is open, else
  `GET /repos/{owner}/{repo}` (its default branch, when the repository line names none) and
  `POST /repos/{owner}/{repo}/pulls` (title, head, base, body);
- GitLab (`PRIVATE-TOKEN`):
  `GET /projects/{path}/merge_requests?source_branch={branch}&state=opened`, then
  `PUT /projects/{path}/merge_requests/{iid}` (title, description) if one is open, else
  `GET /projects/{path}` and `POST /projects/{path}/merge_requests` (source_branch,
  target_branch, title, description).

Which forge, and where its API is, comes from the repository's URL (github.com, a host
with `gitlab` in its name), or from the worker's `WIZARD_FORGE` (`github`, `gitlab`) and
`WIZARD_FORGE_API` (the API's base URL: a GitHub Enterprise or self-hosted GitLab). The
token is the worker's `GITHUB_TOKEN` / `GH_TOKEN` or `GITLAB_TOKEN` / `GL_TOKEN`, read here,
in the publish step, alone: a run never sees it (`activities.run_env`). It is sent to the
API's base URL only, and never after a redirect, nor over plain HTTP but to this machine.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

ForgeKind = Literal["github", "gitlab"]
TOKENS: dict[ForgeKind, tuple[str, ...]] = {
    "github": ("GITHUB_TOKEN", "GH_TOKEN"),
    "gitlab": ("GITLAB_TOKEN", "GL_TOKEN"),
}
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")  # git@host:owner/repo.git


class ForgeError(Exception):
    """A pull request could not be opened or updated; the message says why, never the
    token."""


@dataclass(frozen=True)
class Forge:
    """A repository on a forge: which API, where, and its path there (`owner/repo`, or
    GitLab's `group/subgroup/project`)."""

    kind: ForgeKind
    api: str
    path: str


@dataclass(frozen=True)
class Proposal:
    """A pull request opened or updated: its web address, and what was done."""

    url: str
    state: Literal["opened", "updated", "unchanged"]


def forge_of(source: str, environ: Mapping[str, str]) -> Forge:
    """The forge `source` (a git URL, or a local path in tests) is on; a `ForgeError` naming
    the settings when it cannot be told."""
    host, path = _host_and_path(source)
    named = environ.get("WIZARD_FORGE") or (
        "github" if host == "github.com" else "gitlab" if "gitlab" in host else None
    )
    if named not in TOKENS:
        raise ForgeError(
            f"cannot tell which forge {source} is on: set WIZARD_FORGE to github or gitlab "
            "(and WIZARD_FORGE_API to its API's URL)"
        )
    kind: ForgeKind = named
    api = environ.get("WIZARD_FORGE_API") or (
        "https://api.github.com" if host == "github.com"
        else f"https://{host}/api/v3" if kind == "github" else f"https://{host}/api/v4"
    )  # fmt: skip
    if not host and not environ.get("WIZARD_FORGE_API"):
        raise ForgeError(f"{source} is not on a forge: set WIZARD_FORGE_API to its API's URL")
    at = urllib.parse.urlsplit(api)
    if at.scheme != "https" and not (at.scheme == "http" and at.hostname in _LOOPBACK):
        raise ForgeError(f"the forge's API at {api} is not HTTPS: the token would travel in clear")
    parts = [part for part in path.removesuffix(".git").split("/") if part]
    if len(parts) < 2:
        raise ForgeError(f"{source} names no repository on the forge (owner/name)")
    return Forge(kind, api.rstrip("/"), "/".join(parts[-2:] if kind == "github" else parts))


def _host_and_path(source: str) -> tuple[str, str]:
    if "://" in source:
        url = urllib.parse.urlsplit(source)
        return (url.hostname or "").lower(), url.path
    if (scp := _SCP.match(source)) and not source.startswith("/"):
        return scp["host"].lower(), scp["path"]
    return "", source  # a local path


def token_for(kind: ForgeKind, environ: Mapping[str, str]) -> str:
    """The worker's token for `kind`; a `ForgeError` naming the variables without one."""
    for name in TOKENS[kind]:
        if environ.get(name):
            return environ[name]
    raise ForgeError(f"no token for {kind}: set {' or '.join(TOKENS[kind])} for the worker")


def propose(
    forge: Forge,
    token: str,
    branch: str,
    base: str | None,
    title: str,
    body: str,
    *,
    timeout: float = 30.0,
) -> Proposal:
    """Open a pull request from `branch` into `base` (None: the repository's default
    branch), or update the one open from `branch`."""
    headers = (
        {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
         "X-GitHub-Api-Version": "2022-11-28"}
        if forge.kind == "github" else {"PRIVATE-TOKEN": token}
    )  # fmt: skip
    with httpx.Client(base_url=forge.api, headers=headers, timeout=timeout, trust_env=True,
                      follow_redirects=False) as client:  # fmt: skip
        api = _GitHub(client, forge) if forge.kind == "github" else _GitLab(client, forge)
        return api.propose(branch, base, title, body)


class _Api:
    def __init__(self, client: httpx.Client, forge: Forge) -> None:
        self.client, self.forge = client, forge

    def call(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = self.client.request(method, path, **options)
        except httpx.HTTPError as exc:
            raise ForgeError(f"{self.forge.api} could not be reached ({exc})") from exc
        if response.status_code >= 300:
            said = response.text[:300].strip()
            raise ForgeError(f"{method} {path} answered {response.status_code}: {said}")
        try:
            return response.json()
        except ValueError as exc:
            raise ForgeError(f"{method} {path} answered what is not JSON") from exc


class _GitHub(_Api):
    def propose(self, branch: str, base: str | None, title: str, body: str) -> Proposal:
        repo = f"/repos/{self.forge.path}"
        owner = self.forge.path.split("/")[0]
        found = self.call("GET", f"{repo}/pulls",
                          params={"head": f"{owner}:{branch}", "state": "open"})  # fmt: skip
        if found:
            pull = found[0]
            if (pull.get("title"), pull.get("body") or "") == (title, body):
                return Proposal(pull["html_url"], "unchanged")
            pull = self.call("PATCH", f"{repo}/pulls/{pull['number']}",
                             json={"title": title, "body": body})  # fmt: skip
            return Proposal(pull["html_url"], "updated")
        base = base or self.call("GET", repo)["default_branch"]
        asked = {"title": title, "head": branch, "base": base, "body": body}
        pull = self.call("POST", f"{repo}/pulls", json=asked)
        return Proposal(pull["html_url"], "opened")


class _GitLab(_Api):
    def propose(self, branch: str, base: str | None, title: str, body: str) -> Proposal:
        project = "/projects/" + urllib.parse.quote(self.forge.path, safe="")
        found = self.call("GET", f"{project}/merge_requests",
                          params={"source_branch": branch, "state": "opened"})  # fmt: skip
        if found:
            request = found[0]
            if (request.get("title"), request.get("description") or "") == (title, body):
                return Proposal(request["web_url"], "unchanged")
            request = self.call("PUT", f"{project}/merge_requests/{request['iid']}",
                                json={"title": title, "description": body})  # fmt: skip
            return Proposal(request["web_url"], "updated")
        base = base or self.call("GET", project)["default_branch"]
        request = self.call("POST", f"{project}/merge_requests",
                            json={"source_branch": branch, "target_branch": base,
                                  "title": title, "description": body})  # fmt: skip
        return Proposal(request["web_url"], "opened")
