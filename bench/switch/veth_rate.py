"""Real forwarding rate of `innet switch run --program forward` between two veth ports:
`python3 bench/switch/veth_rate.py PAYLOAD_BYTES [SECONDS]` (root). Builds the client/switch/server
namespaces, blasts UDP from the client (crates/switch/examples/udp_blast.rs, built with
`cargo build --release -p innet-switch --example udp_blast`), counts at the server, and prints
one JSON line with what was offered, forwarded by the switch and received."""
import json, os, sys, subprocess, time
from innet.netns import Topology
B = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release/examples/udp_blast")
size = int(sys.argv[1]); secs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
t = Topology(tag="rtrate"); t.up()
try:
    t.start_switch(extra=["--no-stats", "--stats-json", f"/tmp/{t.tag}-stats.json"])
    t.exec(t.client, ["ping", "-c", "1", "-W", "1", t.server_ip], check=False)
    rx = t.popen(t.server, [B, "recv", f"{t.server_ip}:9000", str(secs + 2)], stdout=subprocess.PIPE)
    time.sleep(0.3)
    tx = t.exec(t.client, [B, "send", f"{t.server_ip}:9000", str(secs), str(size)], timeout=60)
    out, _ = rx.communicate(timeout=30)
    # CPU seconds the switch process used (user + system), from /proc/PID/stat.
    f = open(f"/proc/{t.switch.pid}/stat").read().rsplit(")", 1)[1].split()
    user_s, sys_s = int(f[11]) / os.sysconf("SC_CLK_TCK"), int(f[12]) / os.sysconf("SC_CLK_TCK")
    cpu_s = user_s + sys_s
    code, log = t.stop_switch()
    st = json.load(open(f"/tmp/{t.tag}-stats.json"))
    p0 = st["ports"][0]
    print(json.dumps({"payload_bytes": size, "sender": json.loads(tx.stdout), "receiver": json.loads(out),
                      "switch_rx_p0": p0["rx_frames"], "switch_tx_p1": st["ports"][1]["tx_frames"],
                      "switch_tx_errors": st["total"]["tx_errors"], "elapsed_s": st["elapsed_s"],
                      "switch_cpu_s": cpu_s, "switch_user_s": user_s, "switch_sys_s": sys_s, "switch_cpu_us_per_frame": round(cpu_s * 1e6 / max(1, p0["rx_frames"]), 2)}))
finally:
    t.down()
