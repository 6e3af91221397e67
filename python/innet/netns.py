"""Network-namespace harness for the real-packet switch: client and server namespaces joined
through a switch namespace by veth pairs, so every frame between them crosses the user-space
switch (``innet switch run`` on the switch's two ports).

    client ns            switch ns                 server ns
    c0 10.77.0.1/24 <-veth-> p0 [innet switch] p1 <-veth-> s0 10.77.0.2/24

With ``clients=2`` a second client namespace (``client2``, 10.77.0.3) joins the first one's
link through a Linux bridge in the client namespace, so both clients' frames reach the switch
on its client port with their own source addresses (the paper's two client machines, Fig. 11):

    client2 ns           client ns
    c1 10.77.0.3 <-veth-> cb [br0 10.77.0.1, c0] <-veth-> p0 ...

With ``servers=2`` a second server namespace (``server2``, 10.77.0.4) joins the server's link
the same way (a bridge in the server namespace): the two Cassandra nodes of Fig. 22 talk to each
other there, and the client's frames to either cross the switch.

The switch ports have no IP and IPv6 is off everywhere (no stray router solicitations). Host
ends keep their default offloads (checksum offload, TSO): the runtime handles them through
PACKET_VNET_HDR. Optional ``tc netem`` (loss, reordering, delay) on the host ends' egress.

The real servers run in the server namespaces, started through the project's scripts
(``start_cassandra``: scripts/cassandra.sh, a node per server namespace; ``start_kv``:
scripts/redis.sh, scripts/memcached.sh) with their files in the topology's own directory;
``down`` stops them and removes it. ``rig`` is the one bring-up and tear-down every user shares
(the application switch's experiments, the benches, the netns tests): namespaces, servers, and
everything gone when the block ends, however it ends.

Needs root (CAP_NET_ADMIN): ``NetnsUnavailable`` says so; tests fail with that message, they
never skip. Command line: ``python3 -m innet.netns up|down|run-switch`` (scripts/netns.sh).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class NetnsUnavailable(RuntimeError):
    """Namespaces cannot be built here (not root, no CAP_NET_ADMIN, no `ip`)."""


def _run(cmd: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({r.returncode}): {r.stderr.strip()}")
    return r


def innet_command() -> list[str]:
    """The `innet` CLI of this checkout (not whichever one is installed machine-wide)."""
    return [sys.executable, "-m", "innet"]


def innet_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass
class Topology:
    """client — switch — server. Names get a per-process tag so parallel runs do not collide."""

    tag: str = field(default_factory=lambda: f"in{os.getpid() % 100000}")
    subnet: str = "10.77.0"
    client_netem: str | None = None  # e.g. "loss 1%" or "delay 1ms reorder 10% 50%"
    server_netem: str | None = None
    clients: int = 1  # 1, or 2: a second client namespace bridged onto the client link
    servers: int = 1  # 1, or 2: a second server namespace bridged onto the server link
    switch: subprocess.Popen | None = None
    switch_log: Path | None = None
    # The servers started in it, (script, directory), stopped by `down`; and its own directory.
    servers_started: list[tuple[str, Path]] = field(default_factory=list, init=False, repr=False)
    _workdir: Path | None = field(default=None, init=False, repr=False)

    @property
    def client(self) -> str:
        return f"{self.tag}-c"

    @property
    def client2(self) -> str:
        return f"{self.tag}-c2"

    @property
    def client2_ip(self) -> str:
        return f"{self.subnet}.3"

    def client_namespaces(self) -> list[tuple[str, str]]:
        """(namespace, address) of every client."""
        out = [(self.client, self.client_ip)]
        if self.clients >= 2:
            out.append((self.client2, self.client2_ip))
        return out

    def namespaces(self) -> list[str]:
        """Every namespace of the topology."""
        return ([self.client, self.sw, self.server] + ([self.client2] if self.clients >= 2 else [])
                + ([self.server2] if self.servers >= 2 else []))

    @property
    def sw(self) -> str:
        return f"{self.tag}-sw"

    @property
    def server(self) -> str:
        return f"{self.tag}-s"

    @property
    def server2(self) -> str:
        return f"{self.tag}-s2"

    @property
    def server2_ip(self) -> str:
        return f"{self.subnet}.4"

    def server_namespaces(self) -> list[tuple[str, str]]:
        """(namespace, address) of every server."""
        return [(self.server, self.server_ip)] + ([(self.server2, self.server2_ip)] if self.servers >= 2 else [])

    client_if = "c0"
    server_if = "s0"
    ports = ("p0", "p1")

    @property
    def client_ip(self) -> str:
        return f"{self.subnet}.1"

    @property
    def server_ip(self) -> str:
        return f"{self.subnet}.2"

    # ---- building ----
    @staticmethod
    def check_available() -> None:
        if shutil.which("ip") is None:
            raise NetnsUnavailable("the `ip` command (iproute2) is missing: run scripts/setup.sh")
        if os.geteuid() != 0:
            raise NetnsUnavailable(
                f"network namespaces need root / CAP_NET_ADMIN; running as uid {os.geteuid()}")

    def up(self) -> "Topology":
        self.check_available()
        if self.clients not in (1, 2) or self.servers not in (1, 2):
            raise ValueError(f"Topology.clients={self.clients}, servers={self.servers}: expected 1 or 2 each")
        self.down()
        try:
            for ns in self.namespaces():
                r = _run(["ip", "netns", "add", ns], check=False)
                if r.returncode != 0:
                    raise NetnsUnavailable(f"`ip netns add {ns}` failed: {r.stderr.strip()} "
                                           "(needs CAP_NET_ADMIN and a mountable /run/netns)")
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
                self.exec(ns, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                               "net.ipv6.conf.default.disable_ipv6=1"])
            _run(["ip", "link", "add", self.client_if, "netns", self.client, "type", "veth",
                  "peer", "name", self.ports[0], "netns", self.sw])
            _run(["ip", "link", "add", self.server_if, "netns", self.server, "type", "veth",
                  "peer", "name", self.ports[1], "netns", self.sw])
            if self.clients >= 2:
                self._bridge(self.client, self.client_if, self.client_ip, self.client2, "c1", "cb", self.client2_ip)
            else:
                _run(["ip", "-n", self.client, "addr", "add", f"{self.client_ip}/24", "dev", self.client_if])
            if self.servers >= 2:
                self._bridge(self.server, self.server_if, self.server_ip, self.server2, "s1", "sb", self.server2_ip)
            else:
                _run(["ip", "-n", self.server, "addr", "add", f"{self.server_ip}/24", "dev", self.server_if])
            for ns, dev in ((self.client, self.client_if), (self.server, self.server_if),
                            (self.sw, self.ports[0]), (self.sw, self.ports[1])):
                _run(["ip", "-n", ns, "link", "set", dev, "up"])
            if self.client_netem:
                self.set_netem(self.client, self.client_if, self.client_netem)
            if self.server_netem:
                self.set_netem(self.server, self.server_if, self.server_netem)
        except Exception:
            self.down()
            raise
        return self

    @staticmethod
    def _bridge(ns: str, dev: str, ip: str, ns2: str, dev2: str, peer: str, ip2: str) -> None:
        """`ns`'s address moves to a bridge holding its link `dev` and a veth (`peer`) to `ns2`
        (whose end `dev2` gets `ip2`): a second host on the same link."""
        _run(["ip", "-n", ns, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "link", "add", dev2, "netns", ns2, "type", "veth", "peer", "name", peer, "netns", ns])
        for d in (dev, peer):
            _run(["ip", "-n", ns, "link", "set", d, "master", "br0"])
            _run(["ip", "-n", ns, "link", "set", d, "up"])
        _run(["ip", "-n", ns, "link", "set", "br0", "up"])
        _run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "br0"])
        _run(["ip", "-n", ns2, "addr", "add", f"{ip2}/24", "dev", dev2])
        _run(["ip", "-n", ns2, "link", "set", dev2, "up"])

    def set_netem(self, ns: str, dev: str, spec: str) -> None:
        r = _run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "netem", *spec.split()],
                 check=False)
        if r.returncode != 0:
            raise NetnsUnavailable(f"tc netem '{spec}' on {dev} failed: {r.stderr.strip()} "
                                   "(needs iproute2's tc and the sch_netem kernel module; without them, "
                                   "use the switch's own impairment: innet switch run --loss P --reorder P)")

    def down(self) -> None:
        self.stop_switch()
        self.stop_servers()
        for ns in self.namespaces():
            r = _run(["ip", "netns", "pids", ns], check=False)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _run(["ip", "netns", "del", ns], check=False)
        # A new topology is a new deployment: its switch starts knowing nothing.
        for f in Path("/tmp").glob(f"{self.tag}-appswitch-*.state"):
            f.unlink(missing_ok=True)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    # ---- servers ----
    def workdir(self) -> Path:
        """This topology's own directory (the servers' files), removed by `down`."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix=f"innet-{self.tag}-"))
        return self._workdir

    def _start(self, script: str, args: list[str], where: str, timeout: float, env: dict[str, str] | None = None) -> None:
        d = self.workdir() / f"{Path(script).stem}{len(self.servers_started) + 1}"
        self.servers_started.append((script, d))  # stopped by down() even if the start fails midway
        r = subprocess.run([str(REPO / script), "start", str(d), *args], capture_output=True, text=True,
                           timeout=timeout, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"{script} start ({where}) failed ({r.returncode}): {r.stderr[-2000:]}")

    def start_cassandra(self, auth: bool = False, heap: str | None = None) -> None:
        """A real Cassandra node in every server namespace (scripts/cassandra.sh; a second node
        joins the first one's cluster, started after it). `auth`: authentication and authorization
        on (superuser cassandra/cassandra); `heap`: e.g. "512M" (default 1G)."""
        for ns, ip in self.server_namespaces():
            env = dict(os.environ, INNET_CASSANDRA_SEEDS=self.server_ip, INNET_CASSANDRA_AUTH="1" if auth else "0")
            if heap:
                env["INNET_CASSANDRA_HEAP"] = heap
            self._start("scripts/cassandra.sh", [ip, ns], f"Cassandra at {ip} in {ns}", 900, env)

    def start_kv(self, kind: str, port: int) -> None:
        """A real key-value server, `kind` "redis" or "memcached" (scripts/<kind>.sh), on `port`
        in the server namespace."""
        if kind not in ("redis", "memcached"):
            raise ValueError(f"start_kv: kind {kind!r}: expected redis or memcached")
        self._start(f"scripts/{kind}.sh", [self.server_ip, str(port), self.server], f"{kind} at {self.server_ip}:{port}", 60)

    def stop_servers(self) -> None:
        """Stop every server `start_cassandra` / `start_kv` started, the last first."""
        while self.servers_started:
            script, d = self.servers_started.pop()
            subprocess.run([str(REPO / script), "stop", str(d)], capture_output=True, timeout=120)

    def state_file(self, protocol: str) -> Path:
        """The application switch's state file on this topology for `protocol` (`start_switch`
        passes it unless told another): kept across the switch's restarts, removed with the
        topology."""
        return Path(f"/tmp/{self.tag}-appswitch-{protocol}.state")

    def __enter__(self) -> "Topology":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # ---- using ----
    def exec(self, ns: str, cmd: list[str], check: bool = True, timeout: float = 60,
             input: bytes | None = None) -> subprocess.CompletedProcess:
        r = subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, timeout=timeout,
                           input=input, env=innet_env())
        if check and r.returncode != 0:
            raise RuntimeError(f"[{ns}] `{' '.join(cmd)}` failed ({r.returncode}): "
                               f"{r.stderr.decode(errors='replace').strip()}")
        return r

    def popen(self, ns: str, cmd: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], env=innet_env(), **kw)

    def start_switch(self, program: str = "forward", sets: dict[str, str] | None = None,
                     extra: list[str] | None = None, log: Path | None = None) -> subprocess.Popen:
        """Start `innet switch run` on the switch ports; returns once its sockets are open."""
        cmd = [*innet_command(), "switch", "run", "--program", program,
               "--port", self.ports[0], "--port", self.ports[1]]
        sets = dict(sets or {})
        if program == "appswitch":
            sets.setdefault("state_file", str(self.state_file(sets.get("protocol", "cql"))))
        for k, v in sets.items():
            cmd += ["--set", f"{k}={v}"]
        cmd += extra or []
        self.switch_log = log or Path(f"/tmp/{self.tag}-switch.log")
        f = open(self.switch_log, "wb")
        self.switch = self.popen(self.sw, cmd, stdout=f, stderr=subprocess.STDOUT)
        f.close()
        # Ready when the process holds its packet sockets (two AF_PACKET fds) or has died.
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.switch.poll() is not None:
                raise RuntimeError(f"switch exited with {self.switch.returncode}:\n{self.switch_log.read_text()}")
            if self._packet_sockets(self.switch.pid) >= 2:
                return self.switch
            time.sleep(0.05)
        raise RuntimeError(f"switch did not open its ports within 30 s:\n{self.switch_log.read_text()}")

    @staticmethod
    def _packet_sockets(pid: int) -> int:
        # `ip netns exec` execs the command, so pid is the Python process itself.
        try:
            inodes = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            return 0
        socks = {i[len("socket:["):-1] for i in inodes if i.startswith("socket:[")}
        # /proc/net/packet is per network namespace: read it through the process's own view.
        try:
            lines = Path(f"/proc/{pid}/net/packet").read_text().splitlines()[1:]
        except OSError:
            return 0
        return sum(1 for line in lines if line.split()[-1] in socks)

    def stop_switch(self, sig: int = signal.SIGTERM, timeout: float = 10) -> tuple[int | None, str]:
        """Signal the switch and wait; returns (exit code, its log)."""
        if self.switch is None:
            return None, ""
        p, self.switch = self.switch, None
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log = self.switch_log.read_text(errors="replace") if self.switch_log else ""
        return p.returncode, log


@contextmanager
def rig(tag: str, unavailable: Callable[[NetnsUnavailable], BaseException] | None = None, cassandra: bool = False,
        auth: bool = False, heap: str | None = None, kv: Iterable[tuple[str, int]] = (), **topology) -> Iterator[Topology]:
    """A `Topology` (`tag` names its namespaces; `topology`: its other fields) that is up, with a
    Cassandra node in each server namespace when `cassandra` (`auth`, `heap`: `start_cassandra`'s)
    and the key-value servers `kv` ((kind, port), ...); switch, servers, namespaces and files gone
    when the block ends. Without namespaces: `unavailable(e)` is raised (the caller's error, e.g.
    an experiment's UserInputError naming it), or NetnsUnavailable itself."""
    t = Topology(tag=tag, **topology)
    try:
        t.up()
    except NetnsUnavailable as e:
        if unavailable is None:
            raise
        raise unavailable(e) from e
    try:
        if cassandra:
            t.start_cassandra(auth, heap)
        for kind, port in kv:
            t.start_kv(kind, port)
        yield t
    finally:
        t.down()


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="netns", description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("--tag", default="innet", help="Namespace name prefix (default innet: innet-c, innet-sw, innet-s).")
    ap.add_argument("--client-netem", default=None, help="e.g. 'loss 1%%'")
    ap.add_argument("--server-netem", default=None)
    a = ap.parse_args(argv)
    t = Topology(tag=a.tag, client_netem=a.client_netem, server_netem=a.server_netem)
    try:
        if a.action == "up":
            t.up()
            print(f"namespaces {t.client} ({t.client_if} {t.client_ip}), {t.sw} (ports {t.ports[0]} {t.ports[1]}), "
                  f"{t.server} ({t.server_if} {t.server_ip}); run the switch with:\n"
                  f"  ip netns exec {t.sw} innet switch run --program forward --port {t.ports[0]} --port {t.ports[1]}")
        else:
            t.down()
    except NetnsUnavailable as e:
        print(f"netns: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
