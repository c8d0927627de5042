"""The CLI through Typer's runner: help, version, listing, and usage errors (exit 2)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.integrations import self_signed_certificate
from wizard import __version__
from wizard.cli import app
from wizard.testing.cli import wizard_env

runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "WIZARD_GATEWAY_URL",
        "WIZARD_GATEWAY_KEY",
        "ANTHROPIC_API_KEY",
        "WIZARD_HARNESS",
        "WIZARD_SEQUENCE",
        "WIZARD_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WIZARD_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("WIZARD_TELEMETRY", "0")


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"wizard {__version__}"


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "skill", "programs", "demo", "engines"):
        assert command in result.output


def test_programs_lists_every_program() -> None:
    result = runner.invoke(app, ["programs"])
    assert result.exit_code == 0
    for program in (
        "revenue-analytics",
        "mcp-analytics",
        "self-driving",
        "replay-vision",
        "transactional-email",
    ):
        assert program in result.output


def test_unknown_program_is_a_usage_error() -> None:
    result = runner.invoke(app, ["run", "revenue-analytic"])
    assert result.exit_code == 2
    assert "Unknown program 'revenue-analytic'" in result.output
    assert "Did you mean 'revenue-analytics'?" in result.output


def test_no_gateway_names_the_settings_and_the_demo(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "transactional-email", "--project", str(tmp_path)])
    assert result.exit_code == 2
    assert "No model gateway is configured" in result.output
    assert "WIZARD_GATEWAY_URL" in result.output and "wizard demo" in result.output


def test_unknown_harness_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "transactional-email", "--project", str(tmp_path), "--harness", "pie"]
    )
    assert result.exit_code == 2 and "Did you mean 'pi'?" in result.output


def test_missing_project_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "transactional-email",
            "--project",
            str(tmp_path / "nope"),
            "--gateway-url",
            "http://127.0.0.1:9",
        ],
    )
    assert result.exit_code == 2 and "does not exist" in result.output


def test_unknown_demo_scenario() -> None:
    result = runner.invoke(app, ["demo", "--scenario", "sucess"])
    assert result.exit_code == 2 and "Did you mean 'success'?" in result.output


def test_engines_status() -> None:
    result = runner.invoke(app, ["engines", "status"])
    assert result.exit_code == 0 and "pi:" in result.output and "node:" in result.output


def test_unknown_engine() -> None:
    result = runner.invoke(app, ["engines", "install", "claude"])
    assert result.exit_code == 2


def _run_args(project: Path, *extra: str) -> list[str]:
    return ["run", "transactional-email", "--project", str(project), *extra]


def test_a_project_that_is_a_file_is_not_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "app.py"
    file.write_text("print('hi')\n")
    result = runner.invoke(app, _run_args(file, "--gateway-url", "http://127.0.0.1:9"))
    assert result.exit_code == 2
    assert f"{file} is not a directory" in result.output and "does not exist" not in result.output


@pytest.fixture
def read_only_project(tmp_path: Path) -> Iterator[Path]:
    """A project even root cannot write to (the immutable attribute), or a chmod'ed one."""
    project = tmp_path / "ro"
    project.mkdir()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("chattr is needed to make a folder read-only for root")
        subprocess.run(["chattr", "+i", str(project)], check=True)
        yield project
        subprocess.run(["chattr", "-i", str(project)], check=True)
    else:
        project.chmod(0o555)
        yield project
        project.chmod(0o755)


def test_a_read_only_project_is_refused_before_the_agent_starts(read_only_project: Path) -> None:
    result = runner.invoke(app, _run_args(read_only_project, "--gateway-url", "http://127.0.0.1:9"))
    assert result.exit_code == 2, result.output
    assert "cannot be written" in result.output and "make the folder writable" in result.output
    assert "Traceback" not in result.output


def test_an_unknown_skill_is_a_usage_error_before_the_gateway(tmp_path: Path) -> None:
    result = runner.invoke(app, ["skill", "transactional-emial", "--project", str(tmp_path)])
    assert result.exit_code == 2
    assert "Unknown skill 'transactional-emial'" in result.output
    assert "Did you mean 'transactional-email'?" in result.output
    assert "gateway" not in result.output.lower()


def test_a_malformed_skill_names_the_users_own_file(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "mine" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("no front matter here\n")
    args = ["skill", "mine", "--project", str(tmp_path), "--skills-dir", str(tmp_path / "skills")]
    result = runner.invoke(app, [*args, "--gateway-url", "http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert f"Malformed skill {skill}: no front matter" in result.output
    assert "wizard-skill-" not in result.output  # no staging copy that is already gone


def test_a_skill_that_is_not_utf8_is_a_clear_skill_error(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "latin" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\n")
    args = ["skill", "latin", "--project", str(tmp_path), "--skills-dir", str(tmp_path / "skills")]
    result = runner.invoke(app, [*args, "--gateway-url", "http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert f"Malformed skill {skill}: it is not UTF-8 text" in result.output


def test_a_skills_dir_setting_that_does_not_exist_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIZARD_SKILLS_DIR", str(tmp_path / "nope"))
    result = runner.invoke(app, _run_args(tmp_path, "--gateway-url", "http://127.0.0.1:9"))
    assert result.exit_code == 2
    assert f"The skills folder {tmp_path / 'nope'} (WIZARD_SKILLS_DIR) does not exist" in (
        result.output
    )


def test_a_usage_error_still_writes_the_outcome_for_machines(tmp_path: Path) -> None:
    outcome_file = tmp_path / "outcome.json"
    result = runner.invoke(
        app, ["run", "nope", "--ci", "--outcome-json", str(outcome_file)], catch_exceptions=False
    )
    assert result.exit_code == 2
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert (last["event"], last["status"], last["exit_code"]) == ("outcome", "usage_error", 2)
    assert last["reason"] == "Unknown program 'nope'."
    datetime.fromisoformat(last["ts"])
    saved = json.loads(outcome_file.read_text())
    assert (saved["status"], saved["exit_code"], saved["run_id"]) == (
        "usage_error",
        2,
        last["run_id"],
    )


def test_no_log_file_is_created_before_a_run_starts(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "transactional-email", "--project", str(tmp_path)])
    assert result.exit_code == 2  # no gateway configured
    logs = tmp_path / "logs"
    assert not logs.exists() or list(logs.iterdir()) == []
    assert "Log file" not in result.output


def test_short_help_and_version_flags() -> None:
    assert runner.invoke(app, ["-V"]).output.strip() == f"wizard {__version__}"
    result = runner.invoke(app, ["run", "-h"])
    assert result.exit_code == 0 and "Usage: wizard run" in result.output


def test_wizard_alone_prints_help() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0 and "Usage: wizard" in result.output and "run" in result.output


def test_help_has_completion_and_no_bool_placeholders() -> None:
    top = runner.invoke(app, ["--help"]).output
    assert "--install-completion" in top
    for command in ("run", "skill", "demo"):
        assert "<bool>" not in runner.invoke(app, [command, "--help"]).output


@pytest.mark.parametrize(
    "variable",
    [
        "WIZARD_HARNESS",
        "WIZARD_SEQUENCE",
        "WIZARD_MODEL",
        "WIZARD_SKILLS_DIR",
        "WIZARD_GATEWAY_URL",
        "WIZARD_GATEWAY_KEY",
        "WIZARD_GATEWAY_API",
    ],
)
def test_every_setting_option_names_its_variable(variable: str) -> None:
    help_text = " ".join(runner.invoke(app, ["run", "--help"]).output.split())
    assert f"[env var: {variable}]" in help_text


def test_programs_are_listed_in_order() -> None:
    output = runner.invoke(app, ["programs"], env={"COLUMNS": "200"}).output
    ids = sorted(["mcp-analytics", "replay-vision", "revenue-analytics", "self-driving",
                  "transactional-email"])  # fmt: skip
    positions = [output.index(program) for program in ids]
    assert positions == sorted(positions)


def test_the_config_file_sits_below_the_environment_and_the_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, project = tmp_path / "config.toml", tmp_path / "app"
    project.mkdir()
    config.write_text('[gateway]\nurl = "http://127.0.0.1:9"\n\n[run]\nharness = "pie"\n')
    monkeypatch.setenv("WIZARD_CONFIG", str(config))
    # From the file: the gateway is configured, and its harness is used (and is wrong).
    result = runner.invoke(app, _run_args(project))
    assert result.exit_code == 2 and "Unknown harness 'pie'" in result.output
    # The environment wins over the file, and a flag wins over the environment.
    monkeypatch.setenv("WIZARD_HARNESS", "pii")
    assert "Unknown harness 'pii'" in runner.invoke(app, _run_args(project)).output
    flagged = runner.invoke(app, _run_args(project, "--harness", "piu"))
    assert "Unknown harness 'piu'" in flagged.output


def test_a_malformed_config_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[gateway]\nurls = "x"\n')
    monkeypatch.setenv("WIZARD_CONFIG", str(config))
    result = runner.invoke(app, _run_args(tmp_path))
    assert result.exit_code == 2
    said = f"The config file {config} is not valid: gateway.urls is not a setting wizard knows."
    assert said in result.output.replace("\n", " ")
    assert "pydantic" not in result.output and "extra_forbidden" not in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--max-turns", "abc"), "--max-turns: 'abc' is not a whole number."),
        (("--max-cost", "x1"), "--max-cost: 'x1' is not a number."),
    ],
)
def test_a_bad_flag_value_is_said_in_wizards_words(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    """Typer converts values with pydantic: its text ("Input should be a valid integer,
    unable to parse string…", error types, links) is never what the user reads."""
    proc = subprocess.run(
        [sys.executable, "-m", "wizard", "run", "transactional-email", "--project",
         str(tmp_path), *args],
        capture_output=True, text=True, env=wizard_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert said in proc.stderr and "Input should be" not in proc.stderr


def test_doctor_names_a_broken_config_file_and_checks_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to end in a traceback."""
    config = tmp_path / "config.toml"
    config.write_text("[run]\nbogus = 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "wizard", "doctor"], capture_output=True, text=True,
        env=wizard_env(tmp_path, WIZARD_CONFIG=str(config)), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert "FAIL config file" in proc.stdout and "run.bogus is not a setting" in proc.stdout
    assert "Node.js" in proc.stdout  # the other checks ran


def test_doctor_reports_each_check_and_fails_on_a_missing_gateway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("WIZARD_GATEWAY_URL", "ANTHROPIC_API_KEY", "WIZARD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WIZARD_CONFIG", "/nonexistent/config.toml")
    monkeypatch.setenv("COLUMNS", "200")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    names = r"Node\.js|pi engine|OS sandbox|Claude Agent SDK|gateway"
    rows = re.findall(rf"^\s*(ok|FAIL|-)\s+({names})\b", result.output, flags=re.MULTILINE)
    marks = {name: mark for mark, name in rows}
    assert set(marks) == {"Node.js", "pi engine", "OS sandbox", "Claude Agent SDK", "gateway"}
    assert marks["gateway"] == "FAIL" and "WIZARD_GATEWAY_URL" in result.output
    monkeypatch.setenv("WIZARD_GATEWAY_URL", "http://127.0.0.1:9")
    result = runner.invoke(app, ["doctor"])
    assert "http://127.0.0.1:9 (anthropic-messages, no key)" in result.output
    assert result.exit_code == (0 if "FAIL" not in result.output else 1)


def test_doctor_names_the_node_version_probes_the_gateway_and_does_not_fail_a_first_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil
    import socket

    from wizard.doctor import run_checks

    if shutil.which("node") is None:
        pytest.skip("needs Node.js")
    monkeypatch.setenv("WIZARD_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("WIZARD_ENGINES_DIR", str(tmp_path / "engines"))  # pi not installed yet
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nothing = f"http://127.0.0.1:{closed.getsockname()[1]}"
    checks = {c.name: c for c in run_checks({**os.environ, "WIZARD_GATEWAY_URL": nothing})}
    assert checks["Node.js"].ok and re.match(r"v\d+\.\d+\.\d+ \(", checks["Node.js"].detail)
    assert checks["pi engine"].ok is None  # informational: the first run installs it
    assert checks["pi engine"].detail.startswith("not installed yet: the first run installs")
    gateway = checks["gateway"]
    assert gateway.ok is False and gateway.detail.endswith("could not connect (connection refused)")


class _Gateway:
    """A gateway on 127.0.0.1 that answers GET /v1/models with `status` (and keeps the key
    it was sent), over TLS with a self-signed certificate when `cert` is given."""

    def __init__(self, status: int, body: bytes = b"{}", cert: tuple[Path, Path] | None = None):
        import ssl
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        keys: list[str] = []
        self.keys = keys

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                keys.append(self.headers.get("x-api-key") or self.headers.get("authorization"))
                self.send_response(status if self.path == "/v1/models" else 404)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if cert is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*cert)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("status", "body", "ok", "said"),
    [
        (200, b'{"data": []}', True, "the key was accepted (GET /v1/models)"),
        (404, b"", True, "the key was not checked (the gateway has no model list)"),
        (401, b'{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}',
         False, "answered 401 Unauthorized: invalid key"),
    ],
)  # fmt: skip
def test_doctor_asks_the_gateway_about_the_key_at_no_cost(
    status: int, body: bytes, ok: bool, said: str
) -> None:
    """It used to say "ok" for any port that accepted a connection, a wrong key included."""
    from wizard.doctor import run_checks
    from wizard.runner.gateway import GatewayFlags

    gateway = _Gateway(status, body)
    try:
        flags = GatewayFlags(url=gateway.url, key="sk-test-key")  # as --gateway-url/--gateway-key
        (check,) = [c for c in run_checks(dict(os.environ), flags) if c.name == "gateway"]
    finally:
        gateway.close()
    assert (check.ok, gateway.keys) == (ok, ["sk-test-key"]), check
    assert check.detail.endswith(said), check.detail
    assert ("gateway key" in check.fix) == (status == 401)


def test_doctor_says_when_the_gateways_certificate_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.doctor import run_checks

    cert, key = self_signed_certificate(tmp_path)
    gateway = _Gateway(200, cert=(cert, key))
    try:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        environ = {**os.environ, "WIZARD_GATEWAY_URL": gateway.url}
        (untrusted,) = [c for c in run_checks(environ) if c.name == "gateway"]
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # httpx reads the process environment
        (trusted,) = [c for c in run_checks(environ) if c.name == "gateway"]
    finally:
        gateway.close()
    assert untrusted.ok is False and "certificate verify failed" in untrusted.detail
    assert "SSL_CERT_FILE" in untrusted.fix
    assert trusted.ok is True and "its certificate trusted" in trusted.detail, trusted


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--max-parallel", "0"], "--max-parallel: must be 1 or more, not 0"),
        (["--bogus"], "Unknown option --bogus."),
        (["--max-cost", "0"], "--max-cost: must be above 0, not 0"),
        (["--max-cost", "-1"], "--max-cost: must be above 0, not -1"),
    ],
    ids=["a-bad-value", "an-unknown-option", "a-cost-budget-of-0", "a-negative-cost-budget"],
)
def test_an_option_click_refuses_still_writes_the_usage_error_outcome(
    tmp_path: Path, args: list[str], reason: str
) -> None:
    from wizard.testing.cli import run_wizard, wizard_env

    target = tmp_path / "outcome.json"
    proc = run_wizard(
        "run", "transactional-email", *args, "--ci", "--outcome-json", str(target),
        env=wizard_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"error: {reason}" in proc.stderr and "See `wizard run --help`." in proc.stderr
    assert "Traceback" not in proc.stderr and "Usage:" not in proc.stderr
    from wizard.testing.contract import assert_valid_line, assert_valid_outcome

    line = json.loads(proc.stdout.strip().splitlines()[-1])
    saved = json.loads(target.read_text())
    assert_valid_line(line)
    assert_valid_outcome(saved)
    for outcome in (line, saved):
        assert (outcome["status"], outcome["exit_code"]) == ("usage_error", 2)
        assert outcome["reason"].startswith(reason) and outcome["program"] == "transactional-email"


def test_patch_out_without_a_preview_is_a_usage_error(tmp_path: Path) -> None:
    argv = ["run", "transactional-email", "--project", str(tmp_path), "--gateway-url",
            "http://127.0.0.1:9", "--patch-out", str(tmp_path / "x.patch")]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and "Add --preview" in result.output


def test_a_preview_without_the_sandbox_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    argv = ["run", "transactional-email", "--project", str(project), "--gateway-url",
            "http://127.0.0.1:9", "--preview", "--no-sandbox"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and "A preview needs the OS sandbox" in result.output
    assert not any(project.iterdir()), "a refused preview left something in the project"


def test_the_config_file_can_make_every_run_a_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.config import with_config
    from wizard.runner.plan import preview_wanted

    config = tmp_path / "config.toml"
    config.write_text("[run]\npreview = true\n")
    environ = with_config({"WIZARD_CONFIG": str(config)})
    assert preview_wanted(None, environ) is True
    assert preview_wanted(False, environ) is False  # --no-preview
    assert preview_wanted(None, {}) is False


def test_apply_and_discard_with_nothing_to_apply_say_so(tmp_path: Path) -> None:
    for command in ("apply", "discard"):
        result = runner.invoke(app, [command, "--project", str(tmp_path)])
        assert result.exit_code == 2 and "No single preview" in result.output


def test_wizard_skill_takes_the_preview_flag_too(tmp_path: Path) -> None:
    argv = ["skill", "transactional-email", "--project", str(tmp_path), "--gateway-url",
            "http://127.0.0.1:9", "--preview", "--no-sandbox"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and "A preview needs the OS sandbox" in result.output


@pytest.mark.parametrize("raised", [KeyboardInterrupt, "abort"])
def test_ctrl_c_before_a_run_begins_is_the_cancelled_screen_never_a_traceback(
    raised: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Typer now vendors Click without `Abort`: `main()`'s `except (click.Abort, ...)` raised
    an AttributeError of its own for any exception, so Ctrl-C before the run began ended in
    a second traceback."""
    import typer

    import wizard.cli

    def interrupted(**_: object) -> None:
        if raised is KeyboardInterrupt:
            raise KeyboardInterrupt
        raise typer.Abort() from KeyboardInterrupt()

    monkeypatch.setattr(wizard.cli, "app", interrupted)
    monkeypatch.setattr("sys.argv", ["wizard", "run", "transactional-email"])
    with pytest.raises(SystemExit) as ended:
        wizard.cli.main()
    assert ended.value.code == 130
    assert "Traceback" not in capsys.readouterr().err


def _model_built_as_ctrl_c_lands() -> None:
    """Build a pydantic model while a Ctrl-C lands: pydantic_core calls back into Python to
    build a literal's validator (the literal's repr here), and a KeyboardInterrupt raised
    there comes out as pydantic_core's own SchemaError, as a real one did at import."""
    from typing import Literal

    import pydantic

    class Pressed:
        landed = False

        def __repr__(self) -> str:  # once: a failing test's report shows it
            if not Pressed.landed:
                Pressed.landed = True
                raise KeyboardInterrupt
            return "Pressed()"

    pressed = Pressed()
    pydantic.create_model("Fault", fault=(Literal[pressed], pressed))  # type: ignore[valid-type]


def test_a_ctrl_c_pydantic_turned_into_its_own_error_is_the_cancelled_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C while `wizard demo` imported the scripted gateway's models ended in a
    SchemaError traceback and exit 1, not the cancelled screen and 130."""
    import pydantic_core
    import typer

    from wizard.cli_refusals import cancellable
    from wizard.interrupts import is_ctrl_c

    with pytest.raises(pydantic_core.SchemaError) as disguised:
        _model_built_as_ctrl_c_lands()
    assert is_ctrl_c(disguised.value)
    with pytest.raises(pydantic_core.SchemaError) as other:  # another cause: no Ctrl-C
        pydantic_core.SchemaValidator({"type": "no-such-type"})  # type: ignore[misc,arg-type]
    assert not is_ctrl_c(other.value)
    assert not is_ctrl_c(ValueError("KeyboardInterrupt here")) and not is_ctrl_c(typer.Exit(1))

    demo = typer.Typer()
    demo.command()(_model_built_as_ctrl_c_lands)
    reports: list[list[str]] = []
    cancellable(demo, report=lambda argv: reports.append(argv) or 130)
    monkeypatch.setattr("sys.argv", ["wizard", "demo"])
    with pytest.raises(SystemExit) as ended:
        demo(standalone_mode=True, args=[])
    assert ended.value.code == 130 and reports == [["demo"]]
    assert "Traceback" not in capsys.readouterr().err


def test_a_ctrl_c_while_wizard_loads_is_the_cancelled_screen_in_any_disguise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`__main__` ends a Ctrl-C during wizard's own imports as cancelled, in either form."""
    import wizard.__main__ as entry

    monkeypatch.setattr(entry, "_cancelled_while_loading", lambda: 130)
    for loading in (_model_built_as_ctrl_c_lands, _raise_keyboard_interrupt):
        monkeypatch.setattr(entry, "_start_early", loading)
        with pytest.raises(SystemExit) as ended:
            entry.run()
        assert ended.value.code == 130
    monkeypatch.setattr(entry, "_start_early", _raise_value_error)
    with pytest.raises(ValueError):  # anything else is no Ctrl-C: it is not hidden
        entry.run()


def _raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt


def _raise_value_error() -> None:
    raise ValueError("a real bug")


def test_shell_completion_is_printed(tmp_path: Path) -> None:
    """`wizard --show-completion` used to end in a second traceback (Typer's vendored Click
    has no `click.Abort` for wizard's own handler to name)."""
    proc = subprocess.run(
        [sys.executable, "-m", "wizard", "--show-completion", "bash"], capture_output=True,
        text=True, env=wizard_env(tmp_path, SHELL="/bin/bash"), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "_wizard_completion" in proc.stdout and "Traceback" not in proc.stderr


def test_every_run_option_fills_its_flag_and_every_flag_has_its_option() -> None:
    """One table: each run option fills the `RunFlags` field of its name, and each field but
    the one `wizard resume` sets has an option (a field without one could never be set)."""
    from dataclasses import fields

    from wizard.cli_options import RUN_OPTIONS, SCREEN_OPTIONS
    from wizard.launch import Screen
    from wizard.runner.plan import RunFlags

    assert set(RUN_OPTIONS) == {field.name for field in fields(RunFlags)} - {"resume_from"}
    assert set(SCREEN_OPTIONS) == {field.name for field in fields(Screen)}


@pytest.mark.parametrize("command", [["run", "transactional-email"], ["skill", "email-setup"],
                                     ["demo"]])  # fmt: skip
def test_what_main_started_with_the_process_is_handed_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """The timeline `__main__` gives `main` (pi's host, the dependency listing) reaches the
    run each agent command launches: one value, no module state between them."""
    import wizard.launch
    from wizard.ahead import Timeline

    handed: list[object] = []

    def launch(*args: object) -> object:
        handed.append(args[-1])
        raise SystemExit(0)

    monkeypatch.setattr(wizard.launch, "launch", launch)
    ahead = Timeline()
    project = ["--project", str(tmp_path)] if command[0] != "demo" else []
    runner.invoke(app, [*command, *project], obj=ahead)
    assert len(handed) == 1 and handed[0] is ahead


def test_the_commands_gather_their_options_into_flags_and_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `run`, `skill` and `resume` hand on is what the command line said, by name, and
    a command's own `--project` (resume's) stays its own."""
    import wizard.cli as cli

    launched: list[tuple[str, object, object]] = []
    monkeypatch.setattr(cli, "_launch", lambda ctx, program, flags, screen: launched.append(
        (program.id, flags, screen)))  # fmt: skip
    project = tmp_path / "app"
    project.mkdir()
    said = ["--project", str(project), "--max-turns", "7", "--no-verify", "--verbose",
            "--gateway-url", "http://127.0.0.1:9", "--sequence", "orchestrator"]  # fmt: skip
    assert runner.invoke(app, ["run", "transactional-email", *said]).exit_code == 0
    assert runner.invoke(app, ["skill", "email-setup", *said]).exit_code == 0
    for program_id, flags, screen in launched:
        assert program_id in ("transactional-email", "agent-skill")
        assert flags.project == project and flags.max_turns == 7  # type: ignore[attr-defined]
        assert flags.verify_level == "off" and flags.sequence == "orchestrator"  # type: ignore[attr-defined]
        assert flags.gateway.url == "http://127.0.0.1:9"  # type: ignore[attr-defined]
        assert screen.verbose and not screen.ci  # type: ignore[attr-defined]
    result = runner.invoke(app, ["resume", "--project", str(project), "--ci"])
    assert result.exit_code == 2
    assert f"No interrupted orchestrator run of {project} to resume." in result.output


@pytest.mark.parametrize("where", ["root", "home", "above home", "state", "empty"])
def test_a_project_that_is_not_an_apps_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The whole disk, the home folder (its keys and credentials), a folder above it, one
    that holds wizard's own state, or an empty `--project`: a usage error naming the fix,
    before anything is touched."""
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "app" / ".wizard-state"))
    (tmp_path / "app" / ".wizard-state").mkdir(parents=True)
    project = {"root": "/", "home": str(home), "above home": str(tmp_path / "users"),
               "state": str(tmp_path / "app"), "empty": ""}[where]  # fmt: skip
    argv = ["run", "transactional-email", "--project", project, "--gateway-url",
            "http://127.0.0.1:9"]  # fmt: skip
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    said = {"root": "is the whole disk", "home": "is your home folder",
            "above home": "is a folder that holds your home",
            "state": "holds wizard's own state",
            "empty": "is empty: name the project's folder"}[where]  # fmt: skip
    assert said in result.output.replace("\n", " ")
    assert sorted(p.name for p in home.iterdir()) == []


@pytest.mark.parametrize(
    ("variable", "value"),
    [("WIZARD_PREVIEW", "maybe"), ("WIZARD_SANDBOX", "nah"), ("WIZARD_JOURNAL_MAX_FILE", "huge")],
)
def test_a_setting_that_means_nothing_is_a_usage_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """These were ignored (the run went on as if unset) or raised after the agent's run."""
    monkeypatch.setenv(variable, value)
    result = runner.invoke(app, [*_run_args(tmp_path), "--gateway-url", "http://127.0.0.1:9"])
    assert result.exit_code == 2, result.output
    assert f"{variable}={value!r}" in result.output


def test_a_preview_writes_nothing_in_the_project_not_even_a_check(tmp_path: Path) -> None:
    from wizard.programs import get_program
    from wizard.runner import RunFlags, plan_run

    before = tmp_path.stat().st_mtime_ns
    flags = RunFlags(project=tmp_path, gateway_url="http://127.0.0.1:9", preview=True)
    plan = plan_run(get_program("transactional-email"), flags, {})
    assert plan.preview and list(tmp_path.iterdir()) == []
    assert tmp_path.stat().st_mtime_ns == before
