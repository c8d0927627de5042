"""Which programs fit which real apps: a program fits unless the project plainly lacks what it
needs (code in its languages, a word of its domain); the screen of one that does not names
the programs that would."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.proofs.apps import CORPUS, after_run
from wizard.programs.registry import PROGRAMS, get_program
from wizard.runner.fitting import not_applicable_outro, unfit
from wizard.runner.proofs.fit import fits_at_root

EMAIL, REVENUE, MCP = "transactional-email", "revenue-analytics", "mcp-analytics"


@pytest.mark.parametrize(
    ("app", "fits"),
    [
        ("flask-celery-example", {EMAIL}),
        ("typescript-node-starter", {EMAIL}),
        ("mcp-weather-server-python", {MCP}),
        ("mcp-weather-server-typescript", {MCP}),
        ("stripe-checkout-python", {REVENUE}),
        ("stripe-checkout-node", {REVENUE}),
        ("tldr-python-client", set()),
        ("todomvc-javascript-es5", set()),
    ],
)
def test_each_corpus_app_fits_the_programs_it_suits(app: str, fits: set[str]) -> None:
    found = {p.id for p in PROGRAMS.values() if p.fits is not None
             and unfit(p, CORPUS / app) is None}  # fmt: skip
    assert found == fits


def test_the_screen_says_why_and_names_what_would_fit() -> None:
    program = get_program(EMAIL)
    project = CORPUS / "stripe-checkout-node"
    gap = unfit(program, project)
    assert gap is not None and gap.startswith("no code here sends email")
    outro = not_applicable_outro(program, project, gap)
    assert outro.message == "Transactional email does not fit this project"
    assert outro.body is not None and "Nothing was changed, and no model was asked" in outro.body
    assert "`wizard run revenue-analytics` would fit (Stripe is used here)" in outro.body
    lonely = not_applicable_outro(program, CORPUS / "tldr-python-client", gap)
    assert lonely.body is not None and "No other program of wizard's fits it" in lonely.body


def test_a_project_in_another_language_does_not_fit(tmp_path: Path) -> None:
    (tmp_path / "main.go").write_text('import "net/smtp"\nfunc main() { smtp.SendMail() }\n')
    assert unfit(get_program(EMAIL), tmp_path) == (
        "the project has no Python or JavaScript/TypeScript code"
    )


def test_programs_that_ask_nothing_fit_any_project(tmp_path: Path) -> None:
    assert unfit(get_program("self-driving"), tmp_path) is None


def test_the_words_count_only_in_code_and_manifests(tmp_path: Path) -> None:
    """A README that mentions Stripe is not a Stripe integration; a dependency is."""
    code = after_run(tmp_path, "todomvc-javascript-es5", {"README.md": "Pay with Stripe.\n"})
    assert unfit(get_program(REVENUE), code.root) == "nothing here uses Stripe"
    (code.root / "requirements.txt").write_text("stripe==12.0\n")
    (code.root / "app.py").write_text("print(1)\n")
    assert unfit(get_program(REVENUE), code.root) is None


@pytest.mark.parametrize(
    ("app", "program", "quick"),
    [
        ("flask-celery-example", EMAIL, True),  # requirements.txt names Flask-Mail
        ("stripe-checkout-node", REVENUE, False),  # only server/node/server.js says it
        ("mcp-weather-server-python", MCP, True),
        ("tldr-python-client", EMAIL, False),
    ],
)
def test_the_top_folder_tells_most_projects_apart_and_never_turns_one_away(
    app: str, program: str, quick: bool
) -> None:
    """The quick look at the top folder only ever says "fits": the full look decides the
    rest, the same way."""
    fits = get_program(program).fits
    assert fits is not None
    assert fits_at_root(CORPUS / app, fits) is quick
    assert (unfit(get_program(program), CORPUS / app) is None) is (app != "tldr-python-client")
