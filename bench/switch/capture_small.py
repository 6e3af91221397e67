"""Capture small TCP request/response traffic as the switch program sees it:
`python3 bench/switch/capture_small.py OUT.pcap [EXCHANGES]` (root); then
`innet bench switch --pcap OUT.pcap --program forward`."""
import sys, subprocess, textwrap, time
from innet.netns import Topology
ECHO = textwrap.dedent("""
    import socket, sys
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], 5002)); s.listen(1); c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        b = c.recv(4096)
        if not b: break
        c.sendall(b'VALUE ' + b[4:] + b' 0123456789abcdef\\r\\n')
""")
CLIENT = textwrap.dedent("""
    import socket, sys, time
    for _ in range(100):
        try: c = socket.create_connection((sys.argv[1], 5002), timeout=5); break
        except OSError: time.sleep(0.1)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(int(sys.argv[2])):
        c.sendall(b'GET key:%06d\\r\\n' % i); c.recv(4096)
    c.close()
""")
t = Topology(tag="rtcs"); t.up()
try:
    t.start_switch(extra=["--pcap", sys.argv[1], "--no-stats"])
    srv = t.popen(t.server, ["python3", "-c", ECHO, t.server_ip])
    t.exec(t.client, ["python3", "-c", CLIENT, t.server_ip, sys.argv[2] if len(sys.argv) > 2 else "4000"], timeout=120)
    time.sleep(0.3)
    print(t.stop_switch()[1])
finally:
    t.down()
