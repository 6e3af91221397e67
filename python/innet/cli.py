"""The ``innet`` command: list and run experiments, benchmark the simulator.

Contract (shared/DESIGN.md §4): ``innet run EXPERIMENT [--quick] [--set k=v ...] [--out DIR]
[--json]`` writes DIR/summary.json, tables and plots; with ``--json`` stdout carries only the
summary. User errors print one line ``innet: error: ...`` and exit 2; a broken invariant exits 1.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tomllib
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from innet import api, plots

EXIT_USER = 2
EXIT_INVARIANT = 1


class UserError(Exception):
    pass


def _fail(msg: str, code: int = EXIT_USER) -> None:
    click.echo(f"innet: error: {msg}", err=True)
    sys.exit(code)


def _parse_sets(sets: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in sets:
        key, sep, value = s.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set expects key=value, got '{s}'")
        out[key.strip()] = value.strip()
    return out


def _read_config(path: str) -> tuple[str | None, dict[str, str]]:
    """A TOML experiment spec: optional ``experiment = "..."`` and a ``[params]`` table."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: {e}") from None
    unknown = set(data) - {"experiment", "params"}
    if unknown:
        raise UserError(f"{path}: unknown top-level key(s) {sorted(unknown)}; expected 'experiment' and [params]")
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise UserError(f"{path}: [params] must be a table")
    return data.get("experiment"), {k: api._as_override(v) for k, v in params.items()}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """innet: in-network caching and computing, simulated and on real packets."""


@cli.command("list")
def list_cmd() -> None:
    """Name every experiment."""
    for e in api.list_experiments():
        click.echo(f"{e['name']:28s} {e['description']}")


@cli.command("run")
@click.argument("experiment")
@click.option("--quick", is_flag=True, help="The small form that runs in seconds.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a parameter (repeatable).")
@click.option("--config", "config", metavar="FILE.toml", help="Parameters from a TOML spec ([params] table).")
@click.option("--out", "out", metavar="DIR", help="Output directory (default results/EXPERIMENT).")
@click.option("--json", "as_json", is_flag=True, help="Print only the JSON summary on stdout.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
def run_cmd(experiment: str, quick: bool, sets: tuple[str, ...], config: str | None, out: str | None, as_json: bool, no_plots: bool) -> None:
    """Run EXPERIMENT and write summary.json, tables and plots."""
    overrides: dict[str, str] = {}
    if config:
        cfg_exp, overrides = _read_config(config)
        if cfg_exp and cfg_exp != experiment:
            raise UserError(f"{config}: is for experiment '{cfg_exp}', not '{experiment}'")
    overrides.update(_parse_sets(sets))
    known = {e["name"] for e in api.list_experiments()}
    if experiment not in known:
        raise UserError(f"unknown experiment '{experiment}'; `innet list` names them: {', '.join(sorted(known))}")
    out_dir = Path(out) if out else Path("results") / experiment
    result = _run_with_progress(experiment, quick, overrides)
    result.write(out_dir)
    figures = [] if no_plots else plots.plot(experiment, result.summary, result.tables, out_dir)
    if as_json:
        sys.stdout.write(result.summary_json)
        return
    _print_summary(experiment, result.summary, out_dir, figures)


def _run_with_progress(experiment: str, quick: bool, overrides: dict[str, str]) -> api.Result:
    if not sys.stderr.isatty():
        return api.run(experiment, quick=quick, overrides=overrides)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(f"[bold]{experiment}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("run", total=1.0)
        return api.run(experiment, quick=quick, overrides=overrides, progress=lambda f: bar.update(task, completed=f))


def _print_summary(experiment: str, summary: dict, out_dir: Path, figures: list[Path]) -> None:
    from innet import summary_table

    console = Console()
    summary_table.render(summary, f"{experiment} — {out_dir}/summary.json", console)
    if figures:
        console.print("plots: " + ", ".join(str(f) for f in figures))


@cli.group("bench")
def bench() -> None:
    """Benchmarks (commands, never timed tests)."""


BENCH_SCENARIOS = ("ft4-udp", "ft8-udp", "ft4-tcp", "ft8-tcp")
BENCH_KEYS = ("flows", "delivered_packets", "dropped_packets", "packet_hops", "events", "wall_s",
              "packet_hops_per_s", "events_per_s", "delivered_packets_per_s", "sim_time_s", "peak_rss_mib",
              "rss_before_mib", "conservation_ok")


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


@bench.command("sim")
@click.option("--flows", "flows_path", metavar="FILE", help="htsim connection-matrix flow list.")
@click.option("--topology", default="fattree", show_default=True, help="fattree, leafspine or rack.")
@click.option("--k", default=8, show_default=True, type=int, help="Fat-tree arity.")
@click.option("--transport", default="udp", show_default=True, help="udp or tcp.")
@click.option("--scenario", default=None, help="One of " + ", ".join(BENCH_SCENARIOS) + "; none and no --flows = all.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines on stdout (one per scenario).")
def bench_sim(flows_path: str | None, topology: str, k: int, transport: str, scenario: str | None, as_json: bool) -> None:
    """Simulated packet-hops and events per wall second, delivered packets, peak memory.

    With neither --flows nor --scenario, runs every fixed scenario, each in its own process so
    its peak memory is its own."""
    from innet import _native

    if flows_path is None and scenario is None:
        reports = []
        for sc in BENCH_SCENARIOS:
            r = subprocess.run([sys.executable, "-m", "innet", "bench", "sim", "--scenario", sc, "--json"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise UserError(f"scenario {sc} failed: {r.stderr.strip()}")
            rep = json.loads(r.stdout)
            rep["scenario"] = sc
            reports.append(rep)
    else:
        if flows_path is not None and not Path(flows_path).is_file():
            raise UserError(f"{flows_path}: no such flow list")
        rep = json.loads(
            _native.bench_sim(flows_path=flows_path, topology=topology, k=k, transport=transport, scenario=scenario)
        )
        if rep.get("peak_rss_mib") is None:  # not Linux /proc: fall back to getrusage (KiB on Linux)
            rep["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        rep["scenario"] = scenario or (Path(flows_path).name if flows_path else f"{topology}-k{k}-{transport}")
        reports = [rep]
    if as_json:
        for rep in reports:
            click.echo(json.dumps(rep))
        return
    t = Table(title="innet bench sim")
    t.add_column("measure")
    for rep in reports:
        t.add_column(rep["scenario"], justify="right")
    for key in BENCH_KEYS:
        t.add_row(key, *[_fmt(rep.get(key)) for rep in reports])
    Console().print(t)


from innet import cli_sweep  # noqa: E402

cli_sweep.register(cli)

from innet import cli_gigaflow  # noqa: E402

cli_gigaflow.register(cli)

from innet import cli_switchvm  # noqa: E402

cli_switchvm.register(cli)

from innet import cli_vswitch  # noqa: E402

cli_vswitch.register(cli)

from innet import cli_switch  # noqa: E402

cli_switch.register(cli)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.UsageError as e:
        _fail(e.format_message())
    except click.ClickException as e:
        _fail(e.format_message())
    except (UserError, cli_sweep.SweepError, cli_switchvm.SwitchVmError, cli_vswitch.VswitchError, cli_switch.SwitchError) as e:  # noqa: B014
        _fail(str(e))
    except api.InvariantError as e:
        _fail(str(e), EXIT_INVARIANT)
    except api.UserInputError as e:
        _fail(str(e))
    except BrokenPipeError:
        sys.exit(0)


if __name__ == "__main__":
    main()
