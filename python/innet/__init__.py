"""innet: a lab for in-network caching and computing.

The simulator is Rust (``innet._native``); this package is the front: the ``innet`` command,
a notebook API (``innet.run``), result files (JSON summary, Parquet/CSV tables) and plots.
The API is loaded on first use, so ``innet --help`` does not load the simulator.
"""

from __future__ import annotations

from typing import Any

__all__ = ["InnetError", "InvariantError", "Result", "UserInputError", "list_experiments", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from innet import api

        return getattr(api, name)
    raise AttributeError(f"module 'innet' has no attribute {name!r}")
