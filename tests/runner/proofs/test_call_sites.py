"""The revenue proof on real Stripe apps nobody here wrote: the value that reaches Stripe is
followed, so a constant or a field nothing sets is never proven, a call missed fails, code the
query cannot follow is "cannot tell", and correct integrations of several shapes pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.proofs.apps import Edit, after_run, appending, replacing
from wizard.programs.registry import get_program
from wizard.programs.types import CallSiteProof
from wizard.runner.proofs.finding import Finding
from wizard.runner.proofs.static import call_sites

REVENUE = get_program("revenue-analytics").proofs[0]
assert isinstance(REVENUE, CallSiteProof)
PY_APP, PY_SERVER = "stripe-checkout-python", "server/python/server.py"
NODE_APP, NODE_SERVER = "stripe-checkout-node", "server/node/server.js"
PY_CALL = "        checkout_session = stripe.checkout.Session.create(\n"
NODE_CALL = "  const session = await stripe.checkout.sessions.create({\n"


def _python(tmp_path: Path, metadata: str, more: str = "", before: str = "") -> Finding:
    edit: Edit = replacing(PY_CALL, f"{before}{PY_CALL}            {metadata},\n")
    if more:
        edit = _then(edit, appending(more))
    return call_sites(after_run(tmp_path, PY_APP, {PY_SERVER: edit}), REVENUE)


def _node(tmp_path: Path, metadata: str, more: str = "", before: str = "") -> Finding:
    edit: Edit = replacing(NODE_CALL, f"{before}{NODE_CALL}    {metadata},\n")
    if more:
        edit = _then(edit, appending(more))
    return call_sites(after_run(tmp_path, NODE_APP, {NODE_SERVER: edit}), REVENUE)


def _then(first: Edit, second: Edit) -> Edit:
    assert callable(first) and callable(second)
    return lambda text: second(first(text))


def test_the_untouched_apps_fail_and_name_the_call(tmp_path: Path) -> None:
    for app, where in ((PY_APP, f"{PY_SERVER}:70"), (NODE_APP, f"{NODE_SERVER}:68")):
        found = call_sites(after_run(tmp_path / app, app, {}), REVENUE)
        assert found.status == "failed"
        assert f"{where}" in found.text and "no metadata" in found.text


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ("metadata={'posthog_person_distinct_id': session.get('user')}", "from the request"),
        ("metadata={'posthog_person_distinct_id': request.json['distinct_id']}",
         "from the request"),
        ("metadata={'posthog_person_distinct_id': str(request.cookies.get('ph_id'))}",
         "from the request"),
        ("metadata={'posthog_person_distinct_id': session.get('user') or 'anonymous'}",
         "from the request"),
        ("metadata=dict(posthog_person_distinct_id=session['user'])", "from the request"),
        ("metadata={'posthog_person_distinct_id': 'user-' + str(session['user'])}",
         "from the request"),
    ],
)  # fmt: skip
def test_correct_python_shapes_are_proven(tmp_path: Path, metadata: str, said: str) -> None:
    found = _python(tmp_path, metadata)
    assert found.status == "proven", found.text
    assert f"{PY_SERVER}:70" in found.text and said in found.text


@pytest.mark.parametrize(
    "metadata",
    [
        "metadata: { posthog_person_distinct_id: req.body.distinctId }",
        "metadata: { posthog_person_distinct_id: `user-${req.body.userId}` }",
        "metadata: { posthog_person_distinct_id: req.cookies.ph_distinct_id ?? 'anonymous' }",
        "metadata: { posthog_person_distinct_id: req.session.userId }",
        "metadata: { posthog_person_distinct_id: req.user.id }",
    ],
)
def test_correct_node_shapes_are_proven(tmp_path: Path, metadata: str) -> None:
    found = _node(tmp_path, metadata)
    assert found.status == "proven", found.text


def test_an_id_an_auth_library_returns_is_followed(tmp_path: Path) -> None:
    """Clerk's `auth()` (a call the query does not run) returns the user's id."""
    before = "  const { userId } = auth();\n"
    found = _node(tmp_path / "a", "metadata: { posthog_person_distinct_id: userId }", before=before)
    assert found.status == "proven", found.text
    # A field of its that nothing in the app sets may still come from it: cannot tell.
    before = "  const { orgRef } = auth();\n"
    found = _node(tmp_path / "b", "metadata: { posthog_person_distinct_id: orgRef }", before=before)
    assert found.status == "not_run" and "may come from elsewhere" in found.text


def test_metadata_built_in_a_variable_under_a_guard_is_proven(tmp_path: Path) -> None:
    guard = ("        metadata = {}\n        if session.get('user'):\n"
             "            metadata['posthog_person_distinct_id'] = session['user']\n")  # fmt: skip
    assert _python(tmp_path / "py", "metadata=metadata", before=guard).status == "proven"
    node_guard = ("  const metadata = {};\n  if (req.body.distinctId) "
                  "metadata.posthog_person_distinct_id = req.body.distinctId;\n")  # fmt: skip
    assert _node(tmp_path / "js", "metadata", before=node_guard).status == "proven"
    updated = (
        "        metadata = {'plan': 'pro'}\n"
        "        metadata.update(posthog_person_distinct_id=session['user'])\n"
    )
    assert _python(tmp_path / "up", "metadata=metadata", before=updated).status == "proven"


def test_a_customer_tagged_right_after_it_is_created_is_proven(tmp_path: Path) -> None:
    python = ("\n\ndef sign_up(user_id, email):\n"
              "    customer = stripe.Customer.create(email=email)\n"
              "    stripe.Customer.modify(customer['id'], "
              "metadata={'posthog_person_distinct_id': user_id})\n")  # fmt: skip
    found = _python(tmp_path / "py", "metadata={'posthog_person_distinct_id': session['user']}",
                    more=python)  # fmt: skip
    assert found.status == "proven", found.text
    assert "tagged by stripe.Customer.modify" in found.text
    node = ("\nasync function signUp(req) {\n"
            "  const customer = await stripe.customers.create({ email: req.body.email });\n"
            "  await stripe.customers.update(customer.id, "
            "{ metadata: { posthog_person_distinct_id: req.body.distinctId } });\n}\n")  # fmt: skip
    found = _node(tmp_path / "js", "metadata: { posthog_person_distinct_id: req.body.id }",
                  more=node)  # fmt: skip
    assert found.status == "proven", found.text
    # Created and never tagged: the create call is missing it.
    untagged = node.replace("customers.update", "customers.retrieve")
    found = _node(tmp_path / "js2", "metadata: { posthog_person_distinct_id: req.body.id }",
                  more=untagged)  # fmt: skip
    assert found.status == "failed" and "customers.create: no metadata" in found.text


def test_a_stripe_client_given_params_is_followed(tmp_path: Path) -> None:
    more = ("\n\ndef upgrade(client, user_id):\n    return client.v1.customers.create("
            "params={'email': 'a@b.c',\n"
            "            'metadata': {'posthog_person_distinct_id': user_id}})\n")  # fmt: skip
    found = _python(tmp_path, "metadata={'posthog_person_distinct_id': session['user']}", more)
    assert found.status == "proven" and "client.v1.customers.create" in found.text


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        # The same id for every customer.
        ("metadata={'posthog_person_distinct_id': 'anonymous'}", "the constant 'anonymous'"),
        ("metadata={'posthog_person_distinct_id': 42}", "the constant 42"),
        # A field nothing in the app ever sets: stripe-python drops the None.
        ("metadata={'posthog_person_distinct_id': current_user.posthog_id}",
         "current_user.posthog_id, a field nothing in the app sets"),
        # The key there, under another name.
        ("metadata={'posthog_distinct_id': session['user']}", "has no posthog_person_distinct_id"),
    ],
)  # fmt: skip
def test_sabotaged_python_values_fail(tmp_path: Path, metadata: str, reason: str) -> None:
    found = _python(tmp_path, metadata)
    assert found.status == "failed", found.text
    assert reason in found.text


def test_a_constant_given_by_name_fails_and_a_field_the_app_sets_passes(tmp_path: Path) -> None:
    constant = _python(tmp_path / "a", "metadata={'posthog_person_distinct_id': DISTINCT_ID}",
                       before="        DISTINCT_ID = 'anon'\n")  # fmt: skip
    assert constant.status == "failed" and "the constant 'anon'" in constant.text
    login = "\n\ndef log_in(user):\n    user.posthog_id = request.cookies.get('ph_id')\n"
    found = _python(tmp_path / "b", "metadata={'posthog_person_distinct_id': "
                    "current_user.posthog_id}", more=login)  # fmt: skip
    assert found.status == "proven", found.text


def test_sabotaged_node_values_fail(tmp_path: Path) -> None:
    found = _node(tmp_path / "a", "metadata: { posthog_person_distinct_id: 'anonymous' }")
    assert found.status == "failed" and "the constant 'anonymous'" in found.text
    found = _node(tmp_path / "b", "metadata: { posthog_person_distinct_id: req.user.posthogId }")
    assert found.status == "failed" and "nothing in the app sets" in found.text


def test_a_call_site_missed_fails_and_is_named(tmp_path: Path) -> None:
    missed = "\n\ndef new_customer(email):\n    return stripe.Customer.create(email=email)\n"
    found = _python(tmp_path, "metadata={'posthog_person_distinct_id': session['user']}", missed)
    assert found.status == "failed" and "Customer.create: no metadata" in found.text


@pytest.mark.parametrize(
    ("metadata", "more"),
    [
        ("metadata=build_metadata(session)", ""),
        ("metadata={'posthog_person_distinct_id': current_user.account_ref}", ""),
        ("metadata={'posthog_person_distinct_id': person_for(session)}", ""),
        ("metadata={'posthog_person_distinct_id': session['user']}",
         "\n\ndef other(params):\n    return stripe.Customer.create(**params)\n"),
    ],
)  # fmt: skip
def test_what_the_query_cannot_follow_is_cannot_tell_never_failed(
    tmp_path: Path, metadata: str, more: str
) -> None:
    found = _python(tmp_path, metadata, more)
    assert found.status == "not_run", found.text
    assert found.text.startswith("cannot tell")


def test_tests_and_dependencies_and_links_out_are_not_the_app(tmp_path: Path) -> None:
    project = tmp_path / "outside"
    project.mkdir()
    (project / "outside.py").write_text("stripe.Customer.create(email='a')\n")
    code = after_run(tmp_path, PY_APP, {
        PY_SERVER: replacing(PY_CALL, f"{PY_CALL}            metadata={{"
                             "'posthog_person_distinct_id': session['user']},\n"),
        "tests/test_server.py": "stripe.Customer.create(email='a')\n",
        "node_modules/x/i.js": "stripe.customers.create({ email: 'a' });\n",
    })  # fmt: skip
    (code.root / "linked.py").symlink_to(project / "outside.py")
    found = call_sites(code, REVENUE)
    assert found.status == "proven", found.text
    assert "1 call(s)" in found.text


def test_an_app_with_no_stripe_call_proves_nothing(tmp_path: Path) -> None:
    found = call_sites(after_run(tmp_path, "todomvc-javascript-es5", {}), REVENUE)
    assert found.status == "failed" and "no call to" in found.text


@pytest.mark.timeout(60)  # a guard against a hang, not a measure of speed
def test_code_written_to_make_the_query_run_away_ends_in_cannot_tell(tmp_path: Path) -> None:
    """Names that each take two others, thirty deep, and names given themselves: followed
    without bounds that is 2**30 steps; the query gives up, and says it cannot tell."""
    chain = "".join(f"        v{i} = v{i + 1} or v{i + 2}\n" for i in range(30))
    loops = "        w = w or w or w\n" * 200
    found = _python(tmp_path, "metadata={'posthog_person_distinct_id': v0 or w}",
                    before=chain + loops)  # fmt: skip
    assert found.status == "not_run" and found.text.startswith("cannot tell"), found.text
