//! htsim's connection-matrix flow lists, so one list drives innet, ns-3 and htsim:
//!
//! ```text
//! Nodes 128
//! Connections 2
//! 0->17 id 1 start 0 size 1000000
//! 5->3 id 2 start 1500000 size 20000
//! ```
//!
//! Accepted as htsim's own loader (csg-htsim `ConnectionMatrix::load`) accepts them: `#` comment
//! lines; header lines `Nodes`, `Connections`, `Triggers 0`, `Failures 0`; flow attributes in any
//! order: `start` in picoseconds (htsim reads it as a float, so `1.5e6` is accepted and rounded),
//! `size`, an optional non-zero `id` (flows without one get ids after the largest given), `prio`
//! (read, not kept). Triggered flows and failures (`trigger`, `send_done_trigger`,
//! `recv_done_trigger`, `failure` lines, non-zero `Triggers`/`Failures`) are rejected with a
//! message rather than silently ignored.

use std::fmt::Write as _;

use crate::Flow;

/// A parsed connection matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionMatrix {
    pub nodes: u32,
    /// Flows in file order; `Flow::id` is the file's `id`.
    pub flows: Vec<Flow>,
}

/// Where and what went wrong in a flow list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}: {message}")]
pub struct ParseError {
    pub origin: String,
    /// 1-based; 0 when the problem is the file as a whole (unreadable, no `Nodes` line).
    pub line: usize,
    pub message: String,
}

fn err(origin: &str, line: usize, message: impl Into<String>) -> ParseError {
    ParseError { origin: origin.to_string(), line, message: message.into() }
}

fn number<T: std::str::FromStr>(origin: &str, line: usize, what: &str, tok: Option<&str>) -> Result<T, ParseError> {
    let tok = tok.ok_or_else(|| err(origin, line, format!("expected a value after '{what}'")))?;
    tok.parse().map_err(|_| err(origin, line, format!("'{what}' must be a non-negative integer, got '{tok}'")))
}

/// A start time: an integer number of picoseconds, or (as htsim's float parse allows) a
/// non-negative decimal such as `1.5e6`, rounded to the picosecond.
fn start_ps(origin: &str, line: usize, tok: Option<&str>) -> Result<u64, ParseError> {
    let tok = tok.ok_or_else(|| err(origin, line, "expected a value after 'start'"))?;
    if let Ok(v) = tok.parse::<u64>() {
        return Ok(v);
    }
    match tok.parse::<f64>() {
        // Below 2^64 ps (~213 days); larger values are not a simulation anyone runs.
        Ok(v) if (0.0..1.8e19).contains(&v) => Ok(v.round() as u64),
        _ => Err(err(origin, line, format!("'start' must be a non-negative time in picoseconds, got '{tok}'"))),
    }
}

/// Parse a connection matrix; `origin` names the source (a file name) in errors.
pub fn parse(text: &str, origin: &str) -> Result<ConnectionMatrix, ParseError> {
    let mut nodes: Option<u32> = None;
    let mut declared: Option<(usize, u64)> = None;
    // Flows as read, with `None` for a missing id (filled in at the end).
    let mut read: Vec<(Option<u64>, Flow)> = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let mut toks = raw.split_whitespace();
        let Some(first) = toks.next() else { continue };
        if first.starts_with('#') {
            continue;
        }
        match first {
            "Nodes" => {
                if nodes.is_some() {
                    return Err(err(origin, n, "'Nodes' given twice"));
                }
                nodes = Some(number(origin, n, "Nodes", toks.next())?);
            }
            "Connections" => {
                if declared.is_some() {
                    return Err(err(origin, n, "'Connections' given twice"));
                }
                declared = Some((n, number(origin, n, "Connections", toks.next())?));
            }
            "Triggers" | "Failures" => {
                let count: u64 = number(origin, n, first, toks.next())?;
                if count != 0 {
                    return Err(err(origin, n, format!("'{first} {count}': triggers and failures are not supported; only timed flows")));
                }
            }
            "trigger" | "failure" => {
                return Err(err(origin, n, format!("'{first}' lines are not supported; only timed flows")));
            }
            _ => {
                let Some((s, d)) = first.split_once("->") else {
                    return Err(err(
                        origin,
                        n,
                        format!("expected 'Nodes N', 'Connections M' or 'SRC->DST id ID start PS size BYTES', got '{}'", raw.trim()),
                    ));
                };
                let Some(nodes) = nodes else {
                    return Err(err(origin, n, "a flow appears before the 'Nodes N' line"));
                };
                let src: u32 = number(origin, n, "source", Some(s))?;
                let dst: u32 = number(origin, n, "destination", Some(d))?;
                for (what, v) in [("source", src), ("destination", dst)] {
                    if v >= nodes {
                        return Err(err(origin, n, format!("{what} {v} is not a node (Nodes {nodes})")));
                    }
                }
                if src == dst {
                    return Err(err(origin, n, format!("source and destination are both {src}")));
                }
                let (mut id, mut start, mut size) = (None, None, None);
                while let Some(key) = toks.next() {
                    match key {
                        "id" => {
                            let v: u64 = number(origin, n, "id", toks.next())?;
                            if v == 0 {
                                return Err(err(origin, n, "flow id 0 is not allowed (htsim reserves it for 'no id')"));
                            }
                            id = Some(v);
                        }
                        "start" => start = Some(start_ps(origin, n, toks.next())?),
                        "size" => size = Some(number::<u64>(origin, n, "size", toks.next())?),
                        "prio" => {
                            let _: u64 = number(origin, n, "prio", toks.next())?;
                        }
                        "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                            return Err(err(origin, n, format!("'{key}': triggered flows are not supported; give a 'start' time")))
                        }
                        other => {
                            return Err(err(origin, n, format!("unknown flow attribute '{other}' (expected id, start, size, prio)")))
                        }
                    }
                }
                let start_ps = start.ok_or_else(|| err(origin, n, "missing 'start PS'"))?;
                let size_bytes = size.ok_or_else(|| err(origin, n, "missing 'size BYTES'"))?;
                if size_bytes == 0 {
                    return Err(err(origin, n, "'size' must be at least 1 byte"));
                }
                if let Some(id) = id {
                    if !ids.insert(id) {
                        return Err(err(origin, n, format!("flow id {id} is used twice")));
                    }
                }
                read.push((id, Flow { id: id.unwrap_or(0), src, dst, start_ps, size_bytes }));
            }
        }
    }
    let nodes = nodes.ok_or_else(|| err(origin, 0, "missing the 'Nodes N' line"))?;
    if let Some((line, m)) = declared {
        if m != read.len() as u64 {
            return Err(err(origin, line, format!("'Connections {m}' but {} flows follow", read.len())));
        }
    }
    // Flows without an id are numbered after the largest explicit one, so ids stay unique.
    let mut next = ids.iter().copied().max().unwrap_or(0);
    let mut flows = Vec::with_capacity(read.len());
    for (id, mut f) in read {
        if id.is_none() {
            next = next
                .checked_add(1)
                .ok_or_else(|| err(origin, 0, "no flow id is left for a flow without 'id' (ids reach 2^64-1)"))?;
            f.id = next;
        }
        flows.push(f);
    }
    Ok(ConnectionMatrix { nodes, flows })
}

/// Read a connection-matrix file.
pub fn read_file(path: &std::path::Path) -> Result<ConnectionMatrix, ParseError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| err(&origin, 0, format!("cannot read: {e}")))?;
    parse(&text, &origin)
}

/// Write flows as a connection matrix.
pub fn write(nodes: u32, flows: &[Flow]) -> String {
    let mut s = String::with_capacity(40 * flows.len() + 32);
    let _ = writeln!(s, "Nodes {nodes}");
    let _ = writeln!(s, "Connections {}", flows.len());
    for f in flows {
        let _ = writeln!(s, "{}->{} id {} start {} size {}", f.src, f.dst, f.id, f.start_ps, f.size_bytes);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_what_it_writes() {
        let flows = vec![
            Flow { id: 1, src: 0, dst: 17, start_ps: 0, size_bytes: 1_000_000 },
            Flow { id: 2, src: 5, dst: 3, start_ps: 1_500_000, size_bytes: 20_000 },
        ];
        let text = write(128, &flows);
        assert_eq!(text, "Nodes 128\nConnections 2\n0->17 id 1 start 0 size 1000000\n5->3 id 2 start 1500000 size 20000\n");
        assert_eq!(parse(&text, "t").unwrap(), ConnectionMatrix { nodes: 128, flows });
    }

    #[test]
    fn accepts_htsim_token_forms() {
        let text = "# a comment\nNodes 4\nConnections 3\nTriggers 0\nFailures 0\n\
                    1->2 size 500 start 1.5e3 prio 7\n2->3 id 9 start 0 size 1\n3->0 start 12 size 2\n";
        let m = parse(text, "t").unwrap();
        let got: Vec<_> = m.flows.iter().map(|f| (f.id, f.src, f.dst, f.start_ps, f.size_bytes)).collect();
        // Id-less flows are numbered after the largest given id (9).
        assert_eq!(got, vec![(10, 1, 2, 1500, 500), (9, 2, 3, 0, 1), (11, 3, 0, 12, 2)]);
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let cases = [
            ("Nodes 4\n0->9 id 1 start 0 size 5\n", "t:2: destination 9 is not a node"),
            ("Nodes 4\n0->1 id 1 start x size 5\n", "t:2: 'start' must be"),
            ("Nodes 4\n0->1 id 1 start -3 size 5\n", "t:2: 'start' must be"),
            ("Nodes 4\n0->1 id 1 size 5\n", "t:2: missing 'start PS'"),
            ("Nodes 4\n0->1 id 1 start 0\n", "t:2: missing 'size BYTES'"),
            ("Nodes 4\n0->1 id 1 start 0 size 0\n", "t:2: 'size' must be at least 1 byte"),
            ("Nodes 4\n0->1 id 0 start 0 size 5\n", "t:2: flow id 0 is not allowed"),
            ("Nodes 4\n0->0 id 1 start 0 size 5\n", "t:2: source and destination are both 0"),
            ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 5\n", "t:2: 'Connections 2' but 1 flows"),
            ("Nodes 4\n0->1 id 1 start 0 size 5 trigger 3\n", "t:2: 'trigger'"),
            ("Nodes 4\nTriggers 1\n", "t:2: 'Triggers 1'"),
            ("Nodes 4\nfailure switch_type TOR\n", "t:2: 'failure' lines"),
            ("Nodes 4\n0->1 id 1 start 0 size 5 colour red\n", "t:2: unknown flow attribute 'colour'"),
            ("Nodes 4\n0->1 id 1 start 0 size\n", "t:2: expected a value after 'size'"),
            ("0->1 id 1 start 0 size 5\n", "t:1: a flow appears before"),
            ("Nodes 4\n0->1 id 1 start 0 size 5\n2->3 id 1 start 0 size 5\n", "t:3: flow id 1 is used twice"),
            ("Nodes 4\nhello\n", "t:2: expected 'Nodes N'"),
            ("Nodes 4\nNodes 5\n", "t:2: 'Nodes' given twice"),
            ("Connections 0\n", "t:0: missing the 'Nodes N' line"),
            ("Nodes 4\n0->1 id 18446744073709551615 start 0 size 5\n1->2 start 0 size 5\n", "t:0: no flow id is left"),
        ];
        for (text, want) in cases {
            let e = parse(text, "t").unwrap_err().to_string();
            assert!(e.starts_with(want), "{e:?} should start with {want:?}");
        }
    }

    #[test]
    fn read_file_names_the_file() {
        let dir = std::env::temp_dir().join(format!("innet-workloads-htsim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.htsim");
        std::fs::write(&path, "Nodes 2\n0->1 id 1 start 0 size nope\n").unwrap();
        let e = read_file(&path).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2: 'size'", path.display())), "{e}");
        let missing = read_file(&dir.join("missing.htsim")).unwrap_err().to_string();
        assert!(missing.contains("missing.htsim:0: cannot read"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = parse(&s, "fuzz");
        }

        #[test]
        fn round_trips_any_flow_list(nodes in 2u32..10_000, raw in proptest::collection::vec(
            (any::<u32>(), any::<u32>(), any::<u64>(), 1u64..u64::MAX), 0..40)) {
            let flows: Vec<Flow> = raw.iter().enumerate().map(|(i, &(s, d, start_ps, size_bytes))| {
                let src = s % nodes;
                let dst = (src + 1 + d % (nodes - 1)) % nodes;
                Flow { id: i as u64 + 1, src, dst, start_ps, size_bytes }
            }).collect();
            let m = parse(&write(nodes, &flows), "rt").unwrap();
            prop_assert_eq!(m, ConnectionMatrix { nodes, flows });
        }

        #[test]
        fn structured_garbage_never_panics(lines in proptest::collection::vec(
            prop_oneof![
                Just("Nodes 8".to_string()),
                "[0-9]{1,3}->[0-9]{1,3}( (id|start|size|prio|trigger) [0-9xe.+-]{0,25}){0,5}",
                "(Triggers|Failures|Nodes) [0-9]{0,3}",
                "Connections [0-9]{0,3}",
            ], 0..10)) {
            let _ = parse(&lines.join("\n"), "fuzz");
        }
    }
}
