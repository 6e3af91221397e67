"""`innet vswitch trace`: Gigaflow's OVS-faithful slow path on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import click


class VswitchError(Exception):
    """A user-facing error (exit 2, one line)."""


def register(cli: click.Group) -> None:
    @cli.group("vswitch")
    def vswitch() -> None:
        """The vSwitch slow path: OpenFlow pipelines in ovs-ofctl syntax."""

    @vswitch.command("trace")
    @click.argument("flows", type=click.Path(dir_okay=False))
    @click.argument("packet")
    @click.option("--json", "as_json", is_flag=True, help="Print the trace as JSON.")
    @click.option("--ct-next", "ct_next", multiple=True, metavar="FLAGS",
                  help="Conntrack state of the next recirculated pass, e.g. trk,est (repeatable, in order; default trk,new).")
    def trace(flows: str, packet: str, as_json: bool, ct_next: tuple[str, ...]) -> None:
        """Trace PACKET (e.g. 'in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80') through the flow file
        FLOWS like `ovs-appctl ofproto/trace`: per-table hits, final flow, Megaflow, actions; a
        ct(table=N) recirculates, and each later pass is traced with its conntrack state."""
        from innet import _native

        path = Path(flows)
        if not path.is_file():
            raise VswitchError(f"{flows}: no such file")
        try:
            text, js = _native.gigaflow_trace(path.read_text(), packet, list(ct_next))
        except _native.UserInputError as e:
            raise VswitchError(f"{flows}: {e}") from None
        if as_json:
            click.echo(json.dumps(json.loads(js)))
        else:
            click.echo(text, nl=False)


    bench = cli.commands.get("bench")
    if bench is not None:

        @bench.command("gigaflow")
        @click.option("--flows", "flow_files", multiple=True, type=click.Path(dir_okay=False),
                      help="Pipeline flow file (repeatable); default: the shipped examples and a 30-table chain.")
        @click.option("--pipebench", "pipebench", multiple=True,
                      help="A Pipebench pipeline (OFD, PSC, OLS, ANT, OTL) rendered with 10K ACL rules (repeatable).")
        @click.option("--packets", default=20000, show_default=True, type=int, help="Packets per pipeline.")
        @click.option("--seed", default=1, show_default=True, type=int)
        @click.option("--json", "as_json", is_flag=True, help="JSON lines on stdout (one per pipeline).")
        def bench_gigaflow(flow_files: tuple[str, ...], pipebench: tuple[str, ...], packets: int, seed: int, as_json: bool) -> None:
            """Slow-path cost per miss (traversal, partitioning, rule generation: Fig. 13) and
            Megaflow/Gigaflow cache lookups per second on this machine."""
            from rich.console import Console
            from rich.table import Table

            from innet import _native

            pipes = []
            for f in flow_files:
                path = Path(f)
                if not path.is_file():
                    raise VswitchError(f"{f}: no such file")
                pipes.append((path.name, path.read_text()))
            for name in pipebench:
                try:
                    pipes.append((name, _native.gigaflow_pipebench_flows(name, 10000, seed)))
                except AttributeError:
                    raise VswitchError("this build has no Pipebench bindings") from None
                except _native.UserInputError as e:
                    raise VswitchError(f"{name}: {e}") from None
            if packets <= 0:
                raise VswitchError("--packets must be positive")
            try:
                reports = json.loads(_native.bench_gigaflow(flows=pipes, packets=packets, seed=seed))
            except _native.UserInputError as e:
                raise VswitchError(str(e)) from None
            if as_json:
                for r in reports:
                    click.echo(json.dumps(r))
                return
            t = Table(title="innet bench gigaflow")
            t.add_column("measure")
            for r in reports:
                t.add_column(r["pipeline"], justify="right")
            for key in reports[0] if reports else []:
                if key == "pipeline":
                    continue
                t.add_row(key, *[f"{r[key]:,.3f}" if isinstance(r[key], float) else f"{r[key]:,}" for r in reports])
            Console().print(t)
