"""The Python API: list experiments, run one, get pandas DataFrames back.

Every experiment comes from the one registry in Rust (``_native.list_experiments``). Its runner
is the simulator (``_native.run_experiment``) or the Python function the registry names
(``module:function``, ``python_runner``), called with the name and the parameters the registry
resolved. pandas is imported
only when a run returns its tables.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from innet import _native

if TYPE_CHECKING:
    import pandas as pd

InnetError = _native.InnetError
UserInputError = _native.UserInputError
InvariantError = _native.InvariantError


@dataclass
class Result:
    """One run: the summary (as parsed JSON and as the exact text) and the tables."""

    experiment: str
    summary: dict[str, Any]
    summary_json: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write summary.json (byte-exact), every table as Parquet and CSV; return the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "summary.json"]
        written[0].write_text(self.summary_json)
        for name, df in self.tables.items():
            pq = out / f"{name}.parquet"
            csv = out / f"{name}.csv"
            df.to_parquet(pq, index=False)
            df.to_csv(csv, index=False)
            written += [pq, csv]
        return written


def list_experiments() -> list[dict[str, Any]]:
    """Every experiment with its description, parameters (name, default, doc) and runner
    (``"simulator"``, or ``"python"`` with the runner's ``module``), sorted by name."""
    return list(_native.list_experiments())


def _as_override(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def python_runner(spec: str) -> Callable[[str, dict[str, Any], Callable[[float], None]], tuple[str, dict]]:
    """The function a registry entry names to run it (``module:function``, e.g.
    ``innet.appswitch.experiments:turnaround``), called with the experiment's name, the resolved
    parameters and a progress callback; it returns (summary JSON text, {table: {column: values}})."""
    module, sep, function = spec.partition(":")
    if not sep or not function:
        raise ValueError(f"runner {spec!r}: expected module:function")
    return getattr(importlib.import_module(module), function)


def run(
    experiment: str,
    quick: bool = False,
    progress: Callable[[float], None] | None = None,
    overrides: Mapping[str, Any] | None = None,
    **params: Any,
) -> Result:
    """Run ``experiment`` with parameters given as keywords (or ``overrides``), e.g.
    ``innet.run("basic.fattree", quick=True, load=0.5)``."""
    merged = {**(overrides or {}), **params}
    ov = {k: _as_override(v) for k, v in merged.items()}
    module = _native.experiment_runner(experiment)
    if module is None:
        summary_json, tables = _native.run_experiment(experiment, ov, quick, progress)
    else:
        resolved = json.loads(_native.resolve_params(experiment, ov, quick))
        summary_json, cols = python_runner(module)(experiment, resolved, progress or (lambda f: None))
        tables = list(cols.items())
    import pandas as pd  # after the run: the simulation does not wait for it

    return Result(
        experiment=experiment,
        summary=json.loads(summary_json),
        summary_json=summary_json,
        tables={name: pd.DataFrame(c) for name, c in tables},
    )
