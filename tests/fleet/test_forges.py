"""Pull requests for `--publish pull-request` (`wizard.fleet.forges`), against a local forge
that speaks the documented subset of GitHub's and GitLab's REST APIs over real HTTP: opened
once, updated on a rerun, never a second; the token goes to the API only."""

from __future__ import annotations

import pytest

from tests.fleet.forge_server import TOKEN, forge_server
from wizard.fleet.forges import Forge, ForgeError, forge_of, propose, token_for

BRANCH = "wizard/stripe-checkout"
GITHUB = Forge("github", "https://api.github.com", "acme/shop")


@pytest.mark.parametrize(
    ("source", "environ", "expected"),
    [
        ("https://github.com/acme/shop.git", {}, GITHUB),
        ("git@github.com:acme/shop.git", {}, GITHUB),
        ("ssh://git@github.com/acme/shop", {}, GITHUB),
        ("https://gitlab.com/acme/web/shop.git", {},
         Forge("gitlab", "https://gitlab.com/api/v4", "acme/web/shop")),
        ("git@gitlab.acme.io:platform/shop.git", {},
         Forge("gitlab", "https://gitlab.acme.io/api/v4", "platform/shop")),
        ("https://git.acme.io/acme/shop.git", {"WIZARD_FORGE": "github"},
         Forge("github", "https://git.acme.io/api/v3", "acme/shop")),
        ("https://git.acme.io/acme/shop.git",
         {"WIZARD_FORGE": "gitlab", "WIZARD_FORGE_API": "https://api.acme.io/v4/"},
         Forge("gitlab", "https://api.acme.io/v4", "acme/shop")),
        ("/srv/repos/acme/shop", {"WIZARD_FORGE": "github", "WIZARD_FORGE_API": "http://127.0.0.1:9"},
         Forge("github", "http://127.0.0.1:9", "acme/shop")),
    ],
)  # fmt: skip
def test_the_forge_is_told_from_the_repository_s_url_or_the_settings(
    source: str, environ: dict[str, str], expected: Forge
) -> None:
    assert forge_of(source, environ) == expected


@pytest.mark.parametrize(
    ("source", "environ", "said"),
    [
        ("https://git.acme.io/acme/shop.git", {}, "set WIZARD_FORGE to github or gitlab"),
        ("/srv/repos/acme/shop", {"WIZARD_FORGE": "github"}, "set WIZARD_FORGE_API"),
        ("https://github.com/shop.git", {}, "names no repository"),
        ("https://git.acme.io/a/b", {"WIZARD_FORGE": "github",
                                     "WIZARD_FORGE_API": "http://git.acme.io/api/v3"},
         "not HTTPS: the token would travel in clear"),
    ],
)  # fmt: skip
def test_a_forge_that_cannot_be_told_names_the_setting(
    source: str, environ: dict[str, str], said: str
) -> None:
    with pytest.raises(ForgeError, match=said):
        forge_of(source, environ)


def test_a_missing_token_names_the_variables() -> None:
    with pytest.raises(ForgeError, match="set GITLAB_TOKEN or GL_TOKEN for the worker"):
        token_for("gitlab", {"GITHUB_TOKEN": "for another forge"})
    assert token_for("github", {"GH_TOKEN": "t"}) == "t"


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_a_pull_request_is_opened_once_then_updated_and_left_be(kind: str) -> None:
    with forge_server() as forge:
        api = forge.url + ("/api/v4" if kind == "gitlab" else "")
        where = Forge(kind, api, "acme/web/shop" if kind == "gitlab" else "acme/shop")  # type: ignore[arg-type]
        repo = where.path
        first = propose(where, TOKEN, BRANCH, None, "wizard: stripe", "proven")
        assert first.state == "opened" and first.url.endswith("/1")
        (pull,) = forge.open_pulls(repo)
        assert (pull["head"], pull["base"], pull["body"]) == (BRANCH, "main", "proven")
        same = propose(where, TOKEN, BRANCH, None, "wizard: stripe", "proven")
        assert (same.state, same.url) == ("unchanged", first.url)
        again = propose(where, TOKEN, BRANCH, "release", "wizard: stripe", "set up, cost $1")
        assert (again.state, again.url) == ("updated", first.url)
        (pull,) = forge.open_pulls(repo)  # still one
        assert pull["body"] == "set up, cost $1" and pull["base"] == "main"
        other = propose(where, TOKEN, "wizard/other", "release", "wizard: other", "x")
        assert other.state == "opened" and forge.open_pulls(repo)[1]["base"] == "release"
        assert {token for _, _, token in forge.asked} == {TOKEN}
        methods = [method for method, _, _ in forge.asked]
        update = "PATCH" if kind == "github" else "PUT"
        assert methods == ["GET", "GET", "POST", "GET", "GET", update, "GET", "POST"]


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_a_refused_token_is_a_clear_failure_that_never_shows_it(kind: str) -> None:
    with forge_server() as forge:
        api = forge.url + ("/api/v4" if kind == "gitlab" else "")
        where = Forge(kind, api, "acme/shop")  # type: ignore[arg-type]
        with pytest.raises(ForgeError, match="answered 401") as raised:
            propose(where, "wrong-secret-token", BRANCH, None, "t", "b")
        assert "wrong-secret-token" not in str(raised.value)
        assert forge.pulls.get("acme/shop", []) == []


def test_the_token_is_not_sent_on_after_a_redirect() -> None:
    with forge_server() as forge, forge_server() as elsewhere:
        forge.moved = elsewhere.url
        with pytest.raises(ForgeError, match="answered 302"):
            propose(Forge("github", forge.url, "acme/shop"), TOKEN, BRANCH, None, "t", "b")
        assert elsewhere.asked == []
