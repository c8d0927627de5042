"""The Anthropic harness: the Claude Agent SDK (`claude-agent-sdk`, the `anthropic` extra)."""
