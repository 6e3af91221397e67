"""SwitchVM's toolchain through the real CLI: the shipped DPF sources assemble, their in-packet
encoding disassembles back to the same program, and bad sources fail with the line named."""

import json
from pathlib import Path

import pytest

DPFS = Path(__file__).resolve().parents[2] / "crates" / "switchvm" / "dpfs"


@pytest.mark.parametrize("src", sorted(DPFS.glob("*.dpf")), ids=lambda p: p.name)
def test_shipped_dpfs_assemble_and_round_trip(innet_cmd, tmp_path, src):
    out = tmp_path / "x.bin"
    r = innet_cmd("switchvm", "asm", str(src), "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["eus"] == 4 and info["eu_instructions"] >= 4
    if info["in_packet_bytes"] is None:
        # Too big for Geneve's 252-byte option area: refused with the reason, no file written.
        assert "deploy it in the switch" in info["in_packet_note"] and not out.exists()
        return
    assert out.stat().st_size == info["in_packet_bytes"] and info["in_packet_bytes"] % 4 == 0
    d = innet_cmd("switchvm", "disasm", str(out))
    assert d.returncode == 0, d.stderr
    # The disassembly is itself a source that assembles to the same bytes.
    again = tmp_path / "again.dpf"
    again.write_text(d.stdout)
    out2 = tmp_path / "again.bin"
    r2 = innet_cmd("switchvm", "asm", str(again), "-o", str(out2), "--json")
    assert r2.returncode == 0, r2.stderr
    assert out2.read_bytes() == out.read_bytes()


def test_errors_name_the_file_and_line(innet_cmd, tmp_path):
    bad = tmp_path / "bad.dpf"
    bad.write_text("prolog:\n A0 = pop\neu1 s:\n mem2 explode\nepilog out:\n")
    r = innet_cmd("switchvm", "asm", str(bad))
    assert r.returncode == 2
    assert "bad.dpf: line 4" in r.stderr and "explode" in r.stderr
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\xff\x57\x01\x03" + b"\x00" * 12)
    r = innet_cmd("switchvm", "disasm", str(junk))
    assert r.returncode == 2 and "junk.bin" in r.stderr
    r = innet_cmd("switchvm", "asm", str(tmp_path / "missing.dpf"))
    assert r.returncode == 2 and "no such file" in r.stderr


@pytest.mark.parametrize("exp,plot", [("switchvm.overhead", "overhead.png"), ("switchvm.latency", "latency.png")])
def test_microbenchmarks_quick(innet_cmd, tmp_path, exp, plot):
    r = innet_cmd("run", exp, "--quick", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["modes"]
    import pandas as pd

    pts = pd.read_parquet(tmp_path / "points.parquet")
    assert (pts["received"] > 0).all()
    # Every encapsulated packet ran the DPF exactly once.
    enc = pts[pts["mode"] != "plain"]
    assert (enc["executed"] == enc["received"]).all()
    assert (tmp_path / plot).exists()


def test_overhead_orders_the_modes(innet_cmd, tmp_path):
    r = innet_cmd("run", "switchvm.overhead", "--quick", "--out", str(tmp_path), "--json", "--set", "sizes=512")
    assert r.returncode == 0, r.stderr
    import pandas as pd

    pts = pd.read_parquet(tmp_path / "points.parquet").set_index("mode")
    assert pts.loc["plain", "goodput_gbps"] > pts.loc["default", "goodput_gbps"] > pts.loc["in_switch", "goodput_gbps"] > pts.loc["in_packet", "goodput_gbps"]
