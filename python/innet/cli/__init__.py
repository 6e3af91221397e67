"""The ``innet`` command: list and run experiments, benchmark the simulator.

Contract (shared/DESIGN.md §4): ``innet run EXPERIMENT [--quick] [--set k=v ...] [--out DIR]
[--json]`` writes DIR/summary.json, tables and plots; with ``--json`` stdout carries only the
summary. User errors print one line ``innet: error: ...`` and exit 2; a broken invariant exits 1.

Heavy modules (the simulator extension, pandas, matplotlib, rich, dask) are imported by the
commands that use them, so ``innet --help`` and the start of a simulation stay fast
(bench/startup.py measures both).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tomllib
from pathlib import Path

import click

from innet.cli import gigaflow, reproduce, sweep, switch, switchv2p, switchvm, vswitch
from innet.cli.args import UserError, parse_sets

EXIT_USER = 2
EXIT_INVARIANT = 1


def _fail(msg: str, code: int = EXIT_USER) -> None:
    click.echo(f"innet: error: {msg}", err=True)
    sys.exit(code)


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
    from innet import api

    return data.get("experiment"), {k: api._as_override(v) for k, v in params.items()}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """innet: in-network caching and computing, simulated and on real packets."""


@cli.command("list")
def list_cmd() -> None:
    """Name every experiment."""
    from innet import api

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
    from innet import api

    overrides: dict[str, str] = {}
    if config:
        cfg_exp, overrides = _read_config(config)
        if cfg_exp and cfg_exp != experiment:
            raise UserError(f"{config}: is for experiment '{cfg_exp}', not '{experiment}'")
    overrides.update(parse_sets(sets))
    known = {e["name"] for e in api.list_experiments()}
    if experiment not in known:
        raise UserError(f"unknown experiment '{experiment}'; `innet list` names them: {', '.join(sorted(known))}")
    out_dir = Path(out) if out else Path("results") / experiment
    result = _run_with_progress(experiment, quick, overrides)
    result.write(out_dir)
    figures = []
    if not no_plots:
        from innet import plots

        paper = None
        if plots.wants_paper(experiment):
            from innet import reproduce

            paper = reproduce.paper_numbers(experiment.split(".", 1)[0])
        figures = plots.plot(experiment, result.summary, result.tables, out_dir, paper)
    if as_json:
        sys.stdout.write(result.summary_json)
        return
    _print_summary(experiment, result.summary, out_dir, figures)


class _ProgressBar:
    """A progress bar on stderr, drawn from the first progress report on: rich is imported then,
    so the simulation does not wait for it to start."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar = None
        self.task = None

    def update(self, fraction: float) -> None:
        if self.bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn(f"[bold]{self.label}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("run", total=1.0)
        self.bar.update(self.task, completed=fraction)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _run_with_progress(experiment: str, quick: bool, overrides: dict[str, str]):
    from innet import api

    if not sys.stderr.isatty():
        return api.run(experiment, quick=quick, overrides=overrides)
    bar = _ProgressBar(experiment)
    try:
        return api.run(experiment, quick=quick, overrides=overrides, progress=bar.update)
    finally:
        bar.close()


def _print_summary(experiment: str, summary: dict, out_dir: Path, figures: list[Path]) -> None:
    from rich.console import Console

    from innet.cli import summary_table

    console = Console()
    summary_table.render(summary, f"{experiment} — {out_dir}/summary.json", console)
    if figures:
        console.print("plots: " + ", ".join(str(f) for f in figures))


@cli.group("bench")
def bench() -> None:
    """Benchmarks (commands, never timed tests)."""


BENCH_SCENARIOS = ("ft4-udp", "ft8-udp", "ft4-tcp", "ft8-tcp")
# The runs reproductions are made of (basic.fattree, TCP, Hadoop flows) and the FT16 memory
# check: minutes each, so run only when named.
BENCH_LARGE_SCENARIOS = ("ft8-tcp-hadoop", "ft16-tcp-hadoop", "ft16-1m")
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
@click.option("--scenario", default=None,
              help="One of " + ", ".join(BENCH_SCENARIOS + BENCH_LARGE_SCENARIOS)
              + "; none and no --flows = all of " + ", ".join(BENCH_SCENARIOS) + ".")
@click.option("--json", "as_json", is_flag=True, help="JSON lines on stdout (one per scenario).")
def bench_sim(flows_path: str | None, topology: str, k: int, transport: str, scenario: str | None, as_json: bool) -> None:
    """Simulated packet-hops and events per wall second, delivered packets, peak memory.

    With neither --flows nor --scenario, runs the four small fixed scenarios, each in its own process so
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
    from rich.console import Console
    from rich.table import Table

    t = Table(title="innet bench sim")
    t.add_column("measure")
    for rep in reports:
        t.add_column(rep["scenario"], justify="right")
    for key in BENCH_KEYS:
        t.add_row(key, *[_fmt(rep.get(key)) for rep in reports])
    Console().print(t)


for _module in (sweep, reproduce, gigaflow, switchv2p, switchvm, vswitch, switch):
    _module.register(cli)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.ClickException as e:
        _fail(e.format_message())
    except (UserError, sweep.SweepError, switchvm.SwitchVmError, vswitch.VswitchError, switch.SwitchError) as e:  # noqa: B014
        _fail(str(e))
    except BrokenPipeError:
        sys.exit(0)
    except Exception as e:
        # The simulator's errors; its extension is loaded only if a command used it.
        native = sys.modules.get("innet._native")
        if native is not None and isinstance(e, native.InvariantError):
            _fail(str(e), EXIT_INVARIANT)
        if native is not None and isinstance(e, native.UserInputError):
            _fail(str(e))
        raise


if __name__ == "__main__":
    main()
