"""Suite-wide setup."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from wizard.engines.bundle import engines_dir

# Pin the engine directory before any test moves HOME, so the pi installed by
# `wizard engines install pi` is the one every test uses (no reinstall per fake HOME).
os.environ.setdefault("WIZARD_ENGINES_DIR", str(engines_dir()))
# Run journals of the tests' projects stay out of the user's state folder, and go with the run.
if "WIZARD_STATE_DIR" not in os.environ:
    os.environ["WIZARD_STATE_DIR"] = tempfile.mkdtemp(prefix="wizard-test-state-")
    atexit.register(shutil.rmtree, os.environ["WIZARD_STATE_DIR"], True)
