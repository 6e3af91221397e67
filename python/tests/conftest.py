import os
import subprocess
import sys

import pytest

# Subprocesses (`python -m innet ...`) run this checkout's package too, like the tests do
# through pyproject's `pythonpath`.
_PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["PYTHONPATH"] = _PYTHON_DIR + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")


@pytest.fixture(scope="session")
def cassandra_cache():
    """Cassandra's jars fetched (scripts/cassandra.sh fetch), once for the session."""
    from netns_rig import fetch_cassandra

    fetch_cassandra()


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
