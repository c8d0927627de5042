"""What code the app runs: its imports, its declared entry points and its pages.

A proof ties what the agent recorded to the app through these: a file is the app's when it
was there before the run, when a file that was imports it, or when the project's own
manifests start it (`package.json` `main`/`bin`/`scripts`, console scripts, a Procfile, an
MCP client config in the project). Imports are read from the syntax trees: Python's `import`
and `from ... import` (absolute, from the project's root, `src/` or a folder above the file,
and relative), and JavaScript's `import`, `export ... from`, `require()` and `import()` of
relative paths (a TypeScript file imported as `.js` included). A package's name is not the
app's code and leads nowhere.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from wizard.runner.proofs.codebase import CALLS, Codebase, Source, nodes, text

if TYPE_CHECKING:
    from tree_sitter import Node

_JS_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_AS_TYPESCRIPT = {".js": (".ts", ".tsx"), ".mjs": (".mts",), ".cjs": (".cts",), ".jsx": (".tsx",)}
# Files an MCP client in the project reads to start its servers.
MCP_CONFIGS = (".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".gemini/settings.json")


def import_names(source: Source) -> Iterator[str]:
    """What `source` imports, as written: Python modules, JavaScript specifiers."""
    return _python_imports(source) if source.python else _js_imports(source)


def imported(source: Source, code: Codebase) -> set[str]:
    """The app files `source` imports."""
    found: set[str] = set()
    for name in import_names(source):
        found.update(import_files(name, source, code))
    found.discard(source.path)
    return found


def reachable(code: Codebase, roots: Iterable[str]) -> set[str]:
    """Every app file that `roots` import, directly or not, and the roots."""
    by_path = {s.path: s for s in code.sources if s.line == 0}
    seen: set[str] = set()
    stack = [root for root in roots if code.has(root)]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        if (source := by_path.get(path)) is not None:
            stack.extend(imported(source, code) - seen)
    return seen


def _python_imports(source: Source) -> Iterator[str]:
    """Module names, relative ones with their leading dots; `from m import a` gives `m` and
    `m.a` (a name imported from a package may be its module)."""
    for node in nodes(source.root):
        if node.type == "import_statement":
            for child in node.named_children:
                yield text(_imported_name(child))
        elif node.type == "import_from_statement":
            module = text(node.child_by_field_name("module_name"))
            yield module
            for child in node.children_by_field_name("name"):
                yield f"{module}{'' if module.endswith('.') else '.'}{text(_imported_name(child))}"


class Imported(NamedTuple):
    """What a name bound by an import is: `name` as its module has it, from one of `modules`
    (as written)."""

    name: str
    modules: tuple[str, ...]


def import_bindings(source: Source) -> dict[str, Imported]:
    """The names `source` binds by importing: `import a.b as c` binds `c` to the module
    `a.b`; `from m import x as y` binds `y` to `x` of `m` or the module `m.x` (a name
    imported from a package may be its module); `import {x} from "./m"` and
    `const {x} = require("./m")` bind `x` to `x` of `./m`."""
    found: dict[str, Imported] = {}
    for node in nodes(source.root):
        if node.type == "import_statement" and source.python:
            for child in node.named_children:
                module = text(_imported_name(child))
                found[_alias(child) or module.split(".")[0]] = Imported(module, (module,))
        elif node.type == "import_from_statement":
            module = text(node.child_by_field_name("module_name"))
            joined = "" if module.endswith(".") else "."
            for child in node.children_by_field_name("name"):
                name = text(_imported_name(child))
                found[_alias(child) or name] = Imported(name, (module, f"{module}{joined}{name}"))
        elif node.type == "import_statement":
            specifier = _string(node.child_by_field_name("source") or node)
            found.update((name, Imported(original, (specifier,))) for name, original in
                         _js_bound(node))  # fmt: skip
        elif node.type == "variable_declarator" and (required := _required(node)) is not None:
            found.update((name, Imported(original, (required,))) for name, original in
                         _js_bound(node.child_by_field_name("name") or node))  # fmt: skip
    return found


def _alias(node: Node) -> str:
    return text(node.child_by_field_name("alias")) if node.type == "aliased_import" else ""


def _required(declarator: Node) -> str | None:
    """What `const ... = require("m")` requires (None: not a require)."""
    value = declarator.child_by_field_name("value")
    if value is None or value.type not in CALLS:
        return None
    arguments = value.child_by_field_name("arguments")
    first = arguments.named_children[:1] if arguments is not None else []
    named = text(value.child_by_field_name("function")) == "require"
    return _string(first[0]) if named and first and first[0].type == "string" else None


# What a bare name in a JavaScript import or `require` pattern is in its module, by where
# it stands (None: the same name).
_JS_BINDERS = {"import_clause": "default", "namespace_import": "*", "variable_declarator": "*",
               "object_pattern": None}  # fmt: skip


def _js_bound(node: Node) -> Iterator[tuple[str, str]]:
    """The local names an import clause or a `require` pattern binds, each with its name in
    its module."""
    for child in nodes(node):
        if child.type == "import_specifier":
            name = text(child.child_by_field_name("name"))
            yield text(child.child_by_field_name("alias")) or name, name
        elif child.type == "pair_pattern":
            yield text(child.child_by_field_name("value")), text(child.child_by_field_name("key"))
        elif (child.type in ("identifier", "shorthand_property_identifier_pattern")
              and child.parent is not None and child.parent.type in _JS_BINDERS):  # fmt: skip
            yield text(child), _JS_BINDERS[child.parent.type] or text(child)


def import_files(name: str, source: Source, code: Codebase) -> set[str]:
    """The app files an import of `name`, as written in `source`, may load."""
    if source.python:
        return _python_files(name, source.path, code)
    return _js_files(name, source.path, code)


def _imported_name(node: Node) -> Node | None:
    return node.child_by_field_name("name") if node.type == "aliased_import" else node


def _python_files(name: str, importer: str, code: Codebase) -> set[str]:
    dots = len(name) - len(name.lstrip("."))
    parts = [part for part in name.lstrip(".").split(".") if part]
    folder = posixpath.dirname(importer)
    if dots:
        for _ in range(dots - 1):
            folder = posixpath.dirname(folder)
        bases = [folder]
    else:
        bases = ["", "src", *_ancestors(folder)]
    found = set()
    for base in bases:
        for length in range(1, len(parts) + 1):  # a package's `__init__` runs on the way
            stem = posixpath.join(base, *parts[:length])
            for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
                if code.has(candidate):
                    found.add(candidate)
    return found


def _ancestors(folder: str) -> Iterator[str]:
    while folder:
        yield folder
        folder = posixpath.dirname(folder)


def _js_imports(source: Source) -> Iterator[str]:
    for node in nodes(source.root):
        if node.type in ("import_statement", "export_statement"):
            if (found := node.child_by_field_name("source")) is not None:
                yield _string(found)
        elif node.type in CALLS:
            function = node.child_by_field_name("function")
            if function is not None and (function.type == "import" or text(function) == "require"):
                arguments = node.child_by_field_name("arguments")
                first = arguments.named_children[:1] if arguments is not None else []
                if first and first[0].type == "string":
                    yield _string(first[0])


def _string(node: Node) -> str:
    return "".join(text(child) for child in node.named_children if child.type == "string_fragment")


def _js_files(specifier: str, importer: str, code: Codebase) -> set[str]:
    if specifier.startswith(("@/", "~/")):
        targets = [posixpath.join("src", specifier[2:]), specifier[2:]]
    elif specifier.startswith("."):
        targets = [posixpath.join(posixpath.dirname(importer), specifier)]
    elif specifier.startswith("/"):
        targets = [specifier.lstrip("/")]
    else:
        return set()  # a package
    return {found for target in targets if (found := js_file(target, code)) is not None}


def js_file(target: str, code: Codebase) -> str | None:
    """The app file a JavaScript path names: as written, as its TypeScript source, with a
    suffix, or a folder's index."""
    path = posixpath.normpath(target)
    stem, suffix = posixpath.splitext(path)
    candidates = [path, *(stem + other for other in _AS_TYPESCRIPT.get(suffix, ()))]
    candidates += [path + s for s in _JS_SUFFIXES] + [f"{path}/index{s}" for s in _JS_SUFFIXES]
    return next((c for c in candidates if code.has(c)), None)


def defines(source: Source, name: str) -> bool:
    """Whether `source` defines a function (or method) called `name`."""
    kinds = ("function_definition", "function_declaration", "generator_function_declaration",
             "method_definition")  # fmt: skip
    for node in nodes(source.root):
        if node.type in kinds and text(node.child_by_field_name("name")) == name:
            return True
        if node.type in ("variable_declarator", "assignment_expression"):
            target = node.child_by_field_name("name") or node.child_by_field_name("left")
            value = node.child_by_field_name("value") or node.child_by_field_name("right")
            named = text(target) == name or text(target).endswith(f".{name}")  # exports.send
            if named and value is not None and value.type in _FUNCTION_VALUES:
                return True
    return False


_FUNCTION_VALUES = ("arrow_function", "function_expression", "function")


def calls(source: Source, name: str) -> list[Node]:
    """The calls in `source` of a function called `name` (`name(...)`, `x.name(...)`)."""
    found = []
    for node in nodes(source.root):
        if node.type in CALLS:
            written = "".join(text(node.child_by_field_name("function")).split())
            if written == name or written.endswith(f".{name}"):
                found.append(node)
    return found


def declared_entries(code: Codebase) -> dict[str, str]:
    """The files the project's own manifests start (path → which manifest says so)."""
    found: dict[str, str] = {}
    for path in code.files:
        name = posixpath.basename(path)
        folder = posixpath.dirname(path)
        data = code.read(path) if name in _MANIFESTS or path in MCP_CONFIGS else None
        if data is None:
            continue
        for written in _MANIFESTS.get(name, _mcp_config)(data):
            for target in _targets(written, folder, code):
                found.setdefault(target, path)
    return found


def _targets(written: str, folder: str, code: Codebase) -> Iterator[str]:
    """The files a command, path or `module:function` in a manifest names: an app file, or
    the path of one the app builds (`build/index.js`)."""
    for token in re.split(r"[\s;&|'\"=()]+", written):
        if not token or token.startswith("-"):
            continue
        module = token.split(":")[0] if ":" in token and "/" not in token else None
        if module is not None and re.fullmatch(r"[A-Za-z_][\w.]*", module):
            yield from _python_files(module, posixpath.join(folder, "x"), code)
            continue
        path = posixpath.normpath(posixpath.join(folder, token))
        if (found := js_file(path, code)) is not None:
            yield found
        elif path.endswith((*_JS_SUFFIXES, ".py")) and not path.startswith("../"):
            yield path


def _package_json(data: bytes) -> Iterator[str]:
    manifest = _json(data)
    if not isinstance(manifest, dict):
        return
    for field in ("main", "module", "browser"):
        if isinstance(manifest.get(field), str):
            yield manifest[field]
    yield from _strings(manifest.get("bin"))
    yield from _strings(manifest.get("exports"))
    yield from _strings(manifest.get("scripts"))


def _pyproject(data: bytes) -> Iterator[str]:
    try:
        manifest = tomllib.loads(data.decode(errors="replace"))
    except (tomllib.TOMLDecodeError, ValueError):
        return
    project = manifest.get("project", {})
    for table in (project.get("scripts"), project.get("gui-scripts"),
                  manifest.get("tool", {}).get("poetry", {}).get("scripts")):  # fmt: skip
        yield from _strings(table)


def _lines(data: bytes) -> Iterator[str]:
    """A Procfile's or setup.cfg's commands and `name = module:function` lines."""
    yield from data.decode(errors="replace").splitlines()


def _mcp_config(data: bytes) -> Iterator[str]:
    config = _json(data)
    if not isinstance(config, dict):
        return
    for servers in (config.get("mcpServers"), config.get("servers")):
        for server in servers.values() if isinstance(servers, dict) else ():
            if isinstance(server, dict):
                yield from _strings(server.get("command"))
                yield from _strings(server.get("args"))


_MANIFESTS = {
    "package.json": _package_json,
    "pyproject.toml": _pyproject,
    "Procfile": _lines,
    "setup.cfg": _lines,
}


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# Where a site's files are served from, as a page names them.
_STATIC_FOLDERS = ("", "public", "static", "src", "assets", "www")


def page_script(src: str, page: str, code: Codebase) -> str | None:
    """The app file a page's `<script src>` loads; None for another host's or one the
    project does not hold (a build's output)."""
    src = src.split("?")[0].split("#")[0].strip()
    if found := re.search(r"""filename\s*=\s*['"]([^'"]+)""", src):  # Flask's url_for
        src = f"/static/{found[1]}"
    if not src or re.match(r"^[a-z]+:|^//", src, re.IGNORECASE) or "{" in src or "<" in src:
        return None
    folder = posixpath.dirname(page)
    if src.startswith("/"):
        targets = [posixpath.join(base, src.lstrip("/")) for base in _STATIC_FOLDERS]
        targets += [posixpath.join(f, src.lstrip("/")) for f in _ancestors(folder)]
    else:
        targets = [posixpath.join(folder, src), *(posixpath.join(b, src) for b in _STATIC_FOLDERS)]
    return next((posixpath.normpath(t) for t in targets if code.has(posixpath.normpath(t))), None)


def is_local_script(src: str) -> bool:
    """Whether a page's `<script src>` names a file the site builds itself: not another
    host's, nor a dependency's."""
    src = src.strip()
    return (
        not re.match(r"^[a-z]+:|^//", src, re.IGNORECASE)
        and "{{" not in src
        and not re.search(r"(^|/)(node_modules|bower_components|vendor)/", src)
    )


def compiled_from(path: str, code: Codebase) -> str | None:
    """The TypeScript source of a file the project's build writes (`build/index.js` from
    `src/index.ts`, by its `tsconfig.json`'s `outDir` and `rootDir`), if the project has it."""
    for config in (f for f in code.files if posixpath.basename(f) == "tsconfig.json"):
        options = _json(_without_comments(code.read(config) or b""))
        options = options.get("compilerOptions", {}) if isinstance(options, dict) else {}
        base = posixpath.dirname(config)
        out = posixpath.normpath(posixpath.join(base, str(options.get("outDir") or ".")))
        root = posixpath.normpath(posixpath.join(base, str(options.get("rootDir") or ".")))
        if out == "." or not path.startswith(f"{out}/"):
            continue
        inside = posixpath.normpath(posixpath.join(root, path[len(out) + 1 :]))
        stem = posixpath.splitext(inside)[0]
        for suffix in (".ts", ".tsx", ".mts", ".cts", ".js"):
            if code.has(stem + suffix):
                return stem + suffix
    return None


def _without_comments(data: bytes) -> bytes:
    """JSON with `//` and `/* */` comments (as tsconfig allows) made plain."""
    pattern = rb'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/'
    return re.sub(pattern, lambda m: m.group(1) or b"", data, flags=re.DOTALL)


# Files a front-end framework or bundler loads in the browser by convention.
_FRAMEWORKS = frozenset({
    "react-scripts", "vite", "webpack", "parcel", "next", "nuxt", "gatsby", "@remix-run/react",
    "astro", "@sveltejs/kit", "svelte", "vue", "@angular/core", "react-dom", "preact",
})  # fmt: skip
_ENTRY_PATTERNS = (
    r"(src/)?(pages|app)/.+\.(js|jsx|ts|tsx)$",
    r"(src/)?instrumentation-client\.(js|ts)$",
    r"src/(index|main|App|app)\.(js|jsx|ts|tsx|mjs)$",
    r"(src/)?app/(root|entry\.client)\.(js|jsx|ts|tsx)$",
    r"src/routes/(.+/)?\+(layout|page)\.(js|ts|svelte)$",
    r"(src/)?plugins/.+\.(js|ts)$",
    r"gatsby-browser\.(js|jsx|ts|tsx)$",
)


def browser_roots(code: Codebase) -> tuple[set[str], list[tuple[str, str]]]:
    """The files a browser runs: each page's scripts, and a front-end framework's entries;
    and the scripts pages load that the project does not hold (page, src): built bundles."""
    roots: set[str] = set()
    missing = []
    for page in code.pages:
        for src in page.scripts:
            if (found := page_script(src, page.path, code)) is not None:
                roots.add(found)
            elif is_local_script(src):
                missing.append((page.path, src))
    if _uses_framework(code):
        patterns = [re.compile(pattern) for pattern in _ENTRY_PATTERNS]
        for path in code.files:
            folder_free = re.sub(r"^(.+/)?(?=(src/)?(pages|app)/)", "", path)
            if any(pattern.match(folder_free) or pattern.match(path) for pattern in patterns):
                roots.add(path)
    return roots, missing


def _uses_framework(code: Codebase) -> bool:
    for path in (f for f in code.files if posixpath.basename(f) == "package.json"):
        manifest = _json(code.read(path) or b"")
        if not isinstance(manifest, dict):
            continue
        for field in ("dependencies", "devDependencies"):
            if isinstance(manifest.get(field), dict) and _FRAMEWORKS & set(manifest[field]):
                return True
    return False
