//! Real Open vSwitch as an oracle: starts Debian's `ovsdb-server` and `ovs-vswitchd` in a
//! temporary directory with a userspace (netdev) bridge, loads a flow file with `ovs-ofctl`, and
//! asks `ofproto/trace` over the unixctl JSON-RPC socket. Also parses what OVS prints (the
//! Megaflow and the datapath actions) into this crate's types so results compare field by field.

use crate::fields::{Field, Flow, ETH_TYPE_ARP, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use crate::flows::{parse_ip_masked, parse_mac, parse_uint};
use crate::slowpath::{CtAction, Output};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

static INSTANCE: AtomicUsize = AtomicUsize::new(0);

/// Every netdev-datapath ovs-vswitchd creates the host-wide tap `ovs-netdev`, so two instances
/// cannot run at once: one per process (this mutex) and one per host (a lock file).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
const HOST_LOCK_PATH: &str = "/tmp/innet-ovs-oracle.lock";

/// Flow files up to this size are loaded one flow mod at a time (see [`Ovs::load_flows`]).
pub const ONE_BY_ONE_FLOWS: usize = 600;

/// A running OVS with one netdev bridge and OpenFlow ports 1..=n_ports.
pub struct Ovs {
    dir: PathBuf,
    bridge: String,
    /// Datapath port number → OpenFlow port number.
    dp_to_of: BTreeMap<u32, u32>,
    rpc: UnixStream,
    next_id: u64,
    // Released after Drop::drop has stopped the daemons (fields drop after it).
    _host_lock: std::fs::File,
    _process_lock: std::sync::MutexGuard<'static, ()>,
}

/// What OVS's `ofproto/trace` answered for one packet.
#[derive(Clone, Debug)]
pub struct OvsTrace {
    pub text: String,
    /// The first pass's lines.
    pub megaflow_line: String,
    pub actions_line: String,
    /// Every datapath pass: (Megaflow line, Datapath actions line); after the first, one per
    /// recirculation (`recirc(0x..) - resume conntrack with ct_state=...`).
    pub passes: Vec<(String, String)>,
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {:?}: {e} (is openvswitch-switch installed?)", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!("{:?} failed: {}{}", cmd, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True when the OVS binaries are installed.
pub fn ovs_available() -> bool {
    Path::new("/usr/sbin/ovs-vswitchd").exists() || Command::new("ovs-vswitchd").arg("--version").output().is_ok()
}

impl Ovs {
    /// Starts ovsdb-server and ovs-vswitchd in a fresh temporary directory.
    pub fn start(n_ports: u32) -> Result<Ovs, String> {
        let process_lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let host_lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(HOST_LOCK_PATH)
            .map_err(|e| format!("{HOST_LOCK_PATH}: {e}"))?;
        host_lock.lock().map_err(|e| format!("lock {HOST_LOCK_PATH}: {e}"))?;
        let n = INSTANCE.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("innet-ovs-{pid}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("run")).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::create_dir_all(dir.join("log")).map_err(|e| format!("{}: {e}", dir.display()))?;
        // Interface names are global to the host: make them unique per process and instance.
        let tag = format!("{:x}", (pid as usize * 16 + n) & 0xfffff);
        let bridge = format!("gf{tag}");
        let d = |p: &str| dir.join(p).display().to_string();
        // The daemons put the bridge's OpenFlow management socket under OVS_RUNDIR.
        let cmd = |prog: &str| {
            let mut c = Command::new(prog);
            c.env("OVS_RUNDIR", dir.join("run")).env("OVS_LOGDIR", dir.join("log")).env("OVS_DBDIR", &dir);
            c
        };
        let db = format!("unix:{}", d("run/db.sock"));
        run(cmd("ovsdb-tool").args(["create", &d("conf.db"), "/usr/share/openvswitch/vswitch.ovsschema"]))?;
        run(cmd("ovsdb-server").args([
            &d("conf.db"),
            &format!("--remote=punix:{}", d("run/db.sock")),
            &format!("--pidfile={}", d("run/ovsdb-server.pid")),
            &format!("--unixctl={}", d("run/ovsdb-server.ctl")),
            "--detach",
            &format!("--log-file={}", d("log/ovsdb-server.log")),
            "-vconsole:off",
        ]))?;
        let mut ovs = Ovs { dir: dir.clone(), bridge: bridge.clone(), dp_to_of: BTreeMap::new(), rpc: UnixStream::pair().map_err(|e| e.to_string())?.0, next_id: 1, _host_lock: host_lock, _process_lock: process_lock };
        run(cmd("ovs-vsctl").args([&format!("--db={db}"), "--no-wait", "init"]))?;
        run(cmd("ovs-vswitchd").args([
            &db,
            &format!("--pidfile={}", d("run/ovs-vswitchd.pid")),
            &format!("--unixctl={}", d("run/ovs-vswitchd.ctl")),
            "--detach",
            &format!("--log-file={}", d("log/ovs-vswitchd.log")),
            "-vconsole:off",
        ]))?;
        run(cmd("ovs-vsctl").args([&format!("--db={db}"), "add-br", &bridge, "--", "set", "bridge", &bridge, "datapath_type=netdev"]))?;
        for i in 1..=n_ports {
            let port = format!("{bridge}p{i}");
            run(cmd("ovs-vsctl").args([
                &format!("--db={db}"), "add-port", &bridge, &port, "--", "set", "interface", &port, "type=internal", &format!("ofport_request={i}"),
            ]))?;
        }
        ovs.rpc = UnixStream::connect(dir.join("run/ovs-vswitchd.ctl")).map_err(|e| format!("connect to ovs-vswitchd: {e}"))?;
        // Ports appear asynchronously; wait until dpif/show lists all of them.
        for _ in 0..100 {
            let show = ovs.appctl("dpif/show", &[])?;
            ovs.dp_to_of = parse_dpif_show(&show, &bridge);
            if ovs.dp_to_of.values().filter(|&&of| of >= 1 && of <= n_ports).count() == n_ports as usize {
                return Ok(ovs);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Err(format!("ovs-vswitchd did not create {n_ports} ports; see {}", d("log/ovs-vswitchd.log")))
    }

    /// Replaces the bridge's flows with those of `flow_file` (OpenFlow 1.3, as add-flows reads it).
    ///
    /// Files of up to [`ONE_BY_ONE_FLOWS`] flows are loaded one flow per `ovs-ofctl add-flow`
    /// (each waits for OVS's barrier reply), so OVS re-sorts its subtables after every insertion
    /// as our classifier models. `add-flows` streams the flow mods, and under CPU load OVS
    /// handles several per main-loop iteration before re-sorting, which changes the order of
    /// equal-priority subtables (seen: 8 of 3,000 random tie-heavy packets with other actions at
    /// load average 7). Larger files (Pipebench at scale) go through `add-flows`.
    pub fn load_flows(&self, flow_file: &Path) -> Result<(), String> {
        let mgmt = format!("unix:{}", self.dir.join(format!("run/{}.mgmt", self.bridge)).display());
        run(Command::new("ovs-ofctl").args(["-O", "OpenFlow13", "del-flows", &mgmt]))?;
        let text = std::fs::read_to_string(flow_file).map_err(|e| format!("{}: {e}", flow_file.display()))?;
        let flows: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        if flows.len() <= ONE_BY_ONE_FLOWS {
            for f in flows {
                run(Command::new("ovs-ofctl").args(["-O", "OpenFlow13", "add-flow", &mgmt, f]))?;
            }
        } else {
            run(Command::new("ovs-ofctl").args(["-O", "OpenFlow13", "add-flows", &mgmt]).arg(flow_file))?;
        }
        Ok(())
    }

    /// One unixctl JSON-RPC call on the persistent connection.
    pub fn appctl(&mut self, method: &str, params: &[&str]) -> Result<String, String> {
        let id = self.next_id;
        self.next_id += 1;
        let req = serde_json::json!({"method": method, "params": params, "id": id});
        self.rpc.write_all(req.to_string().as_bytes()).map_err(|e| format!("unixctl write: {e}"))?;
        let mut de = serde_json::Deserializer::from_reader(&self.rpc).into_iter::<serde_json::Value>();
        let reply = de.next().ok_or("unixctl connection closed")?.map_err(|e| format!("unixctl reply: {e}"))?;
        if let Some(err) = reply.get("error").filter(|e| !e.is_null()) {
            return Err(format!("{method}: {}", err.as_str().map(str::to_string).unwrap_or_else(|| err.to_string())));
        }
        Ok(reply.get("result").and_then(|r| r.as_str()).unwrap_or("").to_string())
    }

    /// `ofproto/trace BRIDGE FLOW`.
    pub fn trace(&mut self, flow: &str) -> Result<OvsTrace, String> {
        self.trace_ct(flow, &[])
    }

    /// `ofproto/trace BRIDGE FLOW --ct-next S1 --ct-next S2 ...`: the conntrack state each
    /// recirculated pass resumes with, in order (OVS's default is `trk,new`).
    pub fn trace_ct(&mut self, flow: &str, ct_next: &[&str]) -> Result<OvsTrace, String> {
        let bridge = self.bridge.clone();
        let mut params: Vec<&str> = vec![&bridge, flow];
        for s in ct_next {
            params.extend(["--ct-next", s]);
        }
        let text = self.appctl("ofproto/trace", &params)?;
        let mut passes = Vec::new();
        let mut megaflow = None;
        for l in text.lines() {
            if let Some(m) = l.strip_prefix("Megaflow: ") {
                megaflow = Some(m.to_string());
            } else if let Some(a) = l.strip_prefix("Datapath actions: ") {
                let m = megaflow.take().ok_or_else(|| format!("Datapath actions without a Megaflow line in trace of {flow}:\n{text}"))?;
                passes.push((m, a.to_string()));
            }
        }
        let (megaflow_line, actions_line) = passes.first().cloned().ok_or_else(|| format!("no Megaflow/Datapath actions lines in trace of {flow}:\n{text}"))?;
        Ok(OvsTrace { megaflow_line, actions_line, passes, text })
    }

    pub fn dp_to_of(&self) -> &BTreeMap<u32, u32> {
        &self.dp_to_of
    }
}

impl Drop for Ovs {
    fn drop(&mut self) {
        let db = format!("--db=unix:{}", self.dir.join("run/db.sock").display());
        let _ = Command::new("ovs-vsctl").args([&db, "--if-exists", "del-br", &self.bridge]).output();
        for pidfile in ["run/ovs-vswitchd.pid", "run/ovsdb-server.pid"] {
            if let Ok(pid) = std::fs::read_to_string(self.dir.join(pidfile)) {
                let _ = Command::new("kill").arg(pid.trim()).output();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Lines like `    gf1p1 1/2: (tap)` under the bridge: OpenFlow port / datapath port.
fn parse_dpif_show(text: &str, bridge: &str) -> BTreeMap<u32, u32> {
    let mut map = BTreeMap::new();
    for l in text.lines() {
        let t = l.trim();
        let Some((name, rest)) = t.split_once(' ') else { continue };
        if !name.starts_with(bridge) {
            continue;
        }
        let Some((ports, _)) = rest.split_once(':') else { continue };
        if let Some((of, dp)) = ports.split_once('/') {
            if let (Ok(of), Ok(dp)) = (of.parse::<u32>(), dp.parse::<u32>()) {
                map.insert(dp, of);
            }
        }
    }
    map
}

/// The trace input for a packet, in the syntax `ofproto/trace` accepts (udp ports must be
/// written `udp_src`/`udp_dst`, ICMP ones `icmp_type`/`icmp_code`).
pub fn trace_flow_string(p: &Flow) -> String {
    let mut s = format!("in_port={}", p.get(Field::InPort));
    let proto = p.get(Field::NwProto);
    let l4 = match (p.get(Field::DlType), proto) {
        (ETH_TYPE_IP, IPPROTO_TCP) => Some(("tcp", "tp_src", "tp_dst")),
        (ETH_TYPE_IP, IPPROTO_UDP) => Some(("udp", "udp_src", "udp_dst")),
        (ETH_TYPE_IP, IPPROTO_ICMP) => Some(("icmp", "icmp_type", "icmp_code")),
        _ => None,
    };
    match l4 {
        Some((name, _, _)) => s += &format!(",{name}"),
        None if p.is_ip() => s += &format!(",ip,nw_proto={proto}"),
        None => s += &format!(",dl_type=0x{:04x}", p.get(Field::DlType)),
    }
    s += &format!(",dl_src={},dl_dst={}", Field::DlSrc.format(p.get(Field::DlSrc), u64::MAX >> 16), Field::DlDst.format(p.get(Field::DlDst), u64::MAX >> 16));
    if p.get(Field::VlanTci) != 0 {
        s += &format!(",vlan_tci=0x{:04x}", p.get(Field::VlanTci));
    }
    if p.is_ip() {
        s += &format!(
            ",nw_src={},nw_dst={},nw_tos={},nw_ttl={}",
            crate::fields::format_ip(p.get(Field::NwSrc)),
            crate::fields::format_ip(p.get(Field::NwDst)),
            p.get(Field::NwTos) & 0xfc,
            p.get(Field::NwTtl)
        );
    }
    if let Some((_, src, dst)) = l4 {
        s += &format!(",{src}={},{dst}={}", p.get(Field::TpSrc), p.get(Field::TpDst));
    }
    s
}

/// Splits at commas outside parentheses.
fn split_commas(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.into_iter().filter(|x| !x.is_empty()).collect()
}

/// A `ct_label` as OVS prints it (`0x3`, `0/0x10000000000000002`), as this model holds it
/// ([`crate::fields::ct_label_bits`]); labels reaching the upper 64 bits are an error.
fn ct_label_masked(v: &str) -> Result<(u64, u64), String> {
    let bits = |x: &str| -> Result<u64, String> {
        crate::fields::ct_label_bits(crate::flows::parse_u128(x)?).ok_or_else(|| format!("ct_label {x}: beyond the modelled low 64 bits"))
    };
    match v.split_once('/') {
        Some((a, m)) => Ok((bits(a)?, bits(m)?)),
        None => Ok((bits(v)?, u64::MAX)),
    }
}

fn masked_num(v: &str, bits: u32) -> Result<(u64, u64), String> {
    let full = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    match v.split_once('/') {
        Some((a, m)) => Ok((parse_uint(a, u64::MAX)?, parse_uint(m, u64::MAX)?)),
        None => Ok((parse_uint(v, u64::MAX)?, full)),
    }
}

/// Parses OVS's `Megaflow:` line into a (value, mask) flow. Unknown tokens are returned so a
/// caller can count them as differences instead of silently ignoring them.
pub fn parse_megaflow(line: &str) -> Result<(Flow, Flow, Vec<String>), String> {
    let mut value = Flow::default();
    let mut mask = Flow::default();
    let mut unknown = Vec::new();
    let mut put = |f: Field, v: u64, m: u64| {
        value.set_masked(f, v, m);
        mask.or(f, m);
    };
    for tok in split_commas(line) {
        let (k, v) = match tok.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (tok, None),
        };
        match (k, v) {
            ("eth", None) | ("nw_frag", _) => {}
            ("recirc_id", Some(v)) => put(Field::RecircId, parse_uint(v, u32::MAX as u64)?, u32::MAX as u64),
            ("ct_state", Some(v)) => {
                let (a, m) = crate::flows::parse_ct_state(v, true)?;
                put(Field::CtState, a, m)
            }
            ("ct_zone", Some(v)) => {
                let (a, m) = masked_num(v, 16)?;
                put(Field::CtZone, a, m)
            }
            ("ct_mark", Some(v)) => {
                let (a, m) = masked_num(v, 32)?;
                put(Field::CtMark, a, m)
            }
            ("ct_label", Some(v)) => {
                let (a, m) = ct_label_masked(v)?;
                put(Field::CtLabel, a, m)
            }
            ("nw_ttl", Some(v)) => put(Field::NwTtl, parse_uint(v, 255)?, 0xff),
            ("ip", None) => put(Field::DlType, ETH_TYPE_IP, 0xffff),
            ("arp", None) => put(Field::DlType, ETH_TYPE_ARP, 0xffff),
            ("tcp", None) | ("udp", None) | ("icmp", None) => {
                put(Field::DlType, ETH_TYPE_IP, 0xffff);
                let p = match k { "tcp" => IPPROTO_TCP, "udp" => IPPROTO_UDP, _ => IPPROTO_ICMP };
                put(Field::NwProto, p, 0xff);
            }
            ("in_port", Some(v)) => put(Field::InPort, parse_uint(v, 0xffff)?, 0xffff),
            ("dl_src" | "dl_dst", Some(v)) => {
                let f = if k == "dl_src" { Field::DlSrc } else { Field::DlDst };
                match v.split_once('/') {
                    Some((a, m)) => put(f, parse_mac(a)?, parse_mac(m)?),
                    None => put(f, parse_mac(v)?, f.full_mask()),
                }
            }
            ("dl_type", Some(v)) => put(Field::DlType, parse_uint(v, 0xffff)?, 0xffff),
            ("vlan_tci", Some(v)) => {
                let (a, m) = masked_num(v, 16)?;
                put(Field::VlanTci, a, m)
            }
            ("dl_vlan", Some(v)) => put(Field::VlanTci, 0x1000 | parse_uint(v, 0xfff)?, 0x1fff),
            ("nw_src" | "nw_dst", Some(v)) => {
                let f = if k == "nw_src" { Field::NwSrc } else { Field::NwDst };
                let (a, m) = parse_ip_masked(v)?;
                put(f, a, m)
            }
            ("nw_proto", Some(v)) => put(Field::NwProto, parse_uint(v, 255)?, 0xff),
            ("nw_tos", Some(v)) => put(Field::NwTos, parse_uint(v, 255)?, 0xfc),
            ("nw_ecn", Some(v)) => put(Field::NwTos, parse_uint(v, 3)?, 0x03),
            ("tp_src" | "tcp_src" | "udp_src" | "icmp_type", Some(v)) => {
                let (a, m) = masked_num(v, 16)?;
                put(Field::TpSrc, a, m & if k == "icmp_type" { 0xff } else { 0xffff })
            }
            ("tp_dst" | "tcp_dst" | "udp_dst" | "icmp_code", Some(v)) => {
                let (a, m) = masked_num(v, 16)?;
                put(Field::TpDst, a, m & if k == "icmp_code" { 0xff } else { 0xffff })
            }
            _ => unknown.push(tok.to_string()),
        }
    }
    Ok((value, mask, unknown))
}

/// Replays OVS's datapath actions on the packet: each output with the headers it carries,
/// in OpenFlow port numbers.
pub fn parse_datapath_actions(line: &str, packet: &Flow, dp_to_of: &BTreeMap<u32, u32>) -> Result<Vec<Output>, String> {
    let mut headers = *packet;
    let mut outputs = Vec::new();
    for act in split_commas(line) {
        // Conntrack, recirculation and the dec_ttl exception's controller action send nothing
        // out ([`parse_ct_actions`] reads the first two).
        if act == "drop" || act == "ct" || act.starts_with("ct(") || act.starts_with("recirc(") || act.starts_with("userspace(") {
            continue;
        }
        if let Ok(dp) = act.parse::<u32>() {
            let port = *dp_to_of.get(&dp).ok_or_else(|| format!("datapath port {dp} is not an OpenFlow port"))?;
            outputs.push(Output { port, headers, visit: 0, window_writes: Flow::default() });
            continue;
        }
        let inner = act
            .strip_prefix("set(")
            .and_then(|s| s.strip_suffix(')'))
            .ok_or_else(|| format!("unsupported datapath action '{act}'"))?;
        let (kind, rest) = inner.split_once('(').ok_or_else(|| format!("unsupported set action '{act}'"))?;
        let body = rest.strip_suffix(')').ok_or_else(|| format!("unsupported set action '{act}'"))?;
        for kv in split_commas(body) {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("bad key '{kv}' in '{act}'"))?;
            let (field, (val, m)) = match (kind, k) {
                ("eth", "src" | "dst") => {
                    let f = if k == "src" { Field::DlSrc } else { Field::DlDst };
                    let vm = match v.split_once('/') {
                        Some((a, m)) => (parse_mac(a)?, parse_mac(m)?),
                        None => (parse_mac(v)?, f.full_mask()),
                    };
                    (f, vm)
                }
                ("ipv4", "src" | "dst") => (if k == "src" { Field::NwSrc } else { Field::NwDst }, parse_ip_masked(v)?),
                ("ipv4", "tos") => (Field::NwTos, masked_num(v, 8)?),
                ("ipv4", "ttl") => (Field::NwTtl, masked_num(v, 8)?),
                ("tcp" | "udp", "src" | "dst") => (if k == "src" { Field::TpSrc } else { Field::TpDst }, masked_num(v, 16)?),
                _ => return Err(format!("unsupported key '{k}' in datapath action '{act}'")),
            };
            headers.set_masked(field, val, m);
        }
    }
    Ok(outputs)
}

/// The `ct` datapath actions of a pass, in order, as [`CtAction`]s (a `recirc(ID)` right
/// after a `ct` is its recirculation; OVS's id numbers are its own, so the id is kept as is).
pub fn parse_ct_actions(line: &str) -> Result<Vec<CtAction>, String> {
    let mut out: Vec<CtAction> = Vec::new();
    for act in split_commas(line) {
        if let Some(id) = act.strip_prefix("recirc(").and_then(|r| r.strip_suffix(')')) {
            let last = out.last_mut().filter(|c| c.recirc.is_none()).ok_or_else(|| format!("'{act}' does not follow a ct action in '{line}'"))?;
            last.recirc = Some(parse_uint(id, u32::MAX as u64)? as u32);
        } else if act == "ct" || act.starts_with("ct(") {
            let mut c = CtAction { commit: false, zone: 0, recirc: None, mark: None, label: None, flow: Flow::default() };
            let inner = act.strip_prefix("ct(").and_then(|a| a.strip_suffix(')')).unwrap_or("");
            for kv in split_commas(inner) {
                match kv.split_once('=') {
                    None if kv == "commit" => c.commit = true,
                    Some(("zone", z)) => c.zone = parse_uint(z, 0xffff)? as u16,
                    Some(("mark", m)) => c.mark = Some(masked_num(m, 32)?),
                    Some(("label", l)) => c.label = Some(ct_label_masked(l)?),
                    _ => return Err(format!("unsupported ct argument '{kv}' in '{act}'")),
                }
            }
            out.push(c);
        }
    }
    Ok(out)
}

/// The packet fields an output's headers are compared on.
pub const HEADER_FIELDS: [Field; 9] =
    [Field::DlSrc, Field::DlDst, Field::VlanTci, Field::NwSrc, Field::NwDst, Field::NwTos, Field::NwTtl, Field::TpSrc, Field::TpDst];

/// Outputs compared on port and packet headers only (registers and metadata do not leave).
pub fn same_outputs(a: &[Output], b: &[Output]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| x.port == y.port && HEADER_FIELDS.iter().all(|&f| x.headers.get(f) == y.headers.get(f)))
}

/// Compares our Megaflow (packet and mask) with the one parsed from OVS's line. OVS prints
/// `nw_tos` and `nw_ecn` without their masks (`nw_tos=V` shows the masked value whenever any
/// DSCP bit is examined), so for that byte we compare what the text can show: which of the two
/// parts are matched and their masked values.
/// recirc_id values are each side's own numbering: only the mask and whether the id is 0 (a
/// packet's first pass) are compared.
pub fn megaflow_equal(packet: &Flow, our_mask: &Flow, ovs_value: &Flow, ovs_mask: &Flow) -> bool {
    Field::all().all(|f| {
        if f == Field::RecircId {
            our_mask.get(f) == ovs_mask.get(f) && (packet.get(f) == 0) == (ovs_value.get(f) == 0)
        } else if f == Field::NwTos {
            let (m, o) = (our_mask.get(f), ovs_mask.get(f));
            let v = packet.get(f) & m;
            ((m & 0xfc != 0) == (o & 0xfc != 0))
                && ((m & 0x03 != 0) == (o & 0x03 != 0))
                && (o & 0xfc == 0 || v & 0xfc == ovs_value.get(f) & 0xfc)
                && (o & 0x03 == 0 || v & 0x03 == ovs_value.get(f) & 0x03)
        } else {
            our_mask.get(f) == ovs_mask.get(f) && packet.get(f) & our_mask.get(f) == ovs_value.get(f)
        }
    })
}
