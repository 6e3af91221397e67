"""`innet gigaflow pipeline|traffic|traversals`: Pipebench, the paper's five OVS pipelines with
ClassBench rulesets and CAIDA-like traffic (docs/gigaflow.md, "Pipebench")."""

from __future__ import annotations

import click

PIPELINES = ["OFD", "PSC", "OLS", "ANT", "OTL"]


class GigaflowError(click.ClickException):
    """A user-facing error (exit 2, one line)."""


def _native_call(fn, *args):
    from innet import _native

    try:
        return getattr(_native, fn)(*args)
    except _native.UserInputError as e:
        raise GigaflowError(str(e)) from None


def _common(f):
    f = click.option("--seed", type=int, default=1, show_default=True, help="Ruleset seed.")(f)
    f = click.option("--rules", type=int, default=1000, show_default=True, help="ClassBench rules mapped along traversals.")(f)
    f = click.option("--profile", type=click.Choice(["acl", "fw", "ipc"]), default="acl", show_default=True, help="ClassBench profile.")(f)
    f = click.argument("pipeline", type=click.Choice(PIPELINES, case_sensitive=False))(f)
    return f


def register(cli: click.Group) -> None:
    @cli.group("gigaflow")
    def gigaflow() -> None:
        """Gigaflow's benchmark inputs (Pipebench): pipelines, rulesets, traffic."""

    @gigaflow.command("pipeline")
    @_common
    def pipeline(pipeline: str, profile: str, rules: int, seed: int) -> None:
        """Print PIPELINE's flow file (ovs-ofctl add-flows syntax)."""
        click.echo(_native_call("gigaflow_pipeline", pipeline, profile, rules, seed), nl=False)

    @gigaflow.command("traffic")
    @_common
    @click.option("--locality", type=click.Choice(["high", "low"]), default="high", show_default=True)
    @click.option("--flows", type=int, default=100_000, show_default=True, help="Unique flows.")
    @click.option("--traffic-seed", type=int, default=1, show_default=True)
    @click.option(
        "--timing",
        type=click.Choice(["window", "arrivals"]),
        default="window",
        show_default=True,
        help="window: a replayed trace slice (every flow spread over the run, numbered by first packet); arrivals: Poisson flow starts, log-normal gaps.",
    )
    @click.option(
        "--flow-sizes",
        default="mean:30",
        show_default=True,
        help="Packets per flow: mean:M (a capped power law with mean M; 30 is the artifact's replay volume) or pareto:S (Pareto shape S; pareto:1.2 is the older ~5-packet form).",
    )
    def traffic(pipeline: str, profile: str, rules: int, seed: int, locality: str, flows: int, traffic_seed: int, timing: str, flow_sizes: str) -> None:
        """Print PIPELINE's traffic as CSV (time_ns, flow, headers), one packet a line."""
        click.echo(_native_call("gigaflow_traffic", pipeline, profile, rules, seed, locality, flows, traffic_seed, timing, flow_sizes), nl=False)

    @gigaflow.command("traversals")
    @_common
    @click.option("--locality", type=click.Choice(["high", "low"]), default="low", show_default=True)
    @click.option("--flows", type=int, default=20_000, show_default=True, help="Unique flows.")
    def traversals(pipeline: str, profile: str, rules: int, seed: int, locality: str, flows: int) -> None:
        """Count PIPELINE's distinct traversals (spec and slow path over traffic) against Table 1 (JSON)."""
        click.echo(_native_call("gigaflow_traversals", pipeline, profile, rules, seed, locality, flows))
