"""Captures of SwitchVM tenant traffic for the replay benchmark:
`python3 bench/switch/switchvm_captures.py OUT_DIR` writes in_packet.pcap (tenant 7 carrying the
private counter's code), in_switch.pcap (tenant 8, its default in-switch DPF) and plain.pcap
(Geneve without SwitchVM options), 1,000 frames each with 64-byte inner payloads, built and
written in Rust (`_native.geneve_frame`, `_native.pcap_file`); then
`innet bench switch --pcap OUT_DIR/in_packet.pcap --program switchvm --set tenants=7,8
--set default_dpf=counter --repeat 200`."""
import sys
from pathlib import Path

from innet import _native

COUNTER = (Path(__file__).resolve().parents[2] / "crates/switchvm/dpfs/counter.dpf").read_text()


def frame(vni: int, options: bytes, payload: bytes) -> bytes:
    return _native.geneve_frame("10.78.0.1", "10.78.0.2", vni, options, payload)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    cases = {
        "in_packet": (7, _native.switchvm_options(COUNTER, stack=[3])),
        "in_switch": (8, _native.switchvm_options(None, stack=[3])),
        "plain": (9, b""),
    }
    for name, (vni, opts) in cases.items():
        (out / f"{name}.pcap").write_bytes(_native.pcap_file([frame(vni, opts, b"x" * 64) for _ in range(1000)]))
        print(out / f"{name}.pcap")
