//! Runs this crate's experiments the way `innet run` does, with the same registry types:
//!
//! ```text
//! cargo run --release -p v2p-twoway -- list
//! cargo run --release -p v2p-twoway -- run example.v2p_twoway [--quick] [--set k=v]... [--out DIR]
//! ```
//!
//! `run` prints the summary and, with `--out`, writes `DIR/summary.json` (tables stay in memory:
//! the Parquet writer is the Python front's).

use std::collections::BTreeMap;
use std::process::ExitCode;

use innet_registry::{find, ExperimentError};

fn main() -> ExitCode {
    match cli(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        // As `innet`: bad input exits 2, a broken invariant 1.
        Err(e) => {
            eprintln!("v2p-twoway: {e}");
            ExitCode::from(if matches!(e, ExperimentError::Invariant(_)) { 1 } else { 2 })
        }
    }
}

fn cli(args: Vec<String>) -> Result<(), ExperimentError> {
    let usage = || ExperimentError::Input("usage: v2p-twoway list | run NAME [--quick] [--set k=v]... [--out DIR]".into());
    match args.first().map(String::as_str) {
        Some("list") => {
            for e in v2p_twoway::experiments() {
                let info = e.info();
                println!("{}: {}", info.name, info.description);
                for p in info.params {
                    println!("    {} = {}    {}", p.name, p.default, p.doc);
                }
            }
            Ok(())
        }
        Some("run") => {
            let name = args.get(1).ok_or_else(usage)?;
            let (mut quick, mut overrides, mut out) = (false, BTreeMap::new(), None);
            let mut rest = args[2..].iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--quick" => quick = true,
                    "--set" => {
                        let kv = rest.next().ok_or_else(usage)?;
                        let (k, v) = kv.split_once('=').ok_or_else(|| ExperimentError::Input(format!("--set {kv}: expected name=value")))?;
                        overrides.insert(k.trim().to_string(), v.trim().to_string());
                    }
                    "--out" => out = Some(rest.next().ok_or_else(usage)?.clone()),
                    _ => return Err(usage()),
                }
            }
            let experiment = find(v2p_twoway::experiments(), name)?;
            // Progress on stderr, in whole percent.
            let mut shown = -1i32;
            let output = experiment.run(&overrides, quick, &mut |f| {
                let pct = (f * 100.0) as i32;
                if pct != shown {
                    shown = pct;
                    eprint!("\r{name}: {pct:3}%");
                }
            })?;
            eprintln!();
            let text = output.summary_json();
            print!("{text}");
            if let Some(dir) = out {
                let path = std::path::Path::new(&dir).join("summary.json");
                std::fs::create_dir_all(&dir)
                    .and_then(|()| std::fs::write(&path, &text))
                    .map_err(|e| ExperimentError::Input(format!("{}: {e}", path.display())))?;
                eprintln!("wrote {}", path.display());
            }
            Ok(())
        }
        _ => Err(usage()),
    }
}
