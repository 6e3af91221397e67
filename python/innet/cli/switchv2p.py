"""`innet switchv2p convert-alibaba`: Alibaba's public microservice call graphs
(cluster-trace-microservices-v2021, ``MSCallGraph_*.csv``) as a SwitchV2P trace, plus the
artifact's placement file, so innet and the authors' ns-3 program run the same input
(docs/switchv2p.md, "The real Alibaba trace")."""

from __future__ import annotations

import json
from pathlib import Path

import click


class SwitchV2PError(click.ClickException):
    """A user-facing error (exit 2, one line)."""


def register(cli: click.Group) -> None:
    @cli.group("switchv2p")
    def switchv2p() -> None:
        """SwitchV2P's inputs: convert the real Alibaba call-graph trace."""

    @switchv2p.command("convert-alibaba")
    @click.argument("callgraph", type=click.Path(dir_okay=False))
    @click.option("-o", "--out", "out", required=True, metavar="TRACE.csv",
                  help="Where the src_vm,dst_vm,ts_ns,flow_id,size_bytes rows go (no header: the artifact reads every line as data).")
    @click.option("--placement", metavar="PLACEMENT.json",
                  help='Also write the artifact\'s placement file {"p1": ["0", ...], ...} (VM v on server v / VMs-per-server).')
    @click.option("--names", metavar="NAMES.csv", help="Also write vm,container: the container or microservice behind each VM id.")
    @click.option("--topology", type=click.Choice(["ft16_400k", "ft8_10k"]), default="ft16_400k", show_default=True,
                  help="The network (its VM count bounds the containers; the placement lists its servers).")
    @click.option("--duration-ms", type=float, default=5.0, show_default=True,
                  help="Length of the prefix, from the file's first timestamp, in simulated ms.")
    @click.option("--speedup", type=float, default=1.0, show_default=True,
                  help="Trace time runs this many times faster than simulated time (1 = real time).")
    @click.option("--rpctypes", default="rpc,http", show_default=True, help="rpctypes that become flows (all = every type).")
    @click.option("--seed", type=int, default=1, show_default=True, help="Seeds the start inside each millisecond and the call sizes.")
    @click.option("--json", "as_json", is_flag=True, help="Print what was kept and skipped as JSON.")
    def convert_alibaba(callgraph: str, out: str, placement: str | None, names: str | None, topology: str,
                        duration_ms: float, speedup: float, rpctypes: str, seed: int, as_json: bool) -> None:
        """Convert CALLGRAPH (an MSCallGraph_*.csv, any layout its header names) to a trace file
        that `innet run switchv2p.alibaba --set trace_file=TRACE.csv` and the artifact's `sim
        --trace` both take. Each RPC/HTTP call becomes one flow; see docs/switchv2p.md."""
        from innet import _native

        if not Path(callgraph).is_file():
            raise SwitchV2PError(f"{callgraph}: no such file")
        try:
            stats = json.loads(_native.switchv2p_convert_alibaba(
                callgraph, out, placement=placement, names=names, topology=topology,
                duration_ms=duration_ms, speedup=speedup, rpctypes=rpctypes, seed=seed))
        except _native.UserInputError as e:
            raise SwitchV2PError(str(e)) from None
        if as_json:
            click.echo(json.dumps(stats))
            return
        other = ", ".join(f"{k} {v}" for k, v in stats["other_rpctype"].items()) or "none"
        click.echo(f"{stats['flows']} flows between {stats['containers']} VMs ({stats['vms_are']}) -> {out}")
        click.echo(f"  {stats['records']} records; the first {duration_ms} ms from timestamp {stats['first_timestamp_ms']} ms "
                   f"hold {stats['calls']} calls ({stats['window_records']} records, {stats['duplicate_records']} merged as the other end's copy)")
        click.echo(f"  left out: other rpctypes ({other}); unknown caller or callee {stats['unknown_end']}; "
                   f"calls to themselves {stats['self_calls']}; past the window's end {stats['past_window']}")
        if placement:
            click.echo(f"  placement -> {placement}")
        if names:
            click.echo(f"  names -> {names}")
