"""wizard: runs LLM coding agents through setup programs and tells the truth about the end."""

import logging

__version__ = "0.1.0"

# A library logs nowhere by default (no bare warnings on a user's stderr); a run routes
# wizard's log records into its own log file.
logging.getLogger(__name__).addHandler(logging.NullHandler())
