//! `cargo run --release -p innet-gigaflow --example run_experiment -- NAME [--quick] [k=v ...]`:
//! runs a `gigaflow.*` experiment without the Python front and prints its summary JSON and
//! tables as CSV on stdout (a developer's shortcut; `innet run` is the product's way).
use innet_registry::ColumnData;
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: run_experiment NAME [--quick] [k=v ...]");
        std::process::exit(2)
    };
    let quick = args.iter().any(|a| a == "--quick");
    let sets: BTreeMap<String, String> = args[1..].iter().filter_map(|a| a.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let Some(e) = innet_gigaflow::experiments::experiments().into_iter().find(|e| e.info().name == name) else {
        eprintln!("unknown experiment {name}");
        std::process::exit(2)
    };
    match e.run(&sets, quick, &mut |_| {}) {
        Ok(out) => {
            print!("{}", out.summary_json());
            for t in &out.tables {
                println!("# table {}", t.name);
                println!("{}", t.columns.iter().map(|c| c.0.clone()).collect::<Vec<_>>().join(","));
                for i in 0..t.rows() {
                    let cells: Vec<String> = t
                        .columns
                        .iter()
                        .map(|(_, c)| match c {
                            ColumnData::U64(v) => v[i].to_string(),
                            ColumnData::I64(v) => v[i].to_string(),
                            ColumnData::F64(v) => format!("{:.4}", v[i]),
                            ColumnData::Str(v) => v[i].clone(),
                            ColumnData::Bool(v) => v[i].to_string(),
                        })
                        .collect();
                    println!("{}", cells.join(","));
                }
            }
        }
        Err(err) => {
            eprintln!("{name}: {err}");
            std::process::exit(2)
        }
    }
}
