"""The Python API: list experiments, run one, get pandas DataFrames back."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from innet import _native

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
    """Every experiment with its description and parameters (name, default, doc)."""
    from innet import appswitch_experiments, appswitch_figs

    return (list(_native.list_experiments()) + appswitch_experiments.list_experiments()
            + appswitch_figs.list_experiments())


def _as_override(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


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
    from innet import appswitch_experiments

    if experiment in appswitch_experiments.EXPERIMENTS:
        # Real-packet experiments orchestrate processes (namespaces, servers): Python, not Rust.
        summary_json, cols = appswitch_experiments.run(experiment, ov, quick, progress)
        return Result(experiment=experiment, summary=json.loads(summary_json), summary_json=summary_json,
                      tables={name: pd.DataFrame(c) for name, c in cols.items()})
    from innet import appswitch_figs

    if experiment in appswitch_figs.EXPERIMENTS:
        summary_json, cols = appswitch_figs.run(experiment, ov, quick, progress)
        return Result(experiment=experiment, summary=json.loads(summary_json), summary_json=summary_json,
                      tables={name: pd.DataFrame(c) for name, c in cols.items()})
    summary_json, tables = _native.run_experiment(experiment, ov, quick, progress)
    return Result(
        experiment=experiment,
        summary=json.loads(summary_json),
        summary_json=summary_json,
        tables={name: pd.DataFrame(cols) for name, cols in tables},
    )
