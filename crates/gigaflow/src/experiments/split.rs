//! Gigaflow's sweeps as independent parts (issue 34), so `innet reproduce` runs each as a Dask
//! task of its own. A part is one pipeline (at one locality): its inputs (ruleset, parsed
//! pipeline, traffic) are made once in the part and everything the experiment does with that
//! pipeline runs on them.
//!
//! | experiment | a part | merged |
//! |---|---|---|
//! | `gigaflow.e2e` (Figs. 8-12, Table 2) | MF and GF on one (pipeline, locality) | byte for byte the whole run's output |
//! | `gigaflow.tables` (Figs. 14-15) | every K on one (pipeline, locality) | byte for byte the whole run's output |
//! | `gigaflow.cpu` (Fig. 13) | every repeat of one pipeline | the whole run's output but for the measured times |
//! | `gigaflow.threads` (Fig. 19) | every repeat and thread count of one pipeline | the same |
//!
//! `cpu` and `threads` measure time on this machine: a part interleaves its repeats as the whole
//! run does, but across pipelines the repeats are no longer interleaved (each pipeline's times
//! come from one task; the figures compare shares of one pipeline's own time, and schemes and
//! thread counts of one pipeline, all measured inside one task). Their merged rows are put in
//! the whole run's order.
//!
//! The same contract as `innet_switchv2p::experiments::{parts, run_part, merge_parts}`: each
//! answers None for an experiment that does not split here.

use super::*;

/// An experiment's run as parts, its parameters resolved.
trait Parts {
    /// The parts' labels, in the order [`merge_parts`] takes their results.
    fn labels(&self) -> Vec<String>;
    /// Part `index`'s result (floats kept exactly).
    fn run(&self, index: usize, progress: Progress<'_>) -> Result<Value, ExperimentError>;
    /// The output from every part's result, in order.
    fn merge(&self, results: Vec<Value>) -> Result<RunOutput, serde_json::Error>;
}

impl Parts for Grid {
    fn labels(&self) -> Vec<String> {
        self.parts.points.iter().map(|(p, l)| format!("{p} {}", loc_name(*l))).collect()
    }
    fn run(&self, index: usize, progress: Progress<'_>) -> Result<Value, ExperimentError> {
        let results = self.run_part(&self.parts.points[index], progress)?;
        Ok(serde_json::to_value(results).expect("a run's result is plain data"))
    }
    fn merge(&self, results: Vec<Value>) -> Result<RunOutput, serde_json::Error> {
        let results = results.into_iter().map(serde_json::from_value::<Vec<RunResult>>).collect::<Result<Vec<_>, _>>()?;
        if let Some(r) = results.iter().find(|r| r.len() != self.caches.len()) {
            return Err(serde::de::Error::custom(format!("{} cache results, expected {}", r.len(), self.caches.len())));
        }
        Ok(self.output(results))
    }
}

/// Parts of one pipeline each (`cpu`, `threads`): `measure` the pipelines given, `interleave`
/// rows measured apart into the whole run's order, `output` from all rows.
macro_rules! per_pipeline_parts {
    ($setup:ty) => {
        impl Parts for $setup {
            fn labels(&self) -> Vec<String> {
                self.pipes.clone()
            }
            fn run(&self, index: usize, progress: Progress<'_>) -> Result<Value, ExperimentError> {
                let rows = self.measure(&self.pipes[index..=index], progress)?;
                Ok(serde_json::to_value(rows).expect("rows are plain data"))
            }
            fn merge(&self, results: Vec<Value>) -> Result<RunOutput, serde_json::Error> {
                let mut rows = Vec::new();
                for r in results {
                    rows.extend(serde_json::from_value::<Vec<_>>(r)?);
                }
                self.interleave(&mut rows);
                Ok(self.output(rows))
            }
        }
    };
}
per_pipeline_parts!(cpu::Setup);
per_pipeline_parts!(threads::Setup);

/// The split form of `name`, its parameters resolved; None: not a sweep of this crate.
fn resolve(name: &str, overrides: &BTreeMap<String, String>, quick: bool) -> Option<Result<Box<dyn Parts>, ExperimentError>> {
    fn boxed<T: Parts + 'static>(r: Result<T, ExperimentError>) -> Option<Result<Box<dyn Parts>, ExperimentError>> {
        Some(r.map(|p| Box::new(p) as Box<dyn Parts>))
    }
    match name {
        "gigaflow.e2e" => boxed(e2e::grid(overrides, quick)),
        "gigaflow.tables" => boxed(tables::grid(overrides, quick)),
        "gigaflow.cpu" => boxed(cpu::setup(overrides, quick)),
        "gigaflow.threads" => boxed(threads::setup(overrides, quick)),
        _ => None,
    }
}

/// The parts `name` with these parameters makes, by label ("PSC high", or "PSC" where the
/// locality is one parameter), in the order [`merge_parts`] takes their results.
pub fn parts(name: &str, overrides: &BTreeMap<String, String>, quick: bool) -> Option<Result<Vec<String>, ExperimentError>> {
    Some(resolve(name, overrides, quick)?.map(|s| s.labels()))
}

/// Part result as text: `{"part": label, "result": ...}`.
#[derive(Serialize, Deserialize)]
struct Part {
    part: String,
    result: Value,
}

/// Run part `index` alone; its result as JSON text (floats kept exactly) for [`merge_parts`].
pub fn run_part(name: &str, overrides: &BTreeMap<String, String>, quick: bool, index: usize, progress: Progress<'_>) -> Option<Result<String, ExperimentError>> {
    Some(resolve(name, overrides, quick)?.and_then(|s| {
        let labels = s.labels();
        let part = labels
            .get(index)
            .ok_or_else(|| ExperimentError::Input(format!("{name}: part {index} does not exist (these parameters make {} parts)", labels.len())))?
            .clone();
        let result = s.run(index, progress)?;
        Ok(serde_json::to_string(&Part { part, result }).expect("a part's result is plain data"))
    }))
}

/// The output the whole run gives, from every part's [`run_part`] text in order.
pub fn merge_parts(name: &str, overrides: &BTreeMap<String, String>, quick: bool, texts: &[String]) -> Option<Result<RunOutput, ExperimentError>> {
    Some(resolve(name, overrides, quick)?.and_then(|s| {
        let labels = s.labels();
        if texts.len() != labels.len() {
            return Err(ExperimentError::Input(format!("{name}: {} part results given, these parameters make {}", texts.len(), labels.len())));
        }
        let mut results = Vec::with_capacity(labels.len());
        for (i, (text, want)) in texts.iter().zip(&labels).enumerate() {
            let part: Part = serde_json::from_str(text).map_err(|e| ExperimentError::Input(format!("{name}: part {i}: not a part result ({e})")))?;
            if &part.part != want {
                return Err(ExperimentError::Input(format!("{name}: part {i} is the result of '{}', expected '{want}'", part.part)));
            }
            results.push(part.result);
        }
        s.merge(results).map_err(|e| ExperimentError::Input(format!("{name}: a part's result does not fit these parameters ({e})")))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(sets: &[(&str, &str)]) -> BTreeMap<String, String> {
        sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn parts_merge_into_the_whole_runs_output() {
        for (name, sets) in [
            ("gigaflow.e2e", overrides(&[("pipelines", "PSC,OFD"), ("localities", "high,low"), ("flows", "1500"), ("rules", "500")])),
            ("gigaflow.tables", overrides(&[("pipelines", "PSC"), ("localities", "high,low"), ("ks", "1,3"), ("flows", "1500"), ("rules", "500")])),
        ] {
            let labels = parts(name, &sets, true).unwrap().unwrap();
            assert!(labels.len() >= 2 && labels[0].ends_with(" high"), "{labels:?}");
            let texts: Vec<String> = (0..labels.len()).map(|i| run_part(name, &sets, true, i, &mut |_| {}).unwrap().unwrap()).collect();
            let merged = merge_parts(name, &sets, true, &texts).unwrap().unwrap();
            let whole = super::super::experiments().into_iter().find(|e| e.info().name == name).unwrap().run(&sets, true, &mut |_| {}).unwrap();
            assert_eq!(merged.summary_json(), whole.summary_json(), "{name}");
            // The tables too, but for the wall-clock columns (measured again in every run).
            let strip = |o: &RunOutput| o.tables[0].columns.iter().filter(|(c, _)| !c.starts_with("clock_")).cloned().collect::<Vec<_>>();
            assert_eq!(strip(&merged), strip(&whole), "{name}");
            // A missing, reordered or foreign part is refused, naming it.
            let short = merge_parts(name, &sets, true, &texts[1..]).unwrap().unwrap_err().to_string();
            assert!(short.contains("part results given"), "{short}");
            let mut swapped = texts.clone();
            swapped.swap(0, 1);
            let e = merge_parts(name, &sets, true, &swapped).unwrap().unwrap_err().to_string();
            assert!(e.contains("part 0 is the result of"), "{e}");
            let e = run_part(name, &sets, true, labels.len(), &mut |_| {}).unwrap().unwrap_err().to_string();
            assert!(e.contains("does not exist"), "{e}");
        }
    }

    #[test]
    fn measured_experiments_merge_per_pipeline_in_the_whole_runs_order() {
        for (name, sets, steady) in [
            ("gigaflow.cpu", overrides(&[("pipelines", "PSC,OFD"), ("repeats", "2"), ("flows", "1500"), ("rules", "500")]), &["pipeline", "repeat", "misses"][..]),
            ("gigaflow.threads", overrides(&[("pipelines", "PSC,OFD"), ("threads", "1,2"), ("repeats", "2"), ("flows", "1500"), ("rules", "500")]), &["pipeline", "scheme", "threads", "repeat", "misses", "max_worker_misses"][..]),
        ] {
            let labels = parts(name, &sets, true).unwrap().unwrap();
            assert_eq!(labels, ["PSC", "OFD"]);
            let texts: Vec<String> = (0..2).map(|i| run_part(name, &sets, true, i, &mut |_| {}).unwrap().unwrap()).collect();
            let merged = merge_parts(name, &sets, true, &texts).unwrap().unwrap();
            let whole = super::super::experiments().into_iter().find(|e| e.info().name == name).unwrap().run(&sets, true, &mut |_| {}).unwrap();
            // The counts, and the rows in the whole run's interleaved order; the times are measured.
            let keep = |o: &RunOutput| o.tables[0].columns.iter().filter(|(c, _)| steady.contains(&c.as_str())).cloned().collect::<Vec<_>>();
            assert_eq!(keep(&merged).len(), steady.len());
            assert_eq!(keep(&merged), keep(&whole), "{name}");
            let keys = |o: &RunOutput| o.summary.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(&merged), keys(&whole));
            for p in ["PSC", "OFD"] {
                let (m, w) = (&merged.summary["pipelines"][p], &whole.summary["pipelines"][p]);
                if name == "gigaflow.cpu" {
                    assert_eq!(m["misses"], w["misses"]);
                } else {
                    for s in ["mf", "gf"] {
                        assert_eq!(m[s]["misses"], w[s]["misses"]);
                        assert_eq!(m[s]["threads"]["2"]["misses_per_core_max"], w[s]["threads"]["2"]["misses_per_core_max"]);
                    }
                }
            }
            let e = merge_parts(name, &sets, true, &[texts[1].clone(), texts[0].clone()]).unwrap().unwrap_err().to_string();
            assert!(e.contains("part 0 is the result of 'OFD'"), "{e}");
        }
    }

    #[test]
    fn experiments_that_do_not_split_here_say_so() {
        assert!(parts("gigaflow.search", &BTreeMap::new(), true).is_none());
        assert!(parts("switchv2p.cachesize", &BTreeMap::new(), true).is_none());
        let e = parts("gigaflow.tables", &overrides(&[("ks", "0")]), true).unwrap().unwrap_err().to_string();
        assert!(e.contains("ks"), "{e}");
    }
}
