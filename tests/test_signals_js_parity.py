"""`skill_abort_reason` against the JavaScript regex it reimplements, run by the real node."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from wizard.signals import skill_abort_reason

_JS = """
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = cases.map((t) => {
  const m = t.match(/\\[ABORT\\]\\s*(.+?)(?:\\n|$)/);
  const r = m ? m[1].trim() : null;
  return r === "" ? null : r;
});
process.stdout.write(JSON.stringify(out));
"""

_ALPHABET = [
    "[ABORT]",
    " ",
    "\n",
    "\r",
    "\u2028",
    "\u2029",
    "\u00a0",
    "\ufeff",
    "x",
    ".",
    "\x1c",
    "\x85",
    "\t",
    "\u3000",
    "\v",
    "é",
]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_python_parser_matches_the_javascript_regex() -> None:
    rng = random.Random(20261129)
    cases = ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 14))) for _ in range(4000)]
    node = subprocess.run(
        ["node", "-e", _JS], input=json.dumps(cases), capture_output=True, text=True, check=True
    )
    expected = json.loads(node.stdout)
    mismatches = [
        (c, e) for c, e in zip(cases, expected, strict=True) if skill_abort_reason(c) != e
    ]
    assert mismatches == []
    assert sum(e is not None for e in expected) > 500  # the sample exercises real matches
