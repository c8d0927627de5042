"""Harnesses: adapters over agent engines (pi over RPC, the Claude Agent SDK)."""
