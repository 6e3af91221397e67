"""``innet sweep``, ``innet reproduce`` and ``innet report``: the Dask-backed commands."""

from __future__ import annotations

import time
from pathlib import Path

import click

from innet.cli_args import parse_sets


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
    def sweep_cmd(experiment, grids, sets, repeat, scheduler, workers, out, quick):
        """Run EXPERIMENT at every point of a parameter grid on Dask."""
        from innet import reproduce, sweep

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
            rep = sweep.run_sweep(points, out_dir, scheduler=scheduler, workers=workers, on_progress=update)
        click.echo(
            f"{rep.total} points: {rep.done} run, {rep.skipped} already done, {rep.failed} failed "
            f"in {time.perf_counter() - t0:.1f} s → {out_dir / sweep.RESULTS_FILE}"
        )

    @cli.command("reproduce")
    @click.argument("paper")
    @click.option("--quick", is_flag=True, help="The quick form of every figure.")
    @click.option("--scheduler", default=None, metavar="ADDRESS", help="A running Dask scheduler (default: a local cluster).")
    @click.option("--workers", default=None, type=int, help="Workers of the local cluster.")
    @click.option("--out", "out", default="reproduced", show_default=True, metavar="DIR")
    def reproduce_cmd(paper, quick, scheduler, workers, out):
        """Run the figure set of PAPER (switchv2p, orbitcache, gigaflow, switchvm, appswitch) or all."""
        from innet import reproduce, sweep

        papers = reproduce.load_papers()
        chosen = list(papers) if paper == "all" else [paper]
        for name in chosen:
            if name not in papers:
                raise SweepError(f"unknown paper '{name}'; expected all or one of {', '.join(papers)}")
        have = reproduce.available_experiments()
        root = Path(out)
        for name in chosen:
            for fig in papers[name].figures:
                if fig.experiment not in have:
                    click.echo(f"{name}/{fig.id}: not yet implemented in this build ({fig.experiment})")
                    continue
                points = reproduce.figure_points(fig, quick)
                prog, update = _progress_bar(f"{name}/{fig.id}")
                with prog:
                    rep = sweep.run_sweep(points, fig.out_dir(root), scheduler=scheduler, workers=workers, on_progress=update)
                click.echo(f"{name}/{fig.id}: {rep.done} run, {rep.skipped} already done, {rep.failed} failed")
        click.echo(f"results under {root}; `innet report {root}` makes the page")

    @cli.command("report")
    @click.argument("root", default="reproduced")
    @click.option("-o", "output", default="report.html", show_default=True, metavar="FILE.html")
    @click.option("--markdown", default=None, metavar="FILE.md", help="Also write the tables as Markdown (e.g. docs/REPRODUCED.md).")
    @click.option("--quick", is_flag=True, help="Name the --quick commands in the page.")
    def report_cmd(root, output, markdown, quick):
        """Write one self-contained HTML page from `innet reproduce` results."""
        if not Path(root).exists():
            raise SweepError(f"{root}: no such directory (run `innet reproduce` first)")
        from innet import report

        page, md = report.build(root, quick)
        Path(output).write_text(page)
        if markdown:
            Path(markdown).write_text(md)
        click.echo(f"report: {output}" + (f", {markdown}" if markdown else ""))
