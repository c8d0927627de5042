"""The demo's moving parts around a normal run: the scripted gateway, the intro, the diff."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from wizard.demo.sample import DemoSetup, project_diff
from wizard.errors import WizardError
from wizard.outcome import Outcome
from wizard.signals import DEFAULT_GATEWAY_MARKER
from wizard.testing.gateway import ScriptedGateway
from wizard.tools.sandbox import check_sandbox
from wizard.ui.console import make_console
from wizard.ui.diff import render_diff


@asynccontextmanager
async def demo_services(setup: DemoSetup) -> AsyncIterator[Mapping[str, str]]:
    """Serve the scenario's transcript on 127.0.0.1 for the length of the run."""
    async with ScriptedGateway(setup.transcript) as gateway:
        yield {
            "WIZARD_GATEWAY_URL": gateway.url,
            "WIZARD_GATEWAY_KEY": "",
            "WIZARD_GATEWAY_API": "anthropic-messages",
            "WIZARD_GATEWAY_REFUSAL_MARKER": DEFAULT_GATEWAY_MARKER,
            # The transcript follows the bundled skill: no other skill source may replace it.
            "WIZARD_SKILLS_DIR": "",
            "WIZARD_SKILLS_URL": "",
        }


def demo_sandbox_available() -> bool:
    """Whether the OS sandbox can run here; the demo's scripted model runs without it if not."""
    try:
        check_sandbox()
    except WizardError:
        return False
    return True


def print_demo_intro(setup: DemoSetup, ci: bool, sandboxed: bool = True) -> None:
    """Say plainly what is real and what is scripted."""
    console = make_console(sys.stderr if ci else sys.stdout)
    console.print(
        f"[bold]wizard demo[/bold] · scenario [bold]{setup.scenario}[/bold]\n"
        "The model is scripted: a recorded transcript served by a local gateway on 127.0.0.1, "
        "so no API key is needed.\nThe pi engine, its tools and the file edits are real, on a "
        f"copy of a sample project in {setup.project}."
    )
    if not sandboxed:
        console.print(
            "The OS sandbox is not available here (run `wizard doctor`); the demo's recorded "
            "commands run with the fence alone. Real runs need the sandbox."
        )


def show_changes(setup: DemoSetup, outcome: Outcome, ci: bool) -> None:
    """Print what the agent changed in the sample project."""
    console = make_console(sys.stderr if ci else sys.stdout)
    diff = project_diff(setup.pristine, setup.project)
    if outcome.status == "succeeded":
        console.print("[bold]What the agent changed:[/bold]")
        console.print(render_diff(diff) if diff else "(no changes)")
    else:
        changed = (
            "none of the app's files (only the installed skill)"
            if not diff
            else "the app files below; nothing is reported as set up"
        )
        console.print(f"The agent changed {changed}.")
        if diff:
            console.print(render_diff(diff))
    console.print(
        f"The demo project is kept in {setup.project} (remove {setup.project.parent} when done).",
        soft_wrap=True,
    )
    if outcome.status != "succeeded":  # the screen's advice is for a real run, not the demo
        console.print(
            "This was the demo's scripted model. On your own project, a `wizard run` needs a "
            "model gateway: see “Using it on your project” in the README.",
            soft_wrap=True,
        )
