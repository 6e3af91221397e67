"""``innet sweep``: an experiment at every point of a parameter grid, on Dask."""

from __future__ import annotations

import time
from pathlib import Path

import click

from innet import reproduce  # light: the manifest reader; sweep (pandas, dask) loads when the command runs
from innet.cli.args import parse_sets


class SweepError(Exception):
    """A user error in a sweep command (reported like any innet user error)."""


def _progress_bar(label: str):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        TextColumn("{task.fields[done]} done · {task.fields[running]} running · {task.fields[failed]} failed"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    task = prog.add_task(label, total=1, done=0, running=0, failed=0)

    def update(done: int, running: int, failed: int, total: int) -> None:
        prog.update(task, total=max(total, 1), completed=done + failed, done=done, running=running, failed=failed)

    return prog, update


def register(cli: click.Group) -> None:
    @cli.command("sweep")
    @click.argument("experiment")
    @click.option("--grid", "grids", multiple=True, metavar="KEY=V1,V2,...", help="A swept parameter (repeatable; ';' separates values that hold commas).")
    @click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="A parameter fixed for every point.")
    @click.option("--repeat", default=1, show_default=True, type=int, help="Seeds 1..N per grid point.")
    @click.option("--scheduler", default=None, metavar="ADDRESS", help="A running Dask scheduler (default: a local cluster).")
    @click.option("--workers", default=None, type=int, help="Workers of the local cluster (default: one per core).")
    @click.option("--out", "out", default=None, metavar="DIR", help="Where points and results.parquet go (default sweeps/EXPERIMENT).")
    @click.option("--quick", is_flag=True, help="Every point in its --quick form.")
    @click.option("--no-split", is_flag=True, help="Run each point as one task (default: a point that sweeps inside one run is split into its runs).")
    def sweep_cmd(experiment, grids, sets, repeat, scheduler, workers, out, quick, no_split):
        """Run EXPERIMENT at every point of a parameter grid on Dask."""
        from innet.reproduce import sweep

        names = reproduce.available_experiments()
        if experiment not in names:
            raise SweepError(f"unknown experiment '{experiment}' (see `innet list`)")
        try:
            grid = sweep.parse_grid(grids)
            points = sweep.expand(experiment, grid, repeat, parse_sets(sets), quick)
        except ValueError as e:
            raise SweepError(str(e)) from None
        out_dir = Path(out or f"sweeps/{experiment}")
        prog, update = _progress_bar(experiment)
        t0 = time.perf_counter()
        with prog:
            rep = sweep.run_sweep(points, out_dir, scheduler=scheduler, workers=workers, on_progress=update, split=not no_split)
        click.echo(
            f"{rep.total} points: {rep.done} run, {rep.skipped} already done, {rep.failed} failed "
            f"in {time.perf_counter() - t0:.1f} s → {out_dir / sweep.RESULTS_FILE}"
        )
