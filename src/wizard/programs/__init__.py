"""Programs say what a run is for: its skill, prompt, abort cases and outro copy."""

from wizard.programs.registry import PROGRAMS, get_program, skill_program
from wizard.programs.types import AbortCase, ProgramBinding, ProgramConfig

__all__ = [
    "PROGRAMS",
    "AbortCase",
    "ProgramBinding",
    "ProgramConfig",
    "get_program",
    "skill_program",
]
