"""Runs the application switch's experiments, which crates/appswitch/src/experiments.rs declares
(names, parameters, quick forms) in the one experiment registry. ``innet.api.run`` calls
``run(name, params, progress)`` with the parameters the registry resolved; the runs themselves
(namespaces, a real Cassandra, ``innet switch run``, pcap replays) are in
``innet.appswitch.experiments`` (Figs. 12, 15, 16, 18, 23), ``innet.appswitch.passes``
(Figs. 17, 19), ``innet.appswitch.timeline`` (Figs. 13-14) and ``innet.appswitch.cluster``
(Fig. 22)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from innet.appswitch import cluster
from innet.appswitch import experiments as exp
from innet.appswitch import passes
from innet.appswitch import timeline

Params = dict[str, Any]
Runner = Callable[[Params, Callable[[float], None]], tuple[str, dict[str, dict[str, list]]]]

RUNNERS: dict[str, Runner] = {
    "appswitch.turnaround": exp.turnaround,
    "appswitch.cachesize": lambda p, progress: exp.sweep("appswitch.cachesize", p, progress),
    "appswitch.skew": lambda p, progress: exp.sweep("appswitch.skew", p, progress),
    "appswitch.readwrite": lambda p, progress: exp.sweep("appswitch.readwrite", p, progress),
    "appswitch.throughput": exp.throughput,
    "appswitch.connections": passes.connections,
    "appswitch.lexical": passes.lexical,
    "appswitch.timeline": timeline.timeline,
    "appswitch.cluster": cluster.cluster,
}


def _check_lists(name: str, params: Params) -> None:
    """Every string parameter of these experiments is a comma-separated list of numbers."""
    from innet import _native

    for k, v in params.items():
        if isinstance(v, str):
            try:
                [float(x) for x in v.split(",")]
            except ValueError:
                raise _native.UserInputError(
                    f"{name}: parameter {k}={v!r}: expected a comma-separated list of numbers") from None


def run(name: str, params: Params, progress: Callable[[float], None]) -> tuple[str, dict[str, dict[str, list]]]:
    """Run ``name`` with resolved ``params``: (summary JSON text, {table: {column: values}})."""
    runner = RUNNERS.get(name)
    if runner is None:
        raise ValueError(f"{name} is declared with runner {__name__} but has no runner here")
    _check_lists(name, params)
    return runner(params, progress)
