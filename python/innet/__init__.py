"""innet: a lab for in-network caching and computing.

The simulator is Rust (``innet._native``); this package is the front: the ``innet`` command,
a notebook API (``innet.run``), result files (JSON summary, Parquet/CSV tables) and plots.
"""

from innet.api import InnetError, InvariantError, Result, UserInputError, list_experiments, run

__all__ = ["InnetError", "InvariantError", "Result", "UserInputError", "list_experiments", "run"]
