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


def main() -> None:
    """Console-script entry point."""
    app()
