"""Static proofs on real apps nobody here wrote (`tests/corpus`), each on a temporary copy:
the correct integration is proven, every sabotaged one is not, and the reason names where."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from wizard.programs.registry import get_program
from wizard.programs.types import CallSiteProof, ConfigProof, InitOptionProof
from wizard.runner.proofs.static import call_sites, config_file, init_option

CORPUS = Path(__file__).parents[1] / "corpus"
REVENUE = get_program("revenue-analytics").proofs[0]
assert isinstance(REVENUE, CallSiteProof)
PYTHON_CALL = "        checkout_session = stripe.checkout.Session.create(\n"
NODE_CALL = "  const session = await stripe.checkout.sessions.create({\n"


def _copy(tmp_path: Path, app: str) -> Path:
    target = tmp_path / app
    shutil.copytree(CORPUS / app, target, symlinks=True)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("app", "server", "call", "tagged", "line"),
    [
        (
            "stripe-checkout-python", "server/python/server.py", PYTHON_CALL,
            PYTHON_CALL + "            metadata={'posthog_person_distinct_id': user_id},\n", 70,
        ),
        (
            "stripe-checkout-node", "server/node/server.js", NODE_CALL,
            NODE_CALL + "    metadata: { posthog_person_distinct_id: userId },\n", 68,
        ),
    ],
)  # fmt: skip
def test_every_checkout_call_must_carry_the_person(
    tmp_path: Path, app: str, server: str, call: str, tagged: str, line: int
) -> None:
    project = _copy(tmp_path, app)
    untouched = call_sites(project, REVENUE)
    assert untouched.status == "failed"
    assert f"no metadata.posthog_person_distinct_id at {server}:{line}" in untouched.text

    _edit(project / server, call, tagged)
    found = call_sites(project, REVENUE)
    assert found.status == "proven", found.text
    assert found.text.startswith("1 call pass metadata.posthog_person_distinct_id")
    assert f"{server}:{line}" in found.text

    # A second call site, missed: not proven, and the reason names the one missed.
    with (project / server).open("a") as source:
        source.write(
            "\nstripe.Customer.create(email='a@example.com')\n"
            if server.endswith(".py")
            else "\nstripe.customers.create({ email: 'a@example.com' });\n"
        )
    missed = call_sites(project, REVENUE)
    assert missed.status == "failed"
    assert "Customer.create" in missed.text or "customers.create" in missed.text


def test_metadata_given_by_name_is_followed_to_its_literal(tmp_path: Path) -> None:
    project = _copy(tmp_path, "stripe-checkout-node")
    server = project / "server/node/server.js"
    _edit(server, NODE_CALL, "  const tags = { posthog_person_distinct_id: userId };\n" + NODE_CALL
          + "    metadata: tags,\n")  # fmt: skip
    assert call_sites(project, REVENUE).status == "proven"
    # The same name bound to something else proves nothing.
    _edit(server, "const tags = { posthog_person_distinct_id: userId }", "const tags = {}")
    assert call_sites(project, REVENUE).status == "failed"


def test_an_app_with_no_stripe_call_proves_nothing(tmp_path: Path) -> None:
    found = call_sites(_copy(tmp_path, "todomvc-javascript-es5"), REVENUE)
    assert found.status == "failed" and "was found" in found.text


def test_a_call_in_a_file_linked_from_outside_or_in_dependencies_does_not_count(
    tmp_path: Path,
) -> None:
    """The walk never follows a link, and dependency folders are not the app's code."""
    project = _copy(tmp_path, "stripe-checkout-python")
    outside = tmp_path / "outside.py"
    outside.write_text("stripe.Customer.create(metadata={'posthog_person_distinct_id': u})\n")
    (project / "linked.py").symlink_to(outside)
    (project / "node_modules" / "x").mkdir(parents=True)
    (project / "node_modules" / "x" / "i.js").write_text(
        "stripe.customers.create({ metadata: { posthog_person_distinct_id: u } });\n"
    )
    found = call_sites(project, REVENUE)
    assert found.status == "failed" and "server/python/server.py:70" in found.text
    assert "linked.py" not in found.text and "node_modules" not in found.text


REPLAY = InitOptionProof("replay", "posthog.init", "disable_session_recording")


@pytest.mark.parametrize(
    ("source", "status"),
    [
        ("posthog.init('phc_x', { api_host: '/ingest' })\n", "proven"),
        ("posthog.init('phc_x', { disable_session_recording: false })\n", "proven"),
        ("posthog.init('phc_x', { disable_session_recording: true })\n", "failed"),
        ("analytics.start('phc_x')\n", "failed"),
    ],
)
def test_replay_must_be_left_on_where_posthog_starts(
    tmp_path: Path, source: str, status: str
) -> None:
    project = _copy(tmp_path, "todomvc-javascript-es5")
    (project / "js").mkdir(exist_ok=True)
    (project / "js" / "analytics.ts").write_text(f"import posthog from 'posthog-js';\n{source}")
    assert init_option(project, REPLAY).status == status


def test_a_config_file_must_validate_against_the_programs_schema(tmp_path: Path) -> None:
    (proof,) = get_program("self-driving").proofs
    assert isinstance(proof, ConfigProof)
    assert config_file(tmp_path, proof).text == ".posthog/self-driving.json was not written"
    config = tmp_path / ".posthog" / "self-driving.json"
    config.parent.mkdir()
    config.write_text("{goals")
    assert "is not JSON" in config_file(tmp_path, proof).text
    config.write_text('{"goals": [], "repository": "github.com/acme/app"}')
    found = config_file(tmp_path, proof)
    assert found.status == "failed" and "at goals:" in found.text
    config.write_text('{"goals": ["Grow signups"], "repository": "github.com/acme/app"}')
    assert config_file(tmp_path, proof).status == "proven"
