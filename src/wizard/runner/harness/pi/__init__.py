"""The pi harness: the real pi coding agent driven over its RPC mode."""
