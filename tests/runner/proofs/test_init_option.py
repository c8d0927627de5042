"""The replay proof: `posthog.init` must run in a page of the app (a script it loads, inline
or by `src`, an HTML page or a template, a front-end framework's entry) and leave replay on.
An init no page loads, or in a project with no page at all (a CLI), is never proven; one a
page may load through a build wizard cannot follow is "cannot tell"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runner.proofs.apps import Edit, after_run, appending, replacing
from wizard.programs.registry import get_program
from wizard.programs.types import InitOptionProof
from wizard.runner.proofs.finding import Finding
from wizard.runner.proofs.static import init_option

REPLAY = get_program("replay-vision").proofs[1]
assert isinstance(REPLAY, InitOptionProof)
# PostHog's documented HTML snippet, its key from the template (Jinja).
SNIPPET = """    <script>
      !function(t,e){var o,n,p,r;e.__SV||(window.posthog=e,e._i=[],e.init=function(i,s,a){
      })}(document,window.posthog||[]);
      posthog.init('{{ config.POSTHOG_KEY }}', {api_host: 'https://us.i.posthog.com', %s})
    </script>
"""
INIT = "posthog.init('phc_x', { api_host: 'https://us.i.posthog.com' });\n"
TODOMVC = "todomvc-javascript-es5"


def _found(tmp_path: Path, app: str, edits: dict[str, Edit]) -> Finding:
    return init_option(after_run(tmp_path, app, edits), REPLAY)


@pytest.mark.parametrize(
    ("options", "status"),
    [
        ("person_profiles: 'identified_only'", "proven"),
        ("disable_session_recording: false", "proven"),
        ("disable_session_recording: true", "failed"),
    ],
)
def test_the_documented_snippet_in_a_jinja_template_is_read(
    tmp_path: Path, options: str, status: str
) -> None:
    page = replacing("  </head>", SNIPPET % options + "  </head>")
    found = _found(tmp_path, "flask-celery-example", {"templates/index.html": page})
    assert found.status == status, found.text
    assert "templates/index.html:" in found.text


def test_a_script_a_page_loads_by_src_or_import_is_proven(tmp_path: Path) -> None:
    found = _found(tmp_path / "a", TODOMVC, {"src/app.js": appending(INIT)})
    assert found.status == "proven" and "src/app.js" in found.text
    imported = _found(tmp_path / "b", TODOMVC, {
        "src/analytics.js": INIT, "src/app.js": lambda text: "import './analytics.js';\n" + text,
    })  # fmt: skip
    assert imported.status == "proven", imported.text


def test_an_init_no_page_loads_fails(tmp_path: Path) -> None:
    found = _found(tmp_path, TODOMVC, {"src/analytics.js": INIT})
    assert found.status == "failed"
    assert found.text == "no page of the app loads posthog.init at src/analytics.js:1"


def test_an_init_in_a_cli_fails(tmp_path: Path) -> None:
    found = _found(tmp_path, "tldr-python-client",
                   {"cli.js": "import posthog from 'posthog-js';\n" + INIT})  # fmt: skip
    assert found.status == "failed" and "the project has no web page" in found.text


def test_a_page_that_loads_a_built_bundle_cannot_tell(tmp_path: Path) -> None:
    app = '<script src="src/app.js"></script>'
    page = replacing(app, f'{app}<script src="dist/bundle.js"></script>')
    found = _found(tmp_path, TODOMVC, {"src/analytics.js": INIT, "index.html": page})
    assert found.status == "not_run" and "dist/bundle.js" in found.text


def test_a_front_end_frameworks_entry_is_a_page(tmp_path: Path) -> None:
    manifest = json.dumps({"dependencies": {"next": "15.0.0", "posthog-js": "1.0.0"}})
    found = _found(tmp_path, "tldr-python-client", {
        "web/package.json": manifest,
        "web/app/layout.tsx": "import { Providers } from './providers';\n"
                              "export default function Layout({ children }) {\n"
                              "  return <Providers>{children}</Providers>;\n}\n",
        "web/app/providers.tsx": "'use client';\nimport posthog from 'posthog-js';\n" + INIT,
    })  # fmt: skip
    assert found.status == "proven", found.text


def test_a_pug_layout_is_a_page(tmp_path: Path) -> None:
    layout = "    script.\n      posthog.init('phc_x', { api_host: '/ingest' })\n"
    found = _found(tmp_path, "typescript-node-starter",
                   {"views/layout.pug": lambda text: text + layout})  # fmt: skip
    assert found.status == "proven", found.text


def test_no_init_at_all_fails(tmp_path: Path) -> None:
    found = _found(tmp_path, TODOMVC, {})
    assert found.status == "failed" and "no posthog.init(...) call" in found.text
