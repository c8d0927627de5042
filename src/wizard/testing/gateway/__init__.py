"""The scripted model gateway: Anthropic Messages and OpenAI Chat over real HTTP, offline."""

from wizard.testing.gateway.scenario import Scenario, load_scenario
from wizard.testing.gateway.server import RequestRecord, ScriptedGateway

__all__ = ["RequestRecord", "Scenario", "ScriptedGateway", "load_scenario"]
