import os
import subprocess
import sys

import pytest


@pytest.fixture
def innet_cmd():
    """Run the real `innet` command (as a user would) and return the completed process."""

    def run(*args, cwd=None):
        return subprocess.run(
            [sys.executable, "-m", "innet", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            timeout=600,
        )

    return run
