//! `example.v2p_twoway`: SwitchV2P with two-way caches against its direct-mapped cache and the
//! baselines, over cache sizes, on the same trace and network as the paper's experiments.

use std::collections::BTreeMap;

use innet_registry::{ColumnData, Declaration, Experiment, ExperimentError, ExperimentInfo, ParamSpec, Progress, RunOutput, Sweep};
use innet_sim::report::round6;
use innet_switchv2p::experiments::{header, metrics, points_table, Params, TRACE_PARAMS};
use innet_switchv2p::run::{run_scheme, SchemeResult};
use innet_switchv2p::Scheme;
use serde_json::{json, Map, Value};

use crate::SWITCHV2P_2WAY;

/// This experiment's own parameters (the trace, network and transport ones are SwitchV2P's).
const OWN: &[ParamSpec] = &[
    ParamSpec::new(
        "schemes",
        "\"nocache,locallearning,gwcache,switchv2p,switchv2p_2way\"",
        "schemes to compare: the built-in ones and switchv2p_2way (NoCache is always run, as the baseline)",
    ),
    ParamSpec::new("cache_fractions", "\"0.05,0.5\"", "total cache sizes as fractions of the VM address space"),
];

pub const DECLARATION: Declaration = Declaration::new(
    "example.v2p_twoway",
    "SwitchV2P with two-way skewed-associative caches against its direct-mapped cache and the baselines, over cache sizes",
    &[TRACE_PARAMS, OWN],
)
.quick(&[("duration_ms", "0.6"), ("stop_ms", "200.0")]);

pub struct TwoWayComparison;

impl Experiment for TwoWayComparison {
    fn info(&self) -> ExperimentInfo {
        DECLARATION.info()
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        let p: Params = DECLARATION.resolve(overrides, quick)?;
        let fractions = p.cache_fractions.non_empty("cache_fractions")?;
        if let Some(f) = fractions.iter().find(|f| !(f.is_finite() && **f > 0.0)) {
            return Err(ExperimentError::bad_param("cache_fractions", f, "positive fractions"));
        }
        let schemes = Scheme::parse_list_with("schemes", &p.schemes, &[Scheme::Custom(&SWITCHV2P_2WAY)])?;
        let spec = p.spec(p.net())?;
        // NoCache once (it has no cache), then every other scheme at every size.
        let mut sweep = Sweep::over(schemes.into_iter().filter(|&s| s != Scheme::NoCache)).by(&fractions);
        sweep.points.insert(0, (Scheme::NoCache, 0.0));
        let results = sweep.run(progress, |&(scheme, fraction), prog| {
            let mut spec = spec.clone();
            spec.cache_fraction = fraction;
            run_scheme(&spec, scheme, prog)
        })?;
        Ok(output(&p, &sweep.points, &results))
    }
}

/// The summary: every scheme's metrics per cache size (improvements over NoCache), and the
/// two-way cache against the direct-mapped one where both ran; one table row per run.
fn output(p: &Params, points: &[(Scheme, f64)], results: &[SchemeResult]) -> RunOutput {
    let base = &results[0];
    let mut by_scheme = Map::new();
    let mut rows = Vec::new();
    for (&(scheme, fraction), r) in points.iter().zip(results) {
        let m = metrics(r, Some(base));
        let e = by_scheme.entry(scheme.name()).or_insert_with(|| json!({}));
        e.as_object_mut().expect("an object").insert(fraction.to_string(), Value::Object(m.clone()));
        rows.push(m);
    }
    let at = |s: Scheme, f: f64| points.iter().zip(results).find(|(pt, _)| **pt == (s, f)).map(|(_, r)| r);
    let mut vs = Map::new();
    for &(scheme, fraction) in points {
        if scheme != Scheme::Custom(&SWITCHV2P_2WAY) {
            continue;
        }
        if let (Some(two), Some(one)) = (at(scheme, fraction), at(Scheme::SwitchV2P, fraction)) {
            let ratio = |a: f64, b: f64| if b > 0.0 { round6(a / b) } else { 0.0 };
            vs.insert(
                fraction.to_string(),
                json!({
                    "gateway_packets_ratio": ratio(two.stats.gateway_packets as f64, one.stats.gateway_packets as f64),
                    "fct_mean_ratio": ratio(two.fct_mean_us, one.fct_mean_us),
                    "fpl_mean_ratio": ratio(two.fpl_mean_us, one.fpl_mean_us),
                }),
            );
        }
    }
    let mut s = header(DECLARATION.name, p);
    s.insert("cache_fractions".into(), json!(p.cache_fractions.0));
    s.insert("schemes".into(), Value::Object(by_scheme));
    s.insert("switchv2p_2way_vs_switchv2p".into(), Value::Object(vs));
    let table = points_table(
        "points",
        vec![
            ("scheme", ColumnData::Str(points.iter().map(|pt| pt.0.name().to_string()).collect())),
            ("cache_fraction", ColumnData::F64(points.iter().map(|pt| pt.1).collect())),
        ],
        &rows,
    );
    RunOutput { summary: s, tables: vec![table] }
}
