"""The import-layer contract: the picture in STYLE.md, checked on every import in the package.

Every `import` and `from … import` counts, lazy ones inside functions too. A rule names a
group of modules and what it must not import; a broken rule names the importing module, so
the picture cannot rot.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wizard.runner.harness.registry import HARNESSES

SOURCE = Path(__file__).resolve().parents[1] / "src"
LEAVES = ("wizard.signals", "wizard.outcome", "wizard.events", "wizard.errors", "wizard.layout",
          "wizard.walk", "wizard.argv", "wizard.listings", "wizard.logs",
          "wizard.pinned", "wizard.own_git", "wizard.ahead", "wizard.interrupts")  # fmt: skip
# Every registered harness's adapter package: each is kept apart from the others and from
# the driver, whatever engines the registry holds.
ADAPTERS = tuple(entry.adapter for entry in HARNESSES.values())
UPPER = ("wizard.cli", "wizard.launch", "wizard.ui", "wizard.demo", "wizard.doctor")


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in (SOURCE / "wizard").rglob("*.py"):
        if "sample_project" in path.parts:
            continue
        module = ".".join(path.relative_to(SOURCE).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        names = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    return graph


GRAPH = _imports()


def _module_edges() -> dict[str, set[str]]:
    """Which of the package's modules each imports: `from a.b import c` is an edge to `a.b.c`
    when that is a module, else to `a.b` (imports under `TYPE_CHECKING` count: a circle of
    types is a circle of the design)."""

    def module_of(name: str) -> str | None:
        while name and name not in GRAPH:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for path in (SOURCE / "wizard").rglob("*.py"):
        if "sample_project" in path.parts:
            continue
        module = ".".join(path.relative_to(SOURCE).with_suffix("").parts).removesuffix(".__init__")
        found = edges.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    found.add(inner if inner in GRAPH else module_of(node.module) or "")
            elif isinstance(node, ast.Import):
                found.update(module_of(alias.name) or "" for alias in node.names)
        found.discard("")
        found.discard(module)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a circle (Tarjan's
    strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in edges.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (popped := stack.pop()) != module:
                group.append(popped)
            if group:
                circles.append(sorted([module, *group]))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return circles


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


# (who, what they must not import, why); leaves may import each other
RULES: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (LEAVES, ("wizard",), "leaves import only the standard library and each other"),
    (
        ("wizard.engines",),
        ("wizard.runner", "wizard.tools", "wizard.journal", *UPPER),
        "engines are below the harnesses",
    ),
    (
        ("wizard.journal",),
        ("wizard.runner", "wizard.tools", "wizard.engines", "wizard.programs", *UPPER),
        "the journal knows nothing of harnesses",
    ),
    (("wizard.journal",), ("wizard.skills",), "the journal knows nothing of skills"),
    (("wizard.ui",), ("wizard.doctor",), "the UI renders values; it runs no check"),
    (
        ("wizard.tools",),
        ("wizard.runner", "wizard.engines", "wizard.journal", *UPPER),
        "tools and the fence are below the harnesses",
    ),
    (
        ("wizard.runner.harness",),
        (
            "wizard.runner.sequence",
            "wizard.runner.switchboard",
            "wizard.journal",
            "wizard.programs",
            *UPPER,
        ),
        "a harness speaks only our types to the layers above",
    ),
    *(
        (
            (adapter,),
            tuple(other for other in ADAPTERS if other != adapter),
            f"the {adapter} adapter does not use another's",
        )
        for adapter in ADAPTERS
    ),
    (
        (
            "wizard.runner.harness.driver",
            "wizard.runner.harness.gate",
            "wizard.runner.harness.activity",
            "wizard.runner.harness.listener",
            "wizard.runner.harness.watchdog",
            "wizard.runner.harness.state",
            "wizard.runner.harness.endings",
        ),
        (*ADAPTERS, "wizard.engines"),
        "the driver and what it shares know no engine",
    ),
    (
        ("wizard.runner.sequence",),
        (
            "wizard.runner.switchboard",
            *ADAPTERS,
            *UPPER,
        ),
        "a sequence calls a harness, never an engine, and never routes",
    ),
    (("wizard.runner",), UPPER, "the runner is below the CLI and the UI"),
    (
        ("wizard.fleet",),
        ("wizard.runner", "wizard.tools", "wizard.engines", "wizard.journal", *UPPER),
        "a fleet runs `wizard run` as its activity and re-implements none of it (a run's "
        "journal is the run's, kept in the workspace)",
    ),
    (("wizard",), ("wizard.cli",), "only the entry point imports the CLI"),
]


@pytest.mark.parametrize(("who", "banned", "why"), RULES, ids=[rule[2] for rule in RULES])
def test_the_layers_hold(who: tuple[str, ...], banned: tuple[str, ...], why: str) -> None:
    broken = sorted(
        f"{module} imports {name}"
        for module, names in GRAPH.items()
        if _within(module, who) and not (module == "wizard.__main__" and banned == ("wizard.cli",))
        for name in names
        if _within(name, banned) and not _within(name, LEAVES)
    )
    assert not broken, f"{why}:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("rich", ("wizard.ui",)),
        # The SDK is imported lazily (`engines.claude.load_sdk`); by name only in the fake and
        # in the transport, which the session imports once the SDK has loaded.
        (
            "claude_agent_sdk",
            ("wizard.testing.fake_cli", "wizard.runner.harness.anthropic.transport"),
        ),
        (
            "typer",
            (
                "wizard.cli",
                "wizard.cli_options",
                "wizard.cli_refusals",
                "wizard.cli_journal",
                "wizard.cli_fleet",
            ),
        ),
        ("temporalio", ("wizard.fleet",)),
        ("posthog", ("wizard.analytics",)),
        ("httpx", ("wizard.runner.harness.proxy", "wizard.fleet.forges")),
    ],
)
def test_a_foreign_package_is_imported_in_one_place(package: str, allowed: tuple[str, ...]) -> None:
    users = sorted(
        module
        for module, names in GRAPH.items()
        if any(_within(name, (package,)) for name in names) and not _within(module, allowed)
    )
    assert not users, f"{package} is imported outside {allowed}: {users}"


def test_the_graph_is_the_packages() -> None:
    # A rule over no modules would pass whatever the code does.
    for who, _, why in RULES:
        assert any(_within(module, who) for module in GRAPH), why


def test_no_modules_import_each_other() -> None:
    """A circle of imports (`pi.early` and `pi.session` imported each other) is a knot in
    the layers: every module's imports point one way."""
    circles = _circles(_module_edges())
    assert circles == [], "\n".join(" <-> ".join(group) for group in circles)


def test_a_circle_is_found() -> None:
    """The check above finds a circle, direct or around three modules."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_circles(edges)) == [["a", "b", "c"], ["d", "e"]]


def _rebinds_globals(source: str) -> list[str]:
    """Where `source` rebinds a module's name from inside a function (`global`)."""
    return [
        f"line {node.lineno}: global {', '.join(node.names)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Global)
    ]


def test_no_module_keeps_a_run_s_state_in_its_globals() -> None:
    """Work a run takes ahead lives on its timeline (`wizard.ahead`), handed from `__main__`
    to the `Run`; no module rebinds a global to hold a process, a thread or a result."""
    found = sorted(
        f"{path.relative_to(SOURCE)} {where}"
        for path in (SOURCE / "wizard").rglob("*.py")
        if "sample_project" not in path.parts
        for where in _rebinds_globals(path.read_text())
    )
    assert not found, "\n".join(found)


def test_a_global_rebound_is_found() -> None:
    assert _rebinds_globals("_host = None\ndef start():\n    global _host\n    _host = 1\n")
    assert not _rebinds_globals("_hosts = []\ndef start():\n    _hosts.append(1)\n")
