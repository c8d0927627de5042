"""The project's git config as a command sees it: its credentials masked.

A CI checkout leaves its token in `.git/config` (`http.<url>.extraheader`, or in the remote's
URL), where any command the agent runs could read it. The sandbox runtime shows every
repository config of the project to commands with each credential replaced by a stand-in
(its `credentials.files` masking): git still reads a valid config, with the remote and its
host, and no token. The runtime would swap a stand-in back only on a connection it
terminates TLS for, which wizard never configures. Git's history stays readable (a command
needs `git log`); a secret committed there is not hidden.
"""

from __future__ import annotations

import re
from pathlib import Path


def _any_case(word: str) -> str:
    """`word` (letters and `-`) as a JavaScript pattern of any case (git's keys are)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


# A key whose value is a credential: a header's (`http.<url>.extraheader`), or any key named
# for one (`github.token`, `hub.oauthtoken`, `sendemail.smtppass`, `*.password`, `*.secret`).
_WORDS = ("extraheader", "token", "password", "passwd", "pass", "secret", "apikey", "api-key")
_KEY = rf"[A-Za-z0-9-]*(?:{'|'.join(_any_case(w) for w in _WORDS)})[A-Za-z0-9-]*"
# A JavaScript pattern (the runtime's): group 1 is what is masked, such a key's value after
# `key =`, or the user and password of a URL (`https://user:token@host`).
CREDENTIAL_PATTERN = rf"((?<=(?:^|\n)[ \t]*{_KEY}[ \t]*=[ \t]*)[^\n]+|(?<=://)[^\s/@]+(?=@))"
# The same credentials, as Python finds them: a config with none is not masked (the runtime
# would warn on every command that its pattern matched nothing).
_CREDENTIAL = re.compile(
    rf"^[ \t]*[a-z0-9-]*(?:{'|'.join(map(re.escape, _WORDS))})[a-z0-9-]*[ \t]*=[ \t]*\S"
    r"|://[^\s/@]+@",
    re.IGNORECASE | re.MULTILINE,
)


def holds_credentials(config: Path) -> bool:
    """Whether a repository config holds a credential to mask (one that cannot be read is
    masked all the same)."""
    try:
        return _CREDENTIAL.search(config.read_text(errors="replace")) is not None
    except OSError:
        return True
