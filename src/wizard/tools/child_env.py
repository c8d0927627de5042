"""The environment of every command the agent runs, and of the engines: an allowlist.

Standard library only: the engine's early start (`runner.harness.pi.early`) builds the pi
host's environment from it with nothing else of wizard loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

CHILD_ENV_ALLOW = (
    *("PATH", "HOME", "SHELL", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "TERM", "LANG"),
    *("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"),
    *("CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"),
    *("http_proxy", "https_proxy", "no_proxy"),
)
CHILD_ENV_ALLOW_PREFIXES = ("LC_",)


def child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment for a command the agent runs: the allowlist only."""
    source = os.environ if environ is None else environ
    return {
        key: value
        for key, value in source.items()
        if key in CHILD_ENV_ALLOW or key.startswith(CHILD_ENV_ALLOW_PREFIXES)
    }
