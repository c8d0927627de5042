"""The `wizard` command line. The only module that exits the process."""

from __future__ import annotations

import typer

from wizard import __version__

app = typer.Typer(
    name="wizard",
    help="Run LLM coding agents through setup programs and report truly how each run ended.",
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wizard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Run LLM coding agents through setup programs."""


engines_app = typer.Typer(help="Install and inspect agent engines.", no_args_is_help=True)
app.add_typer(engines_app, name="engines")


@engines_app.command("install")
def engines_install(engine: str = typer.Argument("pi", help="The engine to install: pi.")) -> None:
    """Install an agent engine (pi: npm @mariozechner/pi-coding-agent, exactly pinned)."""
    from wizard.errors import WizardError
    from wizard.runner.harness.pi import engine as pi_engine

    if engine != "pi":
        typer.echo(f"error: unknown engine {engine!r}; the installable engine is 'pi'.", err=True)
        raise typer.Exit(2)
    try:
        installed = pi_engine.installed_pi()
        if installed is not None:
            pi_engine.find_node()
            typer.echo(f"pi {installed.version} is already installed in {installed.prefix}")
            return
        installed = pi_engine.install_pi(progress=lambda line: typer.echo(f"  {line}"))
    except WizardError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"pi {installed.version} installed in {installed.prefix}")


@engines_app.command("status")
def engines_status() -> None:
    """Say which engines are installed, and where."""
    from wizard.errors import WizardError
    from wizard.runner.harness.pi import engine as pi_engine

    try:
        node = str(pi_engine.find_node())
    except WizardError as exc:
        node = f"missing ({exc.message})"
    installed = pi_engine.installed_pi()
    typer.echo(f"node: {node}")
    if installed is None:
        typer.echo(
            f"pi: not installed (expected {pi_engine.PI_VERSION} in {pi_engine.pi_prefix()})"
        )
        typer.echo("    install it with: wizard engines install pi")
    else:
        typer.echo(f"pi: {installed.version} in {installed.prefix}")
    try:
        import claude_agent_sdk  # noqa: F401

        typer.echo("anthropic: claude-agent-sdk installed")
    except ImportError:
        typer.echo("anthropic: claude-agent-sdk not installed (pip install 'wizard[anthropic]')")


def main() -> None:
    """Console-script entry point."""
    app()
