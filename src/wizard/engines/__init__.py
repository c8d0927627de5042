"""The engines wizard runs, installed and checked: its own box, below the harnesses.

- `bundle`: the Node bundle: the pinned pi coding agent and the pinned sandbox runtime that
  wraps every command the agent runs (installed with `npm ci`, located, verified);
- `claude`: the Claude Agent SDK, imported lazily, and the Claude CLI its wheel bundles;
- `integrity`: whether an installed engine's files are still the ones installed.

The harnesses, `doctor` and the CLI import this box; it imports none of them.
"""
