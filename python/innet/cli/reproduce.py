"""``innet reproduce`` (the manifest entries of a paper, run on Dask) and ``innet report`` (the
page that judges them)."""

from __future__ import annotations

from pathlib import Path

import click

from innet import reproduce  # light: the manifest reader; the runs (pandas, dask) and the page load when a command runs
from innet.cli.args import UserError


def register(cli: click.Group) -> None:
    @cli.command("reproduce")
    @click.argument("paper")
    @click.option("--tier", type=click.Choice(reproduce.TIERS), default=None,
                  help="smoke (seconds, no verdicts), standard (default: the paper's regime, shorter) or full (the paper's sizes).")
    @click.option("--quick", is_flag=True, help="Alias of --tier smoke.")
    @click.option("--seed", default=None, metavar="S", help="Run every seeded entry with this one seed only.")
    @click.option("--seeds", "n_seeds", default=None, type=int, metavar="N",
                  help="Run every seeded entry with seeds 1..N (default: the manifest's, two in the standard tier).")
    @click.option("--scheduler", default=None, metavar="ADDRESS", help="A running Dask scheduler (default: a local cluster).")
    @click.option("--workers", default=None, type=int,
                  help="Workers of the local cluster (default: one per core); with --dry-run, the workers to plan for.")
    @click.option("--out", "out", default="reproduced", show_default=True, metavar="DIR")
    @click.option("--dry-run", is_flag=True,
                  help="Print the plan: core-minutes, the longest task and the expected wall clock on the workers (--workers N, "
                       "the --scheduler's, or one per core); run nothing.")
    @click.option("--no-split", is_flag=True,
                  help="Run each point as one task (default: a point that sweeps inside one run is split into its runs).")
    def reproduce_cmd(paper, tier, quick, seed, n_seeds, scheduler, workers, out, dry_run, no_split):
        """Run every manifest entry of PAPER (switchv2p, orbitcache, gigaflow, switchvm, appswitch), all,
        or one entry (PAPER/ENTRY, e.g. switchv2p/fig5a)."""
        from innet.reproduce import run as repro_run

        if quick and tier not in (None, "smoke"):
            raise UserError(f"--quick is --tier smoke; it cannot be combined with --tier {tier}")
        tier = "smoke" if quick else (tier or reproduce.DEFAULT_TIER)
        try:
            ran = repro_run.run(paper, tier, Path(out), seed=seed, scheduler=scheduler, workers=workers, dry_run=dry_run,
                                echo=click.echo, n_seeds=n_seeds, split=not no_split)
        except repro_run.PlanError as e:
            raise UserError(str(e)) from None
        if ran:
            from innet import report

            collected = report.collect(Path(out), tier)
            for line in report.scoreboard_lines(report.scoreboard(collected), tier, report.seed_board(collected)):
                click.echo(line)

    @cli.command("report")
    @click.argument("root", default="reproduced")
    @click.option("--tier", type=click.Choice(reproduce.TIERS), default=None, help="Which tier's results (default standard).")
    @click.option("-o", "output", default="report.html", show_default=True, metavar="FILE.html")
    @click.option("--markdown", default=None, metavar="FILE.md", help="Also write the page as Markdown (e.g. docs/REPRODUCED.md), figures beside it.")
    @click.option("--quick", is_flag=True, help="Alias of --tier smoke.")
    def report_cmd(root, tier, output, markdown, quick):
        """Write one self-contained HTML page (scoreboard, figures, verdicts, provenance) from `innet reproduce` results."""
        from innet import report

        if quick:
            tier = "smoke"
        elif tier is None:  # the standard tier, or the only tier that was run
            ran = [t for t in reproduce.TIERS if (Path(root) / t).exists()]
            tier = reproduce.DEFAULT_TIER if reproduce.DEFAULT_TIER in ran or len(ran) != 1 else ran[0]
        if not (Path(root) / tier).exists():
            raise UserError(f"{Path(root) / tier}: no such directory (run `innet reproduce all --tier {tier} --out {root}` first)")
        # Each tier's figures in a folder of their own, so the full tier's page (docs/REPRODUCED-full.md)
        # sits beside the standard tier's without drawing over its images.
        href = report.figures_href(tier)
        fig_dir = Path(markdown).parent / href if markdown else None
        page, md = report.build(root, tier, fig_dir, href if markdown else None)
        Path(output).write_text(page)
        if markdown:
            Path(markdown).write_text(md)
        collected = report.collect(root, tier)
        for line in report.scoreboard_lines(report.scoreboard(collected), tier, report.seed_board(collected)):
            click.echo(line)
        for line in report.calibration_lines(collected, tier):
            click.echo(line)
        click.echo(f"report: {output}" + (f", {markdown}" if markdown else ""))
        problems = report.check_page(page, collected, md if markdown else None, Path(markdown).parent if markdown else None)
        if problems:
            raise UserError("the page is incomplete:\n  " + "\n  ".join(problems))
