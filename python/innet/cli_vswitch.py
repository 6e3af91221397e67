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
    def trace(flows: str, packet: str, as_json: bool) -> None:
        """Trace PACKET (e.g. 'in_port=1,tcp,nw_dst=10.0.0.1,tp_dst=80') through the flow file
        FLOWS like `ovs-appctl ofproto/trace`: per-table hits, final flow, Megaflow, actions."""
        from innet import _native

        path = Path(flows)
        if not path.is_file():
            raise VswitchError(f"{flows}: no such file")
        try:
            text, js = _native.gigaflow_trace(path.read_text(), packet)
        except _native.UserInputError as e:
            raise VswitchError(f"{flows}: {e}") from None
        if as_json:
            click.echo(json.dumps(json.loads(js)))
        else:
            click.echo(text, nl=False)
