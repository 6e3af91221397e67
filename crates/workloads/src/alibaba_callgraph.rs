//! The Alibaba microservice call-graph trace as VM trace rows.
//!
//! SwitchV2P's Fig. 6 and Table 5 run "a prefix of the microservice call trace" of Alibaba. That
//! trace is public: alibaba/clusterdata, `cluster-trace-microservices-v2021`, table
//! `MS_CallGraph_Table`, released as `MSCallGraph_*.csv` (145 files, ~25 GiB). This module reads
//! such a file and turns its calls into [`TraceRow`]s (`src_vm,dst_vm,ts_ns,flow_id,size_bytes`),
//! the rows every VM-level experiment runs. It exists so that a user who has the trace can run
//! the paper's input; the reproduction itself runs the synthetic
//! [`crate::vm_traces::alibaba_like`] because the trace cannot be downloaded where it runs.
//!
//! **Layouts.** Columns are found by header name (case-insensitive, `_` ignored, an unnamed
//! column such as the released files' leading index skipped), so all of these work:
//! the released files' `,traceid,timestamp,rpcid,um,rpctype,dm,interface,rt`; the README's
//! `timestamp,traceid,rpcid,um,rpctype,interface,dm,rt`; and the v2022 release's
//! `timestamp,traceid,service,rpc_id,um,uminstanceid,rpctype,interface,dm,dminstanceid,rt`.
//! Needed: `timestamp` (whole milliseconds), `traceid`, `rpcid` (or `rpc_id`), `um`, `rpctype`,
//! `dm`. Anything else is an error naming the file, the line and the expected columns.
//!
//! **What becomes a flow.**
//! - *One flow per call.* RPC and HTTP calls are recorded twice with the same rpcid, once at the
//!   upstream microservice (UM, positive `rt`) and once at the downstream one (DM, negative
//!   `rt`). Records are merged by (traceid, rpcid): the call's time is its earliest record's
//!   (the UM sends before the DM receives), and each field is the first known value among its
//!   records in file order (the README: "some metrics related to rpcID could be found from
//!   another record even if one is missing"). Records up to [`MERGE_MARGIN_MS`] past the window
//!   fill in calls that started inside it, so a call is the same whatever the window's length.
//! - *Only known ends.* The README says missing names are recorded as `NAN`, `(?)` or an empty
//!   field; the v2022 release also writes `UNKNOWN` (and `?`). Calls without a known caller and
//!   callee after merging are skipped and counted ([`CallGraphStats::unknown_end`]). Calls from a
//!   container to itself (no network traffic) are skipped and counted too.
//! - *Which rpctypes.* The paper: "Alibaba only includes RPC calls". By default `rpc` and `http`
//!   count (remote invocations between containers, request/response, the two types recorded at
//!   both ends); `mc` and `db` (calls to Memcached and databases, stateful services that "run in
//!   other dedicated clusters"), `mq` (through a broker) and `userDefined` are left out and
//!   counted per type. [`CallGraphOptions::rpctypes`] changes the set (`all` keeps every type).
//! - *A prefix.* The window starts at the earliest timestamp of the file and lasts
//!   [`CallGraphOptions::duration_ns`] of simulated time; trace time runs
//!   [`CallGraphOptions::speedup`] times faster than simulated time (1 = real time; a released
//!   file holds ~6 M records over ~5 minutes, ~20 records per ms, after a 0.5 % sampling of call
//!   graphs, so real time gives few calls per simulated millisecond).
//! - *Within a millisecond.* Timestamps are whole milliseconds; a call in millisecond `m` starts
//!   at `(m - first) ms + u` with `u` uniform in [0, 1 ms), divided by the speed-up. The `u` are
//!   drawn from a ChaCha8 generator seeded with [`CallGraphOptions::seed`], one per kept call in
//!   the order (millisecond, earliest record's line), so a call's start does not depend on the
//!   window's length. Calls whose start falls past the window's end are dropped.
//! - *Containers → VMs.* When the file has `uminstanceid`/`dminstanceid` (container ids, v2022),
//!   those are the VMs; otherwise (v2021, which names services only) each microservice (`um`,
//!   `dm`) is one VM. VM ids are given in order of first appearance in the kept calls (by start
//!   time; caller before callee), from 0; more containers than [`CallGraphOptions::max_vms`] is
//!   an error. With sequential placement (VM v on server v / VMs-per-server) this places
//!   containers in the order the trace first uses them.
//! - *Sizes.* The trace has no message sizes: each call is one flow of a size drawn from
//!   [`CallSizes`] (log-normal, median [`CallGraphOptions::median_call_bytes`], 1 KB by default,
//!   σ = 1, clamped to 64 B ..= 1 MiB), the distribution of the synthetic trace, drawn right after
//!   the call's start offset.
//! - *Flow ids* are 1, 2, … in start order (the artifact ignores flow id 0).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;

use rand::{Rng, SeedableRng};

use crate::trace::TraceRow;
use crate::vm_traces::CallSizes;

/// How far past the window's last millisecond records still fill in the fields of calls that
/// started inside it (a call's two records are its response time apart, mostly well under this).
pub const MERGE_MARGIN_MS: u64 = 1_000;

/// The rpctypes that count as flows unless told otherwise.
pub const DEFAULT_RPCTYPES: &str = "rpc,http";

/// How to read a call-graph file.
#[derive(Debug, Clone)]
pub struct CallGraphOptions {
    /// Length of the prefix in simulated time.
    pub duration_ns: u64,
    /// How many times faster trace time runs than simulated time (1 = real time).
    pub speedup: f64,
    /// rpctypes that become flows (lower case); empty = every type.
    pub rpctypes: Vec<String>,
    /// VMs the network has: more containers than this is an error.
    pub max_vms: u64,
    pub median_call_bytes: f64,
    pub seed: u64,
}

impl CallGraphOptions {
    /// `rpc,http`-style list (case-insensitive); `all` or `*` keeps every type.
    pub fn parse_rpctypes(s: &str) -> Result<Vec<String>, String> {
        let v: Vec<String> = s.split(',').map(|x| x.trim().to_ascii_lowercase()).filter(|x| !x.is_empty()).collect();
        if v.is_empty() {
            return Err(format!("expected a comma-separated list of rpctypes (e.g. {DEFAULT_RPCTYPES}) or all, got '{s}'"));
        }
        if v.iter().any(|x| x == "all" || x == "*") {
            return Ok(Vec::new());
        }
        Ok(v)
    }
}

/// What reading a file kept and skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallGraphStats {
    /// Data lines of the file.
    pub records: u64,
    /// The earliest timestamp (ms): where the window starts.
    pub first_timestamp_ms: u64,
    /// Records of the calls that start in the window's milliseconds.
    pub window_records: u64,
    /// Of those, records merged into another record of the same (traceid, rpcid).
    pub duplicate_records: u64,
    /// Distinct calls that start in the window's milliseconds.
    pub calls: u64,
    /// Calls left out by rpctype, per type as written (lower case).
    pub other_rpctype: BTreeMap<String, u64>,
    /// Calls whose caller or callee is a placeholder after merging.
    pub unknown_end: u64,
    /// Calls from a container to itself.
    pub self_calls: u64,
    /// Calls whose start (spread in its millisecond) fell past the window's end.
    pub past_window: u64,
    /// Flows written.
    pub flows: u64,
    /// Containers (VMs) named.
    pub containers: u64,
}

/// A converted file: rows, and the container behind each VM id.
#[derive(Debug, Clone)]
pub struct CallGraphTrace {
    pub rows: Vec<TraceRow>,
    /// `containers[v]` is VM v's container (instance id) or microservice name.
    pub containers: Vec<String>,
    /// VMs are container instances (`uminstanceid`/`dminstanceid`), not microservices.
    pub by_instance: bool,
    pub stats: CallGraphStats,
}

/// A header field as compared: trimmed, unquoted, lower case, `_` dropped.
fn norm(field: &str) -> String {
    field.trim().trim_start_matches('\u{feff}').trim_matches('"').to_ascii_lowercase().replace('_', "")
}

/// Whether `header_line` is a call-graph header (names `traceid` and `rpcid`/`rpc_id`).
pub fn is_callgraph_header(header_line: &str) -> bool {
    let names: Vec<String> = header_line.split(',').map(norm).collect();
    names.iter().any(|n| n == "traceid") && names.iter().any(|n| n == "rpcid")
}

/// A missing name, as the trace writes it: empty, `NAN`, `(?)`, `?`, `UNKNOWN`, `NULL`.
pub fn is_placeholder(name: &str) -> bool {
    let n = name.trim();
    n.is_empty()
        || n == "?"
        || (n.starts_with('(') && n.ends_with(')') && n[1..n.len() - 1].trim().chars().all(|c| c == '?'))
        || ["nan", "unknown", "null", "none"].iter().any(|p| n.eq_ignore_ascii_case(p))
}

const REQUIRED: [&str; 6] = ["timestamp", "traceid", "rpcid", "um", "rpctype", "dm"];

fn expected_columns() -> String {
    "timestamp, traceid, rpcid (or rpc_id), um, rpctype, dm; optional uminstanceid, dminstanceid".into()
}

/// Column positions of a call-graph header.
#[derive(Debug, Clone)]
struct Columns {
    width: usize,
    timestamp: usize,
    traceid: usize,
    rpcid: usize,
    um: usize,
    rpctype: usize,
    dm: usize,
    instances: Option<(usize, usize)>,
}

impl Columns {
    fn from_header(line: &str, origin: &str) -> Result<Columns, String> {
        let names: Vec<String> = line.split(',').map(norm).collect();
        let find = |want: &str| names.iter().position(|n| n == want);
        let mut pos = [0usize; 6];
        for (k, want) in REQUIRED.iter().enumerate() {
            pos[k] = find(want).ok_or_else(|| {
                format!("{origin}:1: the call-graph header has no column '{want}'; expected columns {}, got '{}'", expected_columns(), line.trim())
            })?;
        }
        let instances = match (find("uminstanceid"), find("dminstanceid")) {
            (Some(u), Some(d)) => Some((u, d)),
            (None, None) => None,
            _ => {
                return Err(format!(
                    "{origin}:1: the call-graph header has only one of uminstanceid and dminstanceid; expected both or neither, got '{}'",
                    line.trim()
                ))
            }
        };
        Ok(Columns { width: names.len(), timestamp: pos[0], traceid: pos[1], rpcid: pos[2], um: pos[3], rpctype: pos[4], dm: pos[5], instances })
    }
}

/// One data line split into fields, checked for width; its timestamp parsed.
fn split_record<'a>(line: &'a str, cols: &Columns, origin: &str, n: u64) -> Result<(Vec<&'a str>, u64), String> {
    let fields: Vec<&str> = line.split(',').map(|f| f.trim().trim_matches('"')).collect();
    if fields.len() != cols.width {
        return Err(format!("{origin}:{n}: expected {} fields as the header names, got {}", cols.width, fields.len()));
    }
    let raw = fields[cols.timestamp];
    let ts = raw
        .parse::<u64>()
        .ok()
        .or_else(|| raw.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x < 1.8e19).map(|x| x as u64))
        .ok_or_else(|| format!("{origin}:{n}: column timestamp must be a whole non-negative number of milliseconds, got '{raw}'"))?;
    Ok((fields, ts))
}

/// Every data line of `path` (1-based line numbers), header checked; `f` gets each record.
fn for_each_record(path: &Path, mut f: impl FnMut(&Columns, &[&str], u64, u64) -> Result<(), String>) -> Result<Columns, String> {
    let origin = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    let mut n = 0u64;
    let mut cols: Option<Columns> = None;
    loop {
        line.clear();
        let read = reader.read_line(&mut line).map_err(|e| format!("{origin}:{}: cannot read: {e}", n + 1))?;
        if read == 0 {
            break;
        }
        n += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        match &cols {
            None => {
                if n != 1 || !is_callgraph_header(text) {
                    return Err(format!("{origin}:{n}: expected a call-graph header line first, with columns {}", expected_columns()));
                }
                cols = Some(Columns::from_header(text, &origin)?);
            }
            Some(c) => {
                let (fields, ts) = split_record(text, c, &origin, n)?;
                f(c, &fields, ts, n)?;
            }
        }
    }
    cols.ok_or_else(|| format!("{origin}: empty file; expected a call-graph header with columns {}", expected_columns()))
}

/// A call as merged from its records.
#[derive(Debug)]
struct Call {
    ts_ms: u64,
    first_line: u64,
    records: u64,
    rpctype: Option<String>,
    src: Option<String>,
    dst: Option<String>,
}

fn known(s: &str) -> Option<String> {
    (!is_placeholder(s)).then(|| s.to_string())
}

/// Read a call-graph CSV (see the module doc) into trace rows.
pub fn read_file(path: &Path, opts: &CallGraphOptions) -> Result<CallGraphTrace, String> {
    let origin = path.display().to_string();
    if !(opts.speedup > 0.0 && opts.speedup.is_finite()) {
        return Err(format!("the trace speed-up must be a positive number, got {}", opts.speedup));
    }
    let sizes = CallSizes::new(opts.median_call_bytes)?;
    // Pass 1: check every line, find the first millisecond.
    let mut stats = CallGraphStats::default();
    let mut first: Option<u64> = None;
    let cols = for_each_record(path, |_, _, ts, _| {
        stats.records += 1;
        first = Some(first.map_or(ts, |f: u64| f.min(ts)));
        Ok(())
    })?;
    let Some(t0) = first else {
        return Err(format!("{origin}: no call records after the header"));
    };
    stats.first_timestamp_ms = t0;
    let by_instance = cols.instances.is_some();
    let window_ns = opts.duration_ns as f64;
    let in_window = |ts: u64| ((ts - t0) as f64) * 1e6 / opts.speedup < window_ns;
    // The last millisecond in the window (t0 is, even for a window shorter than 1 ms).
    let last_ms = t0.saturating_add(((window_ns * opts.speedup / 1e6).ceil() as u64).saturating_sub(1));

    // Pass 2: merge the records of the window and its margin by (traceid, rpcid).
    let mut calls: HashMap<(String, String), Call> = HashMap::new();
    for_each_record(path, |c, f, ts, n| {
        if ts > last_ms.saturating_add(MERGE_MARGIN_MS) {
            return Ok(());
        }
        let (src, dst) = match c.instances {
            Some((u, d)) => (f[u], f[d]),
            None => (f[c.um], f[c.dm]),
        };
        let key = (f[c.traceid].to_string(), f[c.rpcid].to_string());
        match calls.get_mut(&key) {
            None => {
                let call = Call { ts_ms: ts, first_line: n, records: 1, rpctype: known(f[c.rpctype]), src: known(src), dst: known(dst) };
                calls.insert(key, call);
            }
            Some(call) => {
                call.records += 1;
                if ts < call.ts_ms {
                    (call.ts_ms, call.first_line) = (ts, n);
                }
                call.rpctype = call.rpctype.take().or_else(|| known(f[c.rpctype]));
                call.src = call.src.take().or_else(|| known(src));
                call.dst = call.dst.take().or_else(|| known(dst));
            }
        }
        Ok(())
    })?;
    let mut calls: Vec<Call> = calls.into_values().filter(|c| in_window(c.ts_ms)).collect();
    stats.calls = calls.len() as u64;
    stats.window_records = calls.iter().map(|c| c.records).sum();
    stats.duplicate_records = stats.window_records - stats.calls;
    calls.sort_by_key(|c| (c.ts_ms, c.first_line));

    // Keep flows; spread each in its millisecond; number containers by first appearance.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed ^ 0x6361_6c6c);
    let mut kept: Vec<(u64, String, String, u64)> = Vec::new();
    for call in calls {
        let rpctype = call.rpctype.as_deref().unwrap_or("").to_ascii_lowercase();
        if !opts.rpctypes.is_empty() && !opts.rpctypes.contains(&rpctype) {
            *stats.other_rpctype.entry(if rpctype.is_empty() { "(none)".into() } else { rpctype }).or_default() += 1;
            continue;
        }
        let (Some(src), Some(dst)) = (call.src, call.dst) else {
            stats.unknown_end += 1;
            continue;
        };
        if src == dst {
            stats.self_calls += 1;
            continue;
        }
        let offset_ns: f64 = rng.gen_range(0.0..1e6);
        let bytes = sizes.sample(&mut rng);
        let ts_ns = (((call.ts_ms - t0) as f64) * 1e6 + offset_ns) / opts.speedup;
        if ts_ns >= window_ns {
            stats.past_window += 1;
            continue;
        }
        kept.push((ts_ns as u64, src, dst, bytes));
    }
    kept.sort_by_key(|k| k.0);
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut containers: Vec<String> = Vec::new();
    let mut vm = |name: String, containers: &mut Vec<String>| -> Result<u32, String> {
        if let Some(&v) = ids.get(&name) {
            return Ok(v);
        }
        let v = containers.len() as u64;
        if v >= opts.max_vms {
            return Err(format!(
                "{origin}: the prefix names more than {} {} (the network's VMs); shorten the window or use a larger network",
                opts.max_vms,
                if by_instance { "containers" } else { "microservices" }
            ));
        }
        ids.insert(name.clone(), v as u32);
        containers.push(name);
        Ok(v as u32)
    };
    let mut rows = Vec::with_capacity(kept.len());
    for (i, (ts_ns, src, dst, bytes)) in kept.into_iter().enumerate() {
        let src_vm = vm(src, &mut containers)?;
        let dst_vm = vm(dst, &mut containers)?;
        rows.push(TraceRow { src_vm, dst_vm, ts_ns, flow_id: i as u64 + 1, size_bytes: bytes });
    }
    stats.flows = rows.len() as u64;
    stats.containers = containers.len() as u64;
    Ok(CallGraphTrace { rows, containers, by_instance, stats })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn data(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
    }

    fn opts(duration_ms: f64) -> CallGraphOptions {
        CallGraphOptions {
            duration_ns: (duration_ms * 1e6) as u64,
            speedup: 1.0,
            rpctypes: CallGraphOptions::parse_rpctypes(DEFAULT_RPCTYPES).unwrap(),
            max_vms: 409_600,
            median_call_bytes: 1024.0,
            seed: 1,
        }
    }

    /// A file written for one test (removed when dropped).
    struct Temp(PathBuf);
    impl Temp {
        fn new(name: &str, text: &str) -> Temp {
            let p = std::env::temp_dir().join(format!("innet-callgraph-{}-{name}.csv", std::process::id()));
            std::fs::write(&p, text).unwrap();
            Temp(p)
        }
    }
    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    const A: &str = "35114acfb54c54fb";
    const B: &str = "b65fdc9bfef6b497";
    const C: &str = "7695b43b41732a0f";
    const D: &str = "1e5dd1f5843e50b9";

    fn row(src_vm: u32, dst_vm: u32, ts_ns: u64, flow_id: u64, size_bytes: u64) -> TraceRow {
        TraceRow { src_vm, dst_vm, ts_ns, flow_id, size_bytes }
    }

    /// The released layout (leading index column): each RPC/HTTP call once, placeholders, self
    /// calls and mc/db/mq/userDefined left out and counted, the caller of a DM-first call taken
    /// from its UM record a millisecond later, starts spread inside their millisecond.
    #[test]
    fn released_file_gives_these_rows() {
        let t = read_file(&data("mscallgraph_released.csv"), &opts(10.0)).unwrap();
        // VMs in order of first appearance: B, C (T1 0.1.2 starts first), A, D.
        assert_eq!(t.containers, vec![B, C, A, D]);
        assert!(!t.by_instance);
        assert_eq!(
            t.rows,
            vec![
                row(0, 1, 39_138, 1, 212),      // ms 0: T1 0.1.2 B→C
                row(2, 0, 158_588, 2, 493),     // ms 0: T1 0.1 A→B (its DM record at ms 1 merged)
                row(1, 3, 1_448_423, 3, 598),   // ms 1: T3 0.1.1 C→D (caller from the UM record at ms 2)
                row(2, 3, 1_707_455, 4, 1162),  // ms 1: T2 0.1 A→D (http)
                row(1, 3, 2_196_233, 5, 4778),  // ms 2: T4 0.1 C→D
                row(3, 2, 2_583_909, 6, 389),   // ms 2: T4 0.1.4 D→A
                row(0, 2, 4_108_136, 7, 1416),  // ms 4: T5 0.1 B→A
                row(0, 3, 4_118_383, 8, 248),   // ms 4: T1 0.1.3 B→D (http)
                row(2, 1, 4_501_768, 9, 631),   // ms 4: T5 0.1.1 A→C (UM record only)
                row(1, 0, 5_752_049, 10, 227),  // ms 5: T5 0.1.3 C→B
            ]
        );
        let other: BTreeMap<String, u64> = [("db", 2), ("mc", 2), ("mq", 1), ("userdefined", 1)].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(
            t.stats,
            CallGraphStats {
                records: 32,
                first_timestamp_ms: 16_397_576,
                window_records: 32,
                duplicate_records: 11,
                calls: 21,
                other_rpctype: other,
                unknown_end: 4,
                self_calls: 1,
                past_window: 0,
                flows: 10,
                containers: 4,
            }
        );
    }

    /// The README's layout (no index column, interface before dm) gives the same rows.
    #[test]
    fn readme_layout_gives_the_same_rows() {
        let released = read_file(&data("mscallgraph_released.csv"), &opts(10.0)).unwrap();
        let readme = read_file(&data("mscallgraph_readme.csv"), &opts(10.0)).unwrap();
        assert_eq!(readme.rows, released.rows);
        assert_eq!(readme.containers, released.containers);
        assert_eq!(readme.stats, released.stats);
    }

    /// The window is a prefix: a call's start does not depend on the window's length, and starts
    /// past the end are cut inside the last millisecond.
    #[test]
    fn window_is_a_prefix_of_the_same_rows() {
        let full = read_file(&data("mscallgraph_released.csv"), &opts(10.0)).unwrap();
        for ms in [0.1, 1.0, 1.5, 2.0, 4.3, 6.0] {
            let t = read_file(&data("mscallgraph_released.csv"), &opts(ms)).unwrap();
            let want: Vec<TraceRow> = full.rows.iter().copied().filter(|r| (r.ts_ns as f64) < ms * 1e6).collect();
            assert_eq!(t.rows.iter().map(|r| (r.ts_ns, r.size_bytes)).collect::<Vec<_>>(), want.iter().map(|r| (r.ts_ns, r.size_bytes)).collect::<Vec<_>>(), "{ms} ms");
        }
        let t = read_file(&data("mscallgraph_released.csv"), &opts(1.5)).unwrap();
        assert_eq!((t.stats.calls, t.stats.window_records), (11, 17)); // calls of ms 0 and 1, their records
        // T3 0.1.1 (ms 1) takes its caller from its record at ms 2, past the window; T2 0.1
        // starts at 1.707 ms, past 1.5 ms.
        assert_eq!(t.rows.len(), 3);
        assert_eq!(t.stats.past_window, 1);
        let t = read_file(&data("mscallgraph_released.csv"), &opts(2.0)).unwrap();
        assert_eq!((t.rows.len(), t.stats.past_window), (4, 0));
    }

    /// A speed-up of 10 plays ten trace milliseconds in one simulated millisecond.
    #[test]
    fn speedup_compresses_time() {
        let full = read_file(&data("mscallgraph_released.csv"), &opts(10.0)).unwrap();
        let fast = read_file(&data("mscallgraph_released.csv"), &CallGraphOptions { speedup: 10.0, ..opts(1.0) }).unwrap();
        assert_eq!(fast.rows.len(), full.rows.len());
        for (f, s) in full.rows.iter().zip(&fast.rows) {
            assert!(s.ts_ns.abs_diff(f.ts_ns / 10) <= 1, "{f:?} {s:?}");
        }
    }

    #[test]
    fn rpctypes_choose_the_flows() {
        let all = CallGraphOptions { rpctypes: CallGraphOptions::parse_rpctypes("all").unwrap(), ..opts(10.0) };
        let t = read_file(&data("mscallgraph_released.csv"), &all).unwrap();
        assert_eq!((t.rows.len(), t.stats.other_rpctype.len()), (16, 0)); // + 2 mc, 2 db, mq, userDefined
        assert_eq!(t.containers.len(), 6);
        let rpc = CallGraphOptions { rpctypes: CallGraphOptions::parse_rpctypes(" RPC ").unwrap(), ..opts(10.0) };
        let t = read_file(&data("mscallgraph_released.csv"), &rpc).unwrap();
        assert_eq!((t.rows.len(), t.stats.other_rpctype["http"]), (8, 4)); // two with a placeholder caller
        let mc = CallGraphOptions { rpctypes: CallGraphOptions::parse_rpctypes("mc,db").unwrap(), ..opts(10.0) };
        assert_eq!(read_file(&data("mscallgraph_released.csv"), &mc).unwrap().rows.len(), 4);
        assert!(CallGraphOptions::parse_rpctypes(" , ").unwrap_err().contains("rpc,http"));
    }

    /// v2022's layout names containers: they are the VMs; `rpc_id` and float `rt` are accepted.
    #[test]
    fn instance_ids_are_the_vms_when_present() {
        let f = Temp::new(
            "v2022",
            "timestamp,traceid,service,rpc_id,um,uminstanceid,rpctype,interface,dm,dminstanceid,rt\n\
             1000,T_1,S_1,0.1,MS_1,MS_1_POD_0,rpc,i1,MS_2,MS_2_POD_7,2.0\n\
             1000,T_1,S_1,0.1,MS_1,MS_1_POD_0,rpc,i1,MS_2,MS_2_POD_7,-1.0\n\
             1001,T_1,S_1,0.1.1,MS_2,MS_2_POD_7,rpc,i2,MS_2,MS_2_POD_3,1.0\n\
             1001,T_1,S_1,0.1.2,MS_2,MS_2_POD_7,rpc,i2,MS_3,UNKNOWN,1.0\n",
        );
        let t = read_file(&f.0, &opts(2.0)).unwrap();
        assert!(t.by_instance);
        // Two pods of MS_2 are two VMs, so the call between them is a flow.
        assert_eq!(t.containers, vec!["MS_1_POD_0", "MS_2_POD_7", "MS_2_POD_3"]);
        assert_eq!(t.rows.iter().map(|r| (r.src_vm, r.dst_vm)).collect::<Vec<_>>(), vec![(0, 1), (1, 2)]);
        assert_eq!((t.stats.unknown_end, t.stats.duplicate_records), (1, 1));
    }

    #[test]
    fn too_many_containers_is_an_error() {
        let e = read_file(&data("mscallgraph_released.csv"), &CallGraphOptions { max_vms: 3, ..opts(10.0) }).unwrap_err();
        assert!(e.contains("mscallgraph_released.csv") && e.contains("more than 3 microservices"), "{e}");
        assert_eq!(read_file(&data("mscallgraph_released.csv"), &CallGraphOptions { max_vms: 4, ..opts(10.0) }).unwrap().containers.len(), 4);
    }

    #[test]
    fn errors_name_file_line_and_columns() {
        let f = Temp::new("nodm", ",traceid,timestamp,rpcid,um,rpctype,interface,rt\n0,T,1,0.1,a,rpc,i,1\n");
        let e = read_file(&f.0, &opts(1.0)).unwrap_err();
        let name = f.0.display().to_string();
        assert!(e.starts_with(&format!("{name}:1: the call-graph header has no column 'dm'")), "{e}");
        assert!(e.contains("expected columns timestamp, traceid, rpcid (or rpc_id), um, rpctype, dm"), "{e}");

        let f = Temp::new("badts", ",traceid,timestamp,rpcid,um,rpctype,dm,interface,rt\n0,T,5,0.1,a,rpc,b,i,1\n1,T,5ms,0.2,a,rpc,c,i,1\n");
        let e = read_file(&f.0, &opts(1.0)).unwrap_err();
        assert_eq!(e, format!("{}:3: column timestamp must be a whole non-negative number of milliseconds, got '5ms'", f.0.display()));

        let f = Temp::new("short", ",traceid,timestamp,rpcid,um,rpctype,dm,interface,rt\n0,T,5,0.1,a,rpc,b\n");
        let e = read_file(&f.0, &opts(1.0)).unwrap_err();
        assert_eq!(e, format!("{}:2: expected 9 fields as the header names, got 7", f.0.display()));

        let f = Temp::new("noheader", "0,T,5,0.1,a,rpc,b,i,1\n");
        assert!(read_file(&f.0, &opts(1.0)).unwrap_err().contains(":1: expected a call-graph header line first"));
        let f = Temp::new("onlyheader", "timestamp,traceid,rpcid,um,rpctype,dm\n");
        assert!(read_file(&f.0, &opts(1.0)).unwrap_err().ends_with("no call records after the header"));
        let f = Temp::new("oneinst", "timestamp,traceid,rpcid,um,uminstanceid,rpctype,dm\n1,T,0.1,a,a1,rpc,b\n");
        assert!(read_file(&f.0, &opts(1.0)).unwrap_err().contains("only one of uminstanceid and dminstanceid"));
        assert!(read_file(Path::new("/nonexistent/MSCallGraph_0.csv"), &opts(1.0)).unwrap_err().starts_with("/nonexistent/MSCallGraph_0.csv: cannot read"));
    }

    #[test]
    fn headers_and_placeholders() {
        assert!(is_callgraph_header(",traceid,timestamp,rpcid,um,rpctype,dm,interface,rt"));
        assert!(is_callgraph_header("timestamp,traceid,service,rpc_id,um,uminstanceid,rpctype,interface,dm,dminstanceid,rt"));
        assert!(is_callgraph_header("\u{feff}\"TraceID\",\"RPCID\""));
        assert!(!is_callgraph_header("src_vm,dst_vm,ts_ns,flow_id,size_bytes"));
        assert!(!is_callgraph_header("1,2,3,4,5"));
        for p in ["", " ", "NAN", "nan", "(?)", "( ? )", "?", "UNKNOWN", "unknown", "NULL"] {
            assert!(is_placeholder(p), "{p:?}");
        }
        for n in ["35114acfb54c54fb", "MS_2_POD_7", "(a)", "nano"] {
            assert!(!is_placeholder(n), "{n:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_records_never_panic(lines in proptest::collection::vec("[0-9a-z(?),. _-]{0,40}", 0..12)) {
            let text = format!(",traceid,timestamp,rpcid,um,rpctype,dm,interface,rt\n{}", lines.join("\n"));
            let f = Temp::new(&format!("fuzz{}", lines.len()), &text);
            let _ = read_file(&f.0, &opts(3.0));
        }
    }
}
