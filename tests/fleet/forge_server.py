"""A local forge for the tests: the subset of GitHub's and GitLab's REST APIs that
`wizard.fleet.forges` calls, as they document it, over real HTTP on 127.0.0.1; it keeps
what it was asked (method, path, token) and refuses a call without the right token, or one
it does not know (so a new call fails the tests until it is served here)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "forge-test-token"


@dataclass
class Forge:
    """What the local forge holds and was asked."""

    url: str = ""
    default_branch: str = "main"
    pulls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by repository
    asked: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, token
    moved: str | None = None  # answer every call with a redirect to this address

    def open_pulls(self, repo: str) -> list[dict[str, Any]]:
        return [pull for pull in self.pulls.get(repo, []) if pull["open"]]


def _handler(forge: Forge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            github = url.path.startswith("/repos/")
            token = (
                self.headers.get("authorization", "").removeprefix("Bearer ")
                if github else self.headers.get("private-token", "")
            )  # fmt: skip
            forge.asked.append((self.command, url.path, token))
            if forge.moved is not None:
                return self._answer(302, {}, {"location": forge.moved + url.path})
            if token != TOKEN:
                return self._answer(401, {"message": "Bad credentials"})
            answer = (self._github if github else self._gitlab)(url.path, query, body)
            if answer is None:
                return self._answer(404, {"message": "Not Found"})
            self._answer(*answer)

        def _github(self, path: str, query: dict[str, str], body: Any) -> Any:
            parts = path.split("/")  # "", repos, owner, repo, ...
            repo, rest = "/".join(parts[2:4]), parts[4:]
            pulls = forge.pulls.setdefault(repo, [])
            if self.command == "GET" and not rest:
                return 200, {"full_name": repo, "default_branch": forge.default_branch}
            if self.command == "GET" and rest == ["pulls"]:
                owner, _, branch = query.get("head", "").partition(":")
                return 200, [
                    _github_pull(repo, p) for p in forge.open_pulls(repo)
                    if p["head"] == branch and owner == repo.split("/")[0]
                ]  # fmt: skip
            if self.command == "POST" and rest == ["pulls"]:
                if any(p["head"] == body["head"] for p in forge.open_pulls(repo)):
                    return 422, {"message": "A pull request already exists"}
                pull = {"number": len(pulls) + 1, "title": body["title"], "body": body["body"],
                        "head": body["head"], "base": body["base"], "open": True}  # fmt: skip
                pulls.append(pull)
                return 201, _github_pull(repo, pull)
            if self.command == "PATCH" and len(rest) == 2 and rest[0] == "pulls":
                pull = pulls[int(rest[1]) - 1]
                pull.update(title=body["title"], body=body["body"])
                return 200, _github_pull(repo, pull)
            return None

        def _gitlab(self, path: str, query: dict[str, str], body: Any) -> Any:
            raw = self.path.split("?")[0].split("/")  # "", api, v4?, projects, ID, ...
            at = raw.index("projects")
            project, rest = urllib.parse.unquote(raw[at + 1]), raw[at + 2 :]
            if "/" in raw[at + 1]:
                return 400, {"message": "the project's path must be URL-encoded"}
            requests = forge.pulls.setdefault(project, [])
            if self.command == "GET" and not rest:
                return 200, {"path_with_namespace": project,
                             "default_branch": forge.default_branch}  # fmt: skip
            if self.command == "GET" and rest == ["merge_requests"]:
                return 200, [_gitlab_request(project, r) for r in forge.open_pulls(project)
                             if r["head"] == query.get("source_branch")]  # fmt: skip
            if self.command == "POST" and rest == ["merge_requests"]:
                request = {"number": len(requests) + 1, "title": body["title"],
                           "body": body["description"], "head": body["source_branch"],
                           "base": body["target_branch"], "open": True}  # fmt: skip
                requests.append(request)
                return 201, _gitlab_request(project, request)
            if self.command == "PUT" and len(rest) == 2 and rest[0] == "merge_requests":
                request = requests[int(rest[1]) - 1]
                request.update(title=body["title"], body=body["description"])
                return 200, _gitlab_request(project, request)
            return None

        do_GET = do_POST = do_PATCH = do_PUT = _serve

    return Handler


def _github_pull(repo: str, pull: dict[str, Any]) -> dict[str, Any]:
    return {"number": pull["number"], "title": pull["title"], "body": pull["body"],
            "html_url": f"https://github.example/{repo}/pull/{pull['number']}",
            "head": {"ref": pull["head"]}, "base": {"ref": pull["base"]}}  # fmt: skip


def _gitlab_request(project: str, request: dict[str, Any]) -> dict[str, Any]:
    web = f"https://gitlab.example/{project}/-/merge_requests/{request['number']}"
    return {"iid": request["number"], "title": request["title"],
            "description": request["body"], "source_branch": request["head"],
            "target_branch": request["base"],
            "web_url": web}  # fmt: skip


@contextmanager
def forge_server() -> Iterator[Forge]:
    """The local forge, serving on 127.0.0.1 until the block ends."""
    forge = Forge()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(forge))
    forge.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield forge
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
