//! Run one SwitchV2P experiment from the command line and print its summary:
//! `cargo run --release -p innet-switchv2p --example v2p_run -- switchv2p.cachesize [--quick] [--tables] [k=v ...]`
//! (`--tables` prints the result tables after the summary, one JSON object per line).
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: v2p_run EXPERIMENT [--quick] [key=value ...]");
        std::process::exit(2);
    };
    let quick = args.iter().any(|a| a == "--quick");
    let mut overrides = BTreeMap::new();
    for a in args.iter().skip(1).filter(|a| a.contains('=')) {
        let (k, v) = a.split_once('=').expect("checked");
        overrides.insert(k.to_string(), v.to_string());
    }
    let Some(exp) = innet_switchv2p::experiments().into_iter().find(|e| e.info().name == name) else {
        eprintln!("unknown experiment {name}");
        std::process::exit(2);
    };
    let t = std::time::Instant::now();
    match exp.run(&overrides, quick, &mut |_| {}) {
        Ok(out) => {
            println!("{}", out.summary_json());
            if args.iter().any(|a| a == "--tables") {
                for t in &out.tables {
                    println!("{}", table_json(t));
                }
            }
            eprintln!("wall time: {:.2} s", t.elapsed().as_secs_f64());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// One table as `{"table": name, column: [values...], ...}`.
fn table_json(t: &innet_registry::Table) -> serde_json::Value {
    use innet_registry::ColumnData;
    let mut m = serde_json::Map::new();
    m.insert("table".into(), t.name.clone().into());
    for (name, c) in &t.columns {
        let v: serde_json::Value = match c {
            ColumnData::U64(v) => v.clone().into(),
            ColumnData::I64(v) => v.clone().into(),
            ColumnData::F64(v) => v.clone().into(),
            ColumnData::Str(v) => v.clone().into(),
            ColumnData::Bool(v) => v.clone().into(),
        };
        m.insert(name.clone(), v);
    }
    serde_json::Value::Object(m)
}
