"""The sandbox policy: one set of rules, what the runtime is given, and what a run needs."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from wizard.errors import UsageError
from wizard.events import EventRecorder, LogLine
from wizard.runner.previewing import Workspace
from wizard.runner.sandboxing import NO_SANDBOX_WARNING, RunSandbox
from wizard.tools import sandbox
from wizard.tools.fence import Fence
from wizard.tools.sandbox import (
    REGISTRY_HOSTS,
    SECRET_HOME_PATHS,
    build_policy,
    check_sandbox,
    process_cap,
    remove_cgroup,
    sandbox_enabled,
)
from wizard.tools.sandbox_paths import etc_closed


def test_the_policy_writes_only_the_project_and_the_runs_temp(tmp_path: Path) -> None:
    home, temp = tmp_path / "home", tmp_path / "t"
    (home / ".nvm").mkdir(parents=True)
    (tmp_path / "p" / "vendor" / "lib" / ".git").mkdir(parents=True)
    (tmp_path / "p" / ".git").mkdir()
    (tmp_path / "p" / ".husky").mkdir()
    policy = build_policy(tmp_path / "p", temp, home=home, environ={})
    project = str((tmp_path / "p").resolve())
    assert policy.write == (project, str(temp))
    assert f"{project}/.git" in policy.deny_write
    assert f"{project}/vendor/lib/.git" in policy.deny_write
    assert f"{project}/.husky" in policy.deny_write
    for name in (".env", ".env.*", ".envrc", "*.env"):
        assert f"{project}/**/{name}" in policy.deny_read


@pytest.mark.skipif(sys.platform != "linux", reason="the /etc allowlist is Linux's")
def test_etc_is_opened_by_allowlist_and_what_others_may_not_read_stays_closed(
    tmp_path: Path,
) -> None:
    """Of `/etc`, only what programs need; in that, a root-only file is closed (a command
    run as root reads no more than any user could)."""
    etc = tmp_path / "etc"
    for folder in ("ssl/certs", "ssl/private", "postgresql/15", "python3.11", "xdg/pip", "apt"):
        (etc / folder).mkdir(parents=True)
    for name in ("passwd", "ld.so.cache", "login.defs", "ssl/certs/ca.pem", "ssl/private/k.pem",
                 "postgresql/15/pg_hba.conf", "xdg/pip/pip.conf", "debian_version",
                 "python3.11/sitecustomize.py", "ssl/openssl.cnf"):  # fmt: skip
        (etc / name).write_text("x\n")
    (etc / "os-release").symlink_to("../usr/lib/os-release")
    (etc / "xdg" / "autostart").mkdir()
    (etc / "ssl" / "private").chmod(0o710)
    (etc / "ssl" / "openssl.cnf").chmod(0o640)
    closed = etc_closed(etc)
    assert sorted(Path(p).relative_to(etc).as_posix() for p in closed) == [
        "apt", "login.defs", "postgresql", "ssl/openssl.cnf", "ssl/private", "xdg/autostart",
    ]  # fmt: skip
    policy = build_policy(tmp_path / "p", tmp_path / "t", home=tmp_path / "home", environ={})
    assert "/etc" in policy.allow_read and "/etc/passwd" not in policy.deny_read
    assert "/etc/login.defs" in policy.deny_read or not Path("/etc/login.defs").exists()


def test_a_repository_without_a_git_name_is_closed_and_its_config_masked(tmp_path: Path) -> None:
    """`git init --bare docs` with a token in its config: closed to writes like a `.git`,
    and its credential masked; a folder that merely holds a file named HEAD is not."""
    import subprocess

    project = tmp_path / "p"
    (project / "notes").mkdir(parents=True)
    (project / "notes" / "HEAD").write_text("a file\n")
    subprocess.run(["git", "init", "-q", "--bare", str(project / "docs")], check=True)
    with open(project / "docs" / "config", "a") as config:
        config.write('[remote "o"]\n\turl = https://x-access-token:ghs_1@github.com/o/r\n')
    policy = build_policy(project, tmp_path / "t", home=tmp_path / "home", environ={})
    root = str(project.resolve())
    assert f"{root}/docs" in policy.deny_write
    assert not any(path.startswith(f"{root}/notes") for path in policy.deny_write)
    assert policy.masked == (f"{root}/docs/config",)


def test_outside_the_project_the_home_folder_is_closed_but_toolchains(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for folder in (".nvm", ".cache/pip", ".ssh", ".config/wizard"):
        (home / folder).mkdir(parents=True)
    policy = build_policy(tmp_path / "p", tmp_path / "t", home=home, environ={})
    assert str(home) in policy.deny_read
    assert tempfile.gettempdir() in policy.deny_read  # other runs' folders and tokens
    assert {str(home / ".nvm"), str(home / ".cache/pip")} <= set(policy.allow_read)
    assert not any(p.startswith(str(home / ".ssh")) for p in policy.allow_read)
    assert not any(p.startswith(str(home / ".config")) for p in policy.allow_read)
    assert policy.command_env["TMPDIR"] == str(tmp_path / "t")
    assert policy.command_env["npm_config_cache"] == str(tmp_path / "t" / "caches" / "npm")


def test_other_names_of_an_env_file_are_closed_too(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / ".env").write_text("KEY=1\n")
    os.link(tmp_path / "p" / ".env", tmp_path / "p" / "settings.txt")
    policy = build_policy(tmp_path / "p", tmp_path / "t", environ={})
    assert str((tmp_path / "p" / "settings.txt").resolve()) in policy.deny_read


def test_the_network_allows_registries_program_hosts_and_the_setting(tmp_path: Path) -> None:
    environ = {"WIZARD_SANDBOX_ALLOW_HOSTS": "git.example.com, ,cdn.example.com"}
    policy = build_policy(tmp_path, tmp_path, hosts=("us.i.posthog.com",), environ=environ)
    assert policy.allow_hosts == (
        *REGISTRY_HOSTS, "us.i.posthog.com", "git.example.com", "cdn.example.com"
    )  # fmt: skip
    config = policy.host_spec()["config"]
    assert config["network"]["allowedDomains"] == list(policy.allow_hosts)
    assert config["filesystem"]["allowWrite"] == list(policy.write)


def test_a_runs_private_folders_are_closed_too(tmp_path: Path) -> None:
    policy = build_policy(tmp_path, tmp_path, environ={}, private=[tmp_path / "state"])
    closed = policy.denying(tmp_path / "agent")
    assert str(tmp_path / "state") in policy.deny_read
    assert closed.deny_read[-1] == str(tmp_path / "agent")
    assert str(tmp_path / "agent") not in policy.deny_read  # a new value; the old one unchanged


@pytest.mark.parametrize(
    ("environ", "flag", "on"),
    [({}, False, True), ({}, True, False), ({"WIZARD_SANDBOX": "off"}, False, False),
     ({"WIZARD_SANDBOX": "0"}, False, False), ({"WIZARD_SANDBOX": "on"}, False, True)],
)  # fmt: skip
def test_the_sandbox_is_on_unless_turned_off(environ: dict[str, str], flag: bool, on: bool) -> None:
    assert sandbox_enabled(environ, flag) is on


def test_missing_tools_stop_the_run_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox.platform, "system", lambda: "Linux")
    monkeypatch.setattr(sandbox.shutil, "which", _which_without(shutil.which, "bwrap", "rg", "dnf"))
    with pytest.raises(UsageError) as raised:
        check_sandbox()
    assert "needs bubblewrap, ripgrep" in raised.value.message
    assert "apt-get install bubblewrap ripgrep" in (raised.value.hint or "")
    assert "--no-sandbox" in (raised.value.hint or "")


def _which_without(real: object, *names: str) -> object:
    def which(name: str) -> str | None:
        if name in names:
            return None
        return "/usr/bin/apt-get" if name == "apt-get" else real(name)  # type: ignore[operator]

    return which


def test_off_warns_loudly_and_builds_no_policy(tmp_path: Path) -> None:
    recorder = EventRecorder()
    run = RunSandbox.open(
        Workspace(tmp_path, tmp_path), "r1", (), {"WIZARD_SANDBOX": "off"}, recorder
    )
    assert run.policy is None and run.warnings == (NO_SANDBOX_WARNING,)
    (warning,) = [e for e in recorder.events if isinstance(e, LogLine)]
    assert warning.level == "warning" and "OFF" in warning.message


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_run_sandbox_makes_and_removes_its_folders(tmp_path: Path) -> None:
    run = RunSandbox.open(
        Workspace(tmp_path, tmp_path), "r2", ("us.i.posthog.com",), {}, EventRecorder()
    )
    assert run.policy is not None and run.temp_dir is not None and run.temp_dir.is_dir()
    assert str(run.temp_dir) in run.policy.write
    assert (run.disk is not None) == bool(run.cgroups)  # the write cap needs the cgroups
    run.close()
    assert not run.temp_dir.exists()
    assert not any(group.exists() for group in run.cgroups)
    assert run.disk is None or not run.disk._thread.is_alive()


def test_the_caps_join_cgroups_or_set_ulimit() -> None:
    """Each cgroup made is joined by the prefix and holds its limit; without a pids cgroup,
    an ordinary user's commands get `ulimit -u`; root's get no process cap."""
    caps = process_cap("unit-test", 300)
    try:
        joins = "".join(f"echo $$ > '{group}/cgroup.procs' && " for group in caps.groups)
        assert caps.prefix.startswith(joins)
        limits = {
            name: (group / name).read_text().strip()
            for group in caps.groups
            for name in ("pids.max", "memory.limit_in_bytes", "memory.max")
            if (group / name).exists()
        }
        assert caps.memory == (limits.get("memory.limit_in_bytes", limits.get("memory.max"))
                               == str(300 << 20))  # fmt: skip
        if "pids.max" in limits:
            assert caps.processes and limits["pids.max"] == str(sandbox.MAX_PROCESSES)
        else:
            assert caps.processes == (os.geteuid() != 0)
            assert ("ulimit -u " in caps.prefix) == caps.processes
    finally:
        for group in caps.groups:
            remove_cgroup(group)
    assert not any(group.exists() for group in caps.groups)


def test_the_fence_leaves_env_only_rules_to_the_sandbox(tmp_path: Path) -> None:
    plain, sandboxed = Fence(tmp_path), Fence(tmp_path, sandboxed=True)
    for command in ("grep -r TODO src", "rg --hidden TODO"):
        assert not plain.check("bash", {"command": command}).allow
        assert sandboxed.check("bash", {"command": command}).allow
    # What the fence explains or ends the run for stays, sandbox or not.
    assert not sandboxed.check("bash", {"command": "cat .env"}).allow


@pytest.mark.parametrize("secret", SECRET_HOME_PATHS)
def test_naming_a_credential_is_critical_from_the_same_list(tmp_path: Path, secret: str) -> None:
    decision = Fence(tmp_path, sandboxed=True).check("bash", {"command": f"cat ~/{secret}"})
    assert not decision.allow and decision.critical


def test_reads_outside_the_project_are_an_allowlist_of_system_folders_and_toolchains() -> None:
    # Outside the system temp folder, whose toolchains are never opened.
    tmp_path = Path(tempfile.mkdtemp(dir=os.environ.get("WIZARD_HOSTILE_ROOT", "/var/tmp")))
    checkouts, tools = tmp_path / "work", tmp_path / "opt" / "node"
    (checkouts / "bin").mkdir(parents=True)
    (checkouts / "app").mkdir()
    (tools / "bin").mkdir(parents=True)
    path = os.pathsep.join([str(checkouts / "bin"), str(tools / "bin"), "/usr/bin", "relative"])
    policy = build_policy(checkouts / "app", tmp_path / "t", environ={"PATH": path},
                          home=tmp_path / "home")  # fmt: skip
    assert policy.deny_read[0] == "/" and "/etc/shadow" in policy.deny_read
    assert str(tools) in policy.allow_read and "/usr" in policy.allow_read
    assert str(checkouts) not in policy.allow_read  # it holds the project and its neighbours
    shutil.rmtree(tmp_path)


def test_only_repository_configs_that_hold_a_credential_are_masked(tmp_path: Path) -> None:
    """The runtime warns on every command about a masked file its pattern matches nothing
    in ("left UNPROTECTED"): a config with no credential is not masked at all."""
    configs = {
        "plain": '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://github.com/o/r\n',
        "header": '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eA==\n',
        "userinfo": '[remote "origin"]\n\turl = https://x-access-token:ghs_1@github.com/o/r\n',
        "token": "[github]\n\ttoken = ghp_1\n[user]\n\tname = passerby\n",
        "smtp": "[sendemail]\n\tsmtpPass = hunter2\n",
    }
    for name, text in configs.items():
        (tmp_path / name / ".git").mkdir(parents=True)
        (tmp_path / name / ".git" / "config").write_text(text)
    policy = build_policy(tmp_path, tmp_path / "tmp", home=tmp_path / "home")
    assert sorted(Path(path).parent.parent.name for path in policy.masked) == [
        "header", "smtp", "token", "userinfo",
    ]  # fmt: skip


@pytest.mark.skipif(shutil.which("node") is None, reason="the runtime's pattern is JavaScript")
def test_the_runtime_masks_every_credential_key_and_nothing_else() -> None:
    """The pattern as the runtime (JavaScript) applies it to a config."""
    import subprocess

    from wizard.tools.git_config import CREDENTIAL_PATTERN

    config = ('[core]\n\tbare = false\n[github]\n\ttoken = ghp_1\n[hub]\n\tOAuthToken = t2\n'
              '[http "https://x/"]\n\textraheader = AUTHORIZATION: basic eA==\n'
              '[remote "o"]\n\turl = https://u:p3@h/r\n[user]\n\tname = passerby\n')  # fmt: skip
    script = ("const p = new RegExp(process.argv[1], 'gu');"
              "process.stdout.write(process.argv[2].replace(p, 'MASKED'))")  # fmt: skip
    masked = subprocess.run(["node", "-e", script, CREDENTIAL_PATTERN, config],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    for secret in ("ghp_1", "t2", "eA==", "u:p3"):
        assert secret not in masked
    assert (
        "bare = false" in masked and "name = passerby" in masked and "https://MASKED@h/r" in masked
    )


def test_a_temp_folder_too_deep_for_a_socket_moves_wizards_sockets_to_tmp_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI runner's deep TMPDIR made a proof's sink socket too long ("AF_UNIX path too
    long"): wizard's folders that hold sockets go to /tmp then, closed like the system's."""
    from wizard.layout import socket_temp_dir

    deep = Path("/var/tmp") / ("d" * 70)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert socket_temp_dir() == "/tmp"
    policy = build_policy(tmp_path / "p", tmp_path / "t", home=tmp_path / "home", environ={})
    assert str(deep) in policy.deny_read and "/tmp" in policy.deny_read
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp")
    assert socket_temp_dir() == "/var/tmp"
