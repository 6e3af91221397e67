//! htsim's connection-matrix flow lists, so one list drives innet, ns-3 and htsim:
//!
//! ```text
//! Nodes 128
//! Connections 2
//! 0->17 id 1 start 0 size 1000000
//! 5->3 id 2 start 1500000 size 20000
//! ```
//!
//! `start` is in picoseconds (htsim's native time unit). Triggered flows (`trigger`,
//! `send_done_trigger`, `recv_done_trigger`, `Triggers`, `Grp`) are not supported and are
//! rejected with a message rather than silently ignored.

use std::fmt::Write as _;
use std::path::Path;

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

/// Parse a connection matrix; `origin` names the source (a file name) in errors.
pub fn parse(text: &str, origin: &str) -> Result<ConnectionMatrix, ParseError> {
    let mut nodes: Option<u32> = None;
    let mut declared: Option<(usize, u64)> = None;
    let mut flows = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut toks = line.split_whitespace();
        let first = toks.next().expect("non-empty line");
        match first {
            "Nodes" => {
                if nodes.is_some() {
                    return Err(err(origin, n, "'Nodes' given twice"));
                }
                nodes = Some(number(origin, n, "Nodes", toks.next())?);
            }
            "Connections" => {
                declared = Some((n, number(origin, n, "Connections", toks.next())?));
            }
            "Triggers" | "Grp" | "trigger" | "Failures" | "failed" => {
                return Err(err(origin, n, format!("'{first}' (triggered flows, groups, failures) is not supported; only timed flows")));
            }
            _ => {
                let Some((s, d)) = first.split_once("->") else {
                    return Err(err(
                        origin,
                        n,
                        format!("expected 'Nodes N', 'Connections M' or 'SRC->DST id ID start PS size BYTES', got '{line}'"),
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
                        "id" => id = Some(number::<u64>(origin, n, "id", toks.next())?),
                        "start" => start = Some(number::<u64>(origin, n, "start", toks.next())?),
                        "size" => size = Some(number::<u64>(origin, n, "size", toks.next())?),
                        "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                            return Err(err(origin, n, format!("'{key}': triggered flows are not supported; give a 'start' time")))
                        }
                        "priority" => {
                            let _: u64 = number(origin, n, "priority", toks.next())?;
                        }
                        other => return Err(err(origin, n, format!("unknown flow attribute '{other}' (expected id, start, size)"))),
                    }
                }
                let id = id.ok_or_else(|| err(origin, n, "missing 'id ID'"))?;
                let start_ps = start.ok_or_else(|| err(origin, n, "missing 'start PS'"))?;
                let size_bytes = size.ok_or_else(|| err(origin, n, "missing 'size BYTES'"))?;
                if size_bytes == 0 {
                    return Err(err(origin, n, "'size' must be at least 1 byte"));
                }
                if !ids.insert(id) {
                    return Err(err(origin, n, format!("flow id {id} is used twice")));
                }
                flows.push(Flow { id, src, dst, start_ps, size_bytes });
            }
        }
    }
    let nodes = nodes.ok_or_else(|| err(origin, 1, "missing the 'Nodes N' line"))?;
    if let Some((line, m)) = declared {
        if m != flows.len() as u64 {
            return Err(err(origin, line, format!("'Connections {m}' but {} flows follow", flows.len())));
        }
    }
    Ok(ConnectionMatrix { nodes, flows })
}

/// Read a connection-matrix file.
pub fn read_file(path: &Path) -> Result<ConnectionMatrix, ParseError> {
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
        assert_eq!(parse(&text, "t").unwrap(), ConnectionMatrix { nodes: 128, flows });
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let cases = [
            ("Nodes 4\n0->9 id 1 start 0 size 5\n", "t:2: destination 9 is not a node"),
            ("Nodes 4\n0->1 id 1 start x size 5\n", "t:2: 'start' must be"),
            ("Nodes 4\n0->1 id 1 size 5\n", "t:2: missing 'start PS'"),
            ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 5\n", "t:2: 'Connections 2' but 1 flows"),
            ("Nodes 4\n0->1 id 1 start 0 size 5 trigger 3\n", "t:2: 'trigger'"),
            ("0->1 id 1 start 0 size 5\n", "t:1: a flow appears before"),
            ("Nodes 4\n0->1 id 1 start 0 size 5\n2->3 id 1 start 0 size 5\n", "t:3: flow id 1 is used twice"),
            ("Nodes 4\nhello\n", "t:2: expected 'Nodes N'"),
        ];
        for (text, want) in cases {
            let e = parse(text, "t").unwrap_err().to_string();
            assert!(e.starts_with(want), "{e:?} should start with {want:?}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = parse(&s, "fuzz");
        }

        #[test]
        fn structured_garbage_never_panics(lines in proptest::collection::vec(
            prop_oneof![
                Just("Nodes 8".to_string()),
                "[0-9]{1,3}->[0-9]{1,3}( (id|start|size|priority) [0-9x]{0,25}){0,5}",
                "Connections [0-9]{0,3}",
            ], 0..10)) {
            let _ = parse(&lines.join("\n"), "fuzz");
        }
    }
}
