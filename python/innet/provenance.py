"""Where a result came from: the git commit of the code that made it (with a ``+dirty`` mark
when the work tree had uncommitted changes), and whether a stored result is stale, i.e. made by
a commit other than the current one."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

UNKNOWN = "unknown"


@functools.cache
def current_commit(where: str | Path | None = None) -> str:
    """Short commit of the checkout holding this package (``unknown`` outside git)."""
    cwd = Path(where) if where else Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{sha}+dirty" if dirty else sha


def is_stale(result_commit: str | None, current: str) -> bool:
    """A result is stale when its commit is known and differs from the current one. Results of an
    uncommitted tree (``+dirty``) are stale too: the tree they came from cannot be named."""
    if not result_commit or result_commit == UNKNOWN or current == UNKNOWN:
        return True
    return result_commit != current or result_commit.endswith("+dirty")
