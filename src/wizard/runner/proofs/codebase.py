"""The app's code as the proofs read it: its files, parsed once, after the run and before it.

Files are found by a walk that never follows a link and read through the one resolver
(`ProjectRoot`), as the agent's file tools read; dependency, build and `.git` folders and
the installed skill are not the app's code. Python and JavaScript/TypeScript files are
parsed with tree-sitter; a page (HTML, or a template: Jinja, EJS, Handlebars, Nunjucks, Pug)
is read for the scripts it loads and the code it holds inline, which is parsed as
JavaScript.

The tree before the run is the same folder seen through `Before`: the journal's content
before the run of each path the run changed (None for one it added). What the agent wrote
is a claim; what was there before it is the app's.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from wizard.layout import SKILL_FILES
from wizard.listings import HEAVY_FOLDERS
from wizard.names import shown
from wizard.tools.paths import ProjectRoot, Refusal
from wizard.walk import walk

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_SOURCE_BYTES = 1_000_000
NOT_SEARCHED = HEAVY_FOLDERS | {".git"}
# Where a skill writes what it records for wizard: claims, never the app's code.
RECORDS = ".posthog/"
GRAMMARS = {
    ".py": "python",
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "javascript"),
    **dict.fromkeys((".ts", ".mts", ".cts"), "typescript"),
    ".tsx": "tsx",
}
PAGE_SUFFIXES = frozenset({
    ".html", ".htm", ".jinja", ".jinja2", ".j2", ".ejs", ".hbs", ".handlebars", ".njk",
    ".mustache", ".liquid", ".twig", ".pug", ".jade",
})  # fmt: skip
CALLS = frozenset({"call", "call_expression"})
# Template tags inside a script: `{{ x }}`, `{% x %}`, `<%= x %>`, `#{x}`; kept the same
# length so that lines and columns still match the file.
_TAGS = re.compile(rb"\{\{.*?\}\}|\{%.*?%\}|<%.*?%>|#\{[^}]*\}", re.DOTALL)


@dataclass(frozen=True)
class Before:
    """The project before the run, as a change set over the tree after it: each path the
    run changed with its content before (None: the run added it)."""

    changed: Mapping[str, bytes | None]

    def existed(self, path: str) -> bool:
        """Whether `path` was in the project before the run (unchanged, or changed)."""
        return self.changed.get(path, b"") is not None


@dataclass(frozen=True)
class Source:
    """One parsed piece of code: a file, or a script inline in a page (`line`: where it
    starts in its file)."""

    path: str
    language: str
    root: Node
    line: int = 0

    @property
    def python(self) -> bool:
        return self.language == "python"

    def where(self, node: Node) -> str:
        """`path:line` of `node`, as a user reads it."""
        return f"{shown(self.path)}:{self.line + node.start_point[0] + 1}"


@dataclass(frozen=True)
class Page:
    """A page of the app: the scripts it loads (`src` as written) and its inline code."""

    path: str
    scripts: tuple[str, ...]
    inline: tuple[Source, ...]


@cache
def parser(language: str) -> Parser:
    """The tree-sitter parser of `language` (python, javascript, typescript, tsx)."""
    from tree_sitter import Language, Parser

    if language == "python":
        import tree_sitter_python as grammar

        return Parser(Language(grammar.language()))
    if language == "javascript":
        import tree_sitter_javascript as javascript

        return Parser(Language(javascript.language()))
    import tree_sitter_typescript as typescript

    chosen = typescript.language_tsx() if language == "tsx" else typescript.language_typescript()
    return Parser(Language(chosen))


def nodes(node: Node) -> Iterator[Node]:
    """`node` and everything beneath it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def text(node: Node | None) -> str:
    """The source text of `node` ("" for none)."""
    return "" if node is None or node.text is None else node.text.decode(errors="replace")


def callee(call: Node) -> str:
    """A call's callee as an attribute chain (`stripe.checkout.Session.create`)."""
    written = text(call.child_by_field_name("function"))
    return "".join(written.split()).replace("?.", ".")


_TESTS = re.compile(r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*\.py$|_test\.py$|"
                    r"\.(test|spec)\.[cm]?[jt]sx?$")  # fmt: skip


def is_test(path: str) -> bool:
    """Whether `path` is one of the app's tests, not code the app runs."""
    return _TESTS.search(path) is not None


def ends_with(chain: str, target: str) -> bool:
    """Whether the attribute chain `chain` is `target` or ends with `.target`."""
    return chain == target or chain.endswith(f".{target}")


class Codebase:
    """The app's files under `root`: as the run left them, or (`prior`) as they were before
    it, seen through `before`."""

    def __init__(self, root: Path, before: Before | None = None, *, prior: bool = False) -> None:
        self.root, self.changes, self.prior = root, before, prior
        self._resolver = ProjectRoot(root)

    @cached_property
    def _walked(self) -> frozenset[str]:
        found = set()
        for path, _, info in walk(self.root, lambda name: name not in NOT_SEARCHED):
            if stat.S_ISREG(info.st_mode) and _is_app_file(path):
                found.add(path)
        return frozenset(found)

    @cached_property
    def files(self) -> tuple[str, ...]:
        """Every app file, sorted."""
        if not self.prior or self.changes is None:
            return tuple(sorted(self._walked))
        before = self.changes
        now = {path for path in self._walked if before.existed(path)}
        gone = {path for path, content in before.changed.items()
                if content is not None and _is_app_file(path)}  # fmt: skip
        return tuple(sorted(now | gone))

    @cached_property
    def _present(self) -> frozenset[str]:
        return frozenset(self.files)

    def has(self, path: str) -> bool:
        """Whether `path` is an app file of this tree."""
        return path in self._present

    def read(self, path: str) -> bytes | None:
        """The content of the app file `path`, or None."""
        if self.prior and self.changes is not None and path in self.changes.changed:
            return self.changes.changed[path]
        if path not in self._present:
            return None
        data = self._resolver.read_bytes(path, max_bytes=MAX_SOURCE_BYTES)
        return None if isinstance(data, Refusal) else data

    def before(self) -> Codebase | None:
        """This project as it was before the run; None when the run was not journaled."""
        if self.prior or self.changes is None:
            return self if self.prior else None
        return Codebase(self.root, self.changes, prior=True)

    @cached_property
    def sources(self) -> tuple[Source, ...]:
        """Every source file of the app, parsed, and the scripts inline in its pages."""
        found: list[Source] = []
        for path in self.files:
            language = GRAMMARS.get(PurePosixPath(path).suffix.lower())
            if language is None:
                continue
            data = self.read(path)
            if data is not None:
                found.append(Source(path, language, parser(language).parse(data).root_node))
        for page in self.pages:
            found.extend(page.inline)
        return tuple(found)

    def source(self, path: str) -> Source | None:
        """The parsed file `path`, if it is one of the app's sources."""
        return next((s for s in self.sources if s.path == path and s.line == 0), None)

    @cached_property
    def pages(self) -> tuple[Page, ...]:
        """Every page (HTML or a template) of the app, read for its scripts."""
        found = []
        for path in self.files:
            if PurePosixPath(path).suffix.lower() in PAGE_SUFFIXES:
                data = self.read(path)
                if data is not None:
                    found.append(read_page(path, data))
        return tuple(found)


def _is_app_file(path: str) -> bool:
    parts = path.split("/")
    return not path.startswith((SKILL_FILES, RECORDS)) and not any(
        part in NOT_SEARCHED for part in parts[:-1]
    )


def read_page(path: str, data: bytes) -> Page:
    """The scripts `data` (a page at `path`) loads and holds inline."""
    if PurePosixPath(path).suffix.lower() in (".pug", ".jade"):
        return _pug_page(path, data)
    reader = _Scripts()
    try:
        reader.feed(data.decode(errors="replace"))
        reader.close()
    except (AssertionError, ValueError):  # a page html.parser cannot read: its scripts so far
        pass
    inline = tuple(_inline(path, line, code) for line, code in reader.inline)
    return Page(path, tuple(reader.sources), inline)


def _inline(path: str, line: int, code: str) -> Source:
    data = _TAGS.sub(lambda tag: b'"' + b" " * (len(tag[0]) - 2) + b'"', code.encode())
    return Source(path, "javascript", parser("javascript").parse(data).root_node, line)


class _Scripts(HTMLParser):
    """The `<script>` elements of a page: their `src`, and their inline code with its line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.sources: list[str] = []
        self.inline: list[tuple[int, str]] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "script":
            return
        found = dict(attrs)
        kind = (found.get("type") or "").lower()
        if kind and "javascript" not in kind and kind != "module":
            return  # JSON, a template: not code the page runs
        if found.get("src"):
            self.sources.append(str(found["src"]))
        else:
            self._in_script = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append((self.getpos()[0] - 1, data))


_PUG_SRC = re.compile(r"""^\s*script\b[^\n]*?\bsrc\s*=\s*(['"])(.+?)\1""")


def _pug_page(path: str, data: bytes) -> Page:
    """A Pug template's `script(src=...)` elements and `script.` blocks."""
    lines = data.decode(errors="replace").splitlines()
    sources, inline = [], []
    index = 0
    while index < len(lines):
        line = lines[index]
        if found := _PUG_SRC.match(line):
            sources.append(found[2])
        elif line.strip() == "script.":
            indent = len(line) - len(line.lstrip())
            block = []
            while index + 1 < len(lines) and (
                not lines[index + 1].strip()
                or len(lines[index + 1]) - len(lines[index + 1].lstrip()) > indent
            ):
                index += 1
                block.append(lines[index])
            if block:
                inline.append(_inline(path, index - len(block) + 1, "\n".join(block)))
        index += 1
    return Page(path, tuple(sources), tuple(inline))
