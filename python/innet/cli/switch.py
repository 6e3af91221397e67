"""`innet switch run|list` and `innet bench switch`: the real-packet switch (crates/dataplane `real`).

The runtime runs in Rust (``_native.switch_run``, GIL released) and handles SIGINT/SIGTERM
itself: it stops, and the counters summary is printed on stderr (and as JSON with ``--json``
on stdout, or ``--stats-json FILE``).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from innet.cli.args import parse_sets


class SwitchError(Exception):
    """A user-facing error (exit 2, one line)."""


def default_state_file(ports: tuple[str, ...] | list[str], settings: dict[str, str]) -> Path:
    """Where `innet switch run --program appswitch` keeps what must outlive it (issue 36: the
    keys and tables given an expiry time; without them a restarted switch may serve a value the
    server has expired): ``$INNET_STATE_DIR``, else ``$XDG_STATE_HOME/innet``, else
    ``~/.local/state/innet``; one file per protocol, server port and set of interfaces, so two
    switches on other interfaces never share one (a state file is locked while in use)."""
    import os

    base = os.environ.get("INNET_STATE_DIR") or (
        Path(os.environ["XDG_STATE_HOME"]) / "innet" if os.environ.get("XDG_STATE_HOME")
        else Path.home() / ".local" / "state" / "innet")
    protocol = settings.get("protocol", "cql")
    port = settings.get("server_port", {"cql": "9042", "redis": "6379", "memcached": "11211"}.get(protocol, ""))
    safe = "-".join("".join(c if c.isalnum() or c in "._" else "_" for c in p) for p in ports)
    return Path(base) / f"appswitch-{protocol}-{port}-{safe}.state"


def register(cli: click.Group) -> None:
    @cli.group("switch")
    def switch() -> None:
        """The real-packet switch: a data-plane program on Linux interfaces (AF_PACKET)."""

    @switch.command("list")
    def list_programs() -> None:
        """Programs the real switch can run."""
        from innet import _native

        for name, desc in _native.switch_programs():
            click.echo(f"{name:<14} {desc}")

    @switch.command("run")
    @click.option("--program", required=True, help="Program name (see `innet switch list`).")
    @click.option("--port", "ports", multiple=True, required=True, metavar="IFACE",
                  help="An interface, once per port, in port order (port 0 first).")
    @click.option("--set", "sets", multiple=True, metavar="K=V", help="A program setting.")
    @click.option("--pcap", metavar="FILE", help="Write every frame the program saw to FILE.")
    @click.option("--route", "routes", multiple=True, metavar="CIDR=PORT",
                  help="Static route for Verdict::Route (longest prefix on the routing dst).")
    @click.option("--duration-s", type=float, default=None, help="Stop after this many seconds.")
    @click.option("--batch", type=int, default=64, show_default=True, help="Frames per recvmmsg.")
    @click.option("--loss", type=float, default=0.0, show_default=True,
                  help="Drop each transmitted frame with this probability (link impairment, like netem loss).")
    @click.option("--reorder", type=float, default=0.0, show_default=True,
                  help="Hold a frame back behind the next one with this probability (reordering).")
    @click.option("--duplicate", type=float, default=0.0, show_default=True,
                  help="Send each transmitted frame twice with this probability (duplication).")
    @click.option("--impair-seed", type=int, default=1, show_default=True, help="Seed of --loss/--reorder/--duplicate.")
    @click.option("--no-stats", is_flag=True, help="No live stats line.")
    @click.option("--json", "as_json", is_flag=True, help="Print the final summary as JSON on stdout.")
    @click.option("--stats-json", metavar="FILE", help="Write the final summary as JSON to FILE.")
    def run(program: str, ports: tuple[str, ...], sets: tuple[str, ...], pcap: str | None,
            routes: tuple[str, ...], duration_s: float | None, batch: int, loss: float, reorder: float,
            duplicate: float, impair_seed: int, no_stats: bool, as_json: bool, stats_json: str | None) -> None:
        """Forward frames between the ports through PROGRAM until SIGINT/SIGTERM."""
        from innet import _native

        settings = parse_sets(sets)
        if program == "appswitch" and "state_file" not in settings:
            path = default_state_file(ports, settings)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise SwitchError(f"cannot create {path.parent} for the switch's state file ({e}); "
                                  "give one with --set state_file=PATH (or state_file=off)") from None
            settings["state_file"] = str(path)
            click.echo(f"state file: {path}", err=True)
        try:
            text, js = _native.switch_run(program, list(ports), settings, pcap=pcap, routes=list(routes),
                                          duration_s=duration_s, stats=not no_stats, batch=batch,
                                          loss=loss, reorder=reorder, duplicate=duplicate,
                                          impair_seed=impair_seed)
        except _native.UserInputError as e:
            raise SwitchError(str(e)) from None
        click.echo(text, err=True, nl=False)
        if stats_json:
            Path(stats_json).write_text(js + "\n")
        if as_json:
            click.echo(json.dumps(json.loads(js)))

    bench = cli.commands["bench"]

    @bench.command("switch")
    @click.option("--pcap", required=True, metavar="FILE", help="Capture to replay (Ethernet pcap).")
    @click.option("--program", default="forward", show_default=True)
    @click.option("--set", "sets", multiple=True, metavar="K=V", help="A program setting.")
    @click.option("--repeat", default=20, show_default=True, type=int, help="Replays of the capture.")
    @click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
    def bench_switch(pcap: str, program: str, sets: tuple[str, ...], repeat: int, as_json: bool) -> None:
        """Frames per second of PROGRAM on one core, replaying a capture in memory (no sockets)."""
        from innet import _native

        if not Path(pcap).is_file():
            raise SwitchError(f"{pcap}: no such file")
        try:
            rep = json.loads(_native.bench_switch(pcap, program, parse_sets(sets), repeat=repeat))
        except _native.UserInputError as e:
            raise SwitchError(str(e)) from None
        if as_json:
            click.echo(json.dumps(rep))
            return
        for k, v in rep.items():
            click.echo(f"{k:<20} {v}")
