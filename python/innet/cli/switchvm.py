"""`innet switchvm asm|disasm`: the SwitchVM assembler and disassembler on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import click


class SwitchVmError(Exception):
    """A user-facing error (exit 2, one line)."""


def register(cli: click.Group) -> None:
    @cli.group("switchvm")
    def switchvm() -> None:
        """SwitchVM's toolchain: assemble and disassemble data-plane filters."""

    @switchvm.command("asm")
    @click.argument("file", type=click.Path(dir_okay=False))
    @click.option("-o", "--out", "out", metavar="FILE.bin", help="Where the in-packet encoding goes (default FILE.bin).")
    @click.option("--eus", default=4, show_default=True, type=int, help="Execution units of the target machine.")
    @click.option("--lanes", default=4, show_default=True, type=int, help="Lanes per execution unit.")
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
    def asm(file: str, out: str | None, eus: int, lanes: int, as_json: bool) -> None:
        """Assemble FILE; print the normalized listing and write the in-packet encoding."""
        from innet import _native

        path = Path(file)
        if not path.is_file():
            raise SwitchVmError(f"{file}: no such file")
        try:
            listing, data, why, summary = _native.switchvm_asm(path.read_text(), eus=eus, lanes=lanes)
        except _native.UserInputError as e:
            raise SwitchVmError(f"{file}: {e}") from None
        info = json.loads(summary)
        if data is not None:
            dest = Path(out) if out else path.with_suffix(".bin")
            dest.write_bytes(bytes(data))
            info["in_packet_file"] = str(dest)
        else:
            info["in_packet_file"] = None
            info["in_packet_note"] = why
        if as_json:
            click.echo(json.dumps(info))
            return
        click.echo(listing, nl=False)
        if data is not None:
            click.echo(f"; {len(data)} bytes of Geneve options -> {info['in_packet_file']}")
        else:
            click.echo(f"; not encodable in a packet: {why}")

    @switchvm.command("disasm")
    @click.argument("file", type=click.Path(dir_okay=False))
    @click.option("--eus", default=4, show_default=True, type=int)
    @click.option("--lanes", default=4, show_default=True, type=int)
    def disasm(file: str, eus: int, lanes: int) -> None:
        """Disassemble SwitchVM option bytes (as written by `asm`)."""
        from innet import _native

        path = Path(file)
        if not path.is_file():
            raise SwitchVmError(f"{file}: no such file")
        try:
            click.echo(_native.switchvm_disasm(path.read_bytes(), eus=eus, lanes=lanes), nl=False)
        except _native.UserInputError as e:
            raise SwitchVmError(f"{file}: {e}") from None
