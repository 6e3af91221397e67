//! `appswitch.throughput` (Fig. 23): packets per second through the application switch program,
//! measured as the paper did (§5.8, "inputting packets from a dump file"): a capture replayed
//! through the program in memory on one core (`innet_switch::real::bench::replay`, the function
//! behind `innet bench switch`), no sockets, no files. Four captures ([`crate::bench_capture`];
//! docs/appswitch.md, "Throughput captures"): one client connection as the switch's ports see it
//! live, CQL v4 (PREPARE, then EXECUTE by int key) or Redis (GET), whose reads all miss (a new key
//! each, more keys than the cache holds: request, answer, client ACK) or all hit (one key, put in
//! the cache by a write first: request and the client's ACK of the switch's reply; the server
//! sees and sends nothing for them). The `forward` program on the CQL miss capture is the
//! runtime's own ceiling.

use std::collections::BTreeMap;

use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, ParamSpec, Progress, RunOutput, Sweep, Table};
use innet_switch::real::bench::{replay, BenchReport};
use innet_switch::real::{builtin_programs, FrameSwitch};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::bench_capture::{capture, Case};

const THROUGHPUT: Declaration = Declaration::new(
    "appswitch.throughput",
    "Fig. 23: packets per second through the application switch program from a capture replay \
     (in memory, one core), CQL and Redis, all-hit and all-miss captures",
    &[&[ParamSpec::new("exchanges", "10000", "request/answer/ACK exchanges per capture"), ParamSpec::new("repeat", "20", "replays of each capture")]],
)
.quick(&[("exchanges", "1000"), ("repeat", "3")]);

/// The project's goal for one core, reported beside the measured rates (docs/results/appswitch.md,
/// "Verdict on the 2M pps goal"; the paper's PC replayed ~180,000-190,000 packets/s, §5.8).
const TARGET_PPS: u64 = 2_000_000;

/// The case that is also replayed through `forward`, and the name of that row.
const FORWARD_ON: Case = Case::CqlMiss;
const FORWARD_ROW: &str = "forward-on-cql-miss";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    exchanges: u32,
    repeat: u32,
}

/// `appswitch.throughput`.
pub struct Throughput;

/// Program `name` of the real runtime (the application switch, or the runtime's `forward`) on
/// two ports with `settings`.
fn program(name: &str, settings: &[(&str, String)]) -> Result<Box<dyn FrameSwitch>, ExperimentError> {
    let spec = crate::switch_programs().into_iter().chain(builtin_programs()).find(|p| p.name == name);
    let spec = spec.ok_or_else(|| ExperimentError::Invariant(format!("no switch program '{name}'")))?;
    let settings = settings.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    spec.instantiate(settings, 2).map_err(|e| ExperimentError::Invariant(format!("{name}: {e}")))
}

/// Counter `key` of the program's report.
fn counter(rep: &BenchReport, key: &str) -> Result<u64, ExperimentError> {
    let v = rep.report.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    v.and_then(|v| v.parse().ok()).ok_or_else(|| ExperimentError::Invariant(format!("the appswitch report has no counter '{key}'")))
}

/// One case's replay as summary.json shows it.
fn case_json(rep: &BenchReport, requests: u64) -> Result<Value, ExperimentError> {
    Ok(json!({
        "switch_pps": rep.frames_per_s, "ns_per_frame": rep.ns_per_frame,
        "frames_in_capture": rep.frames_in_capture, "repeat": rep.repeat, "frames": rep.frames,
        "forwarded": rep.tx_frames - rep.generated, "generated": rep.generated,
        "dropped": rep.dropped, "malformed": rep.malformed,
        "requests": requests, "hits": counter(rep, "hits")?, "misses": counter(rep, "misses")?,
        "protocol_errors": counter(rep, "protocol_errors")?,
    }))
}

impl Experiment for Throughput {
    fn info(&self) -> ExperimentInfo {
        THROUGHPUT.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = THROUGHPUT.resolve(overrides, quick)?;
        for (name, v) in [("exchanges", p.exchanges), ("repeat", p.repeat)] {
            if v < 1 {
                return Err(ExperimentError::bad_param(name, v, "at least 1"));
            }
        }
        let replays = Sweep::over(Case::ALL).run(progress, |&case, _| {
            let frames = capture(case, p.exchanges).frames;
            let settings = [("protocol", case.protocol().to_string()), ("server_port", case.server_port().to_string())];
            let app = replay(program("appswitch", &settings)?.as_mut(), &frames, p.repeat);
            let fwd = if case == FORWARD_ON { Some(replay(program("forward", &[])?.as_mut(), &frames, p.repeat)) } else { None };
            Ok((case, app, fwd))
        })?;
        // Rows in the order measured, `forward` right after the capture it replayed.
        let mut rows: Vec<(&str, &BenchReport, bool)> = Vec::new();
        for (case, app, fwd) in &replays {
            rows.push((case.name(), app, true));
            if let Some(f) = fwd {
                rows.push((FORWARD_ROW, f, false));
            }
        }
        let requests = u64::from(p.exchanges) * u64::from(p.repeat);
        let mut cases = Map::new();
        for &(name, rep, is_app) in &rows {
            let v = if is_app {
                case_json(rep, requests)?
            } else {
                json!({"switch_pps": rep.frames_per_s, "ns_per_frame": rep.ns_per_frame, "frames": rep.frames})
            };
            cases.insert(name.into(), v);
        }
        let app_min = rows.iter().filter(|r| r.2).map(|r| r.1.frames_per_s).fold(f64::INFINITY, f64::min);
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!(THROUGHPUT.name));
        summary.insert("params".into(), json!({"exchanges": p.exchanges, "repeat": p.repeat}));
        summary.insert("switch_pps".into(), json!(app_min));
        summary.insert("switch_pps_by_case".into(), rows.iter().map(|r| (r.0.to_string(), json!(r.1.frames_per_s))).collect::<Map<_, _>>().into());
        summary.insert("target_pps".into(), json!(TARGET_PPS));
        summary.insert("cases".into(), Value::Object(cases));
        // `forward` has no program counters: NaN (a missing value) in its row.
        let app_counter = |key: &str| -> Result<ColumnData, ExperimentError> {
            let v: Result<Vec<f64>, _> = rows.iter().map(|r| if r.2 { counter(r.1, key).map(|c| c as f64) } else { Ok(f64::NAN) }).collect();
            Ok(ColumnData::F64(v?))
        };
        let table = Table::new("cases")
            .with("case", ColumnData::Str(rows.iter().map(|r| r.0.to_string()).collect()))
            .with("switch_pps", ColumnData::F64(rows.iter().map(|r| r.1.frames_per_s).collect()))
            .with("ns_per_frame", ColumnData::F64(rows.iter().map(|r| r.1.ns_per_frame).collect()))
            .with("frames", ColumnData::U64(rows.iter().map(|r| r.1.frames).collect()))
            .with("hits", app_counter("hits")?)
            .with("misses", app_counter("misses")?);
        Ok(RunOutput { summary, tables: vec![table] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(set: &[(&str, &str)]) -> Result<RunOutput, ExperimentError> {
        let overrides = set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Throughput.run(&overrides, true, &mut |_| {})
    }

    #[test]
    fn every_case_is_replayed_and_accounted_for() {
        // More keys than the 64-entry cache holds, so a miss capture misses in every replay.
        let out = run(&[("exchanges", "100"), ("repeat", "2")]).unwrap();
        let s = &out.summary;
        let cases = s["cases"].as_object().unwrap();
        let names: Vec<&str> = cases.keys().map(String::as_str).collect();
        assert_eq!(names, ["cql-hit", "cql-miss", FORWARD_ROW, "redis-hit", "redis-miss"]);
        assert_eq!(s["params"], json!({"exchanges": 100, "repeat": 2}));
        for (name, c) in cases {
            assert_eq!(s["switch_pps_by_case"][name], c["switch_pps"], "{name}");
            if name == FORWARD_ROW {
                assert_eq!(c["frames"], cases["cql-miss"]["frames"]);
                continue;
            }
            let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{name}: {k}"));
            assert_eq!(n("frames"), n("frames_in_capture") * 2, "{name}");
            assert_eq!(n("forwarded") + n("dropped") + n("malformed"), n("frames"), "{name}");
            assert_eq!(n("hits") + n("misses"), 200, "{name}");
            assert_eq!(n("protocol_errors"), 0, "{name}");
            // A hit capture is answered by the switch (all but CQL's one learning miss per replay).
            let hits = if name.ends_with("-hit") { if name.starts_with("cql") { 198 } else { 200 } } else { 0 };
            assert_eq!(n("hits"), hits, "{name}");
        }
        let min = ["cql-hit", "cql-miss", "redis-hit", "redis-miss"].map(|k| cases[k]["switch_pps"].as_f64().unwrap()).into_iter().fold(f64::INFINITY, f64::min);
        assert_eq!(s["switch_pps"].as_f64(), Some(min));
        let t = &out.tables[0];
        assert_eq!((t.name.as_str(), t.rows()), ("cases", 5));
        let Some((_, ColumnData::F64(hits))) = t.columns.iter().find(|c| c.0 == "hits") else { panic!("hits column") };
        assert!(hits[2].is_nan() && hits[0] == 198.0, "{hits:?}");
    }

    #[test]
    fn zero_exchanges_or_replays_name_the_parameter() {
        let e = run(&[("repeat", "0")]).err().unwrap().to_string();
        assert_eq!(e, "parameter 'repeat': expected at least 1, got '0'");
        let e = run(&[("exchanges", "0")]).err().unwrap().to_string();
        assert!(e.starts_with("parameter 'exchanges'"), "{e}");
    }
}
