"""wizard: runs LLM coding agents through setup programs and tells the truth about the end."""

__version__ = "0.1.0"
