"""The fault suite runs wizard as a user would, with the scenarios' standalone gateway."""

from tests.scenarios.conftest import gateway_process

__all__ = ["gateway_process"]
