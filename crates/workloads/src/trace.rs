//! Trace files of tenant flows in the SwitchV2P artifact's CSV format:
//! `src_vm,dst_vm,ts_ns,flow_id,size_bytes`, one flow per row, an optional header row.

use std::path::Path;

/// One row of a VM-level trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRow {
    pub src_vm: u32,
    pub dst_vm: u32,
    pub ts_ns: u64,
    pub flow_id: u64,
    pub size_bytes: u64,
}

/// Parse a trace; errors name `origin:line` and the column.
pub fn parse(text: &str, origin: &str) -> Result<Vec<TraceRow>, String> {
    const COLS: [&str; 5] = ["src_vm", "dst_vm", "ts_ns", "flow_id", "size_bytes"];
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if n == 1 && fields.first().is_some_and(|f| f.parse::<u64>().is_err()) {
            continue; // header row
        }
        if fields.len() != 5 {
            return Err(format!("{origin}:{n}: expected 5 columns ({}), got {}", COLS.join(","), fields.len()));
        }
        let mut v = [0u64; 5];
        for (k, f) in fields.iter().enumerate() {
            v[k] = f.parse().map_err(|_| format!("{origin}:{n}: column {} must be a non-negative integer, got '{f}'", COLS[k]))?;
        }
        for (k, &x) in v[..2].iter().enumerate() {
            if x > u32::MAX as u64 {
                return Err(format!("{origin}:{n}: {} {x} is too large", COLS[k]));
            }
        }
        rows.push(TraceRow { src_vm: v[0] as u32, dst_vm: v[1] as u32, ts_ns: v[2], flow_id: v[3], size_bytes: v[4] });
    }
    Ok(rows)
}

/// Rows as CSV, one per line and no header: the artifact's reader (`TraceSimulation::ParseTrace`)
/// takes every line as data, and [`parse`] reads it back.
pub fn to_csv(rows: &[TraceRow]) -> String {
    let mut out = String::with_capacity(rows.len() * 32);
    for r in rows {
        out.push_str(&format!("{},{},{},{},{}\n", r.src_vm, r.dst_vm, r.ts_ns, r.flow_id, r.size_bytes));
    }
    out
}

pub fn read_file(path: &Path) -> Result<Vec<TraceRow>, String> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: cannot read: {e}"))?;
    parse(&text, &origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_and_without_header() {
        let rows = parse("srcVM,dstVM,ts_ns,flowId,size\n1,2,30,4,500\n", "t").unwrap();
        assert_eq!(rows, vec![TraceRow { src_vm: 1, dst_vm: 2, ts_ns: 30, flow_id: 4, size_bytes: 500 }]);
        assert_eq!(parse("1,2,30,4,500", "t").unwrap().len(), 1);
    }

    #[test]
    fn errors_name_line_and_column() {
        assert_eq!(parse("1,2,30,4,5\n1,2,x,4,5", "t").unwrap_err(), "t:2: column ts_ns must be a non-negative integer, got 'x'");
        assert!(parse("1,2,3", "t").unwrap_err().starts_with("t:1: expected 5 columns"));
        assert_eq!(parse("1,4294967296,3,4,5", "t").unwrap_err(), "t:1: dst_vm 4294967296 is too large");
        // Only the first line may be a header.
        assert!(parse("1,2,3,4,5\nsrc,dst,ts,id,size", "t").unwrap_err().starts_with("t:2: column src_vm"));
        let missing = read_file(Path::new("/nonexistent/trace.csv")).unwrap_err();
        assert!(missing.starts_with("/nonexistent/trace.csv: cannot read"), "{missing}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = parse(&s, "fuzz");
        }

        #[test]
        fn rows_round_trip(rows in proptest::collection::vec(
            (proptest::prelude::any::<u32>(), proptest::prelude::any::<u32>(), proptest::prelude::any::<u64>(),
             proptest::prelude::any::<u64>(), proptest::prelude::any::<u64>()), 0..30)) {
            let text: String = rows.iter().map(|r| format!("{},{},{},{},{}\n", r.0, r.1, r.2, r.3, r.4)).collect();
            let want: Vec<TraceRow> = rows.iter()
                .map(|r| TraceRow { src_vm: r.0, dst_vm: r.1, ts_ns: r.2, flow_id: r.3, size_bytes: r.4 })
                .collect();
            proptest::prop_assert_eq!(to_csv(&want), text.clone());
            proptest::prop_assert_eq!(parse(&text, "rt").unwrap(), want);
        }
    }
}
