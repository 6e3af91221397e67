//! Gigaflow's sweeps as independent parts (issue 34), so `innet reproduce` runs each as a Dask
//! task of its own: a part is one pipeline at one locality, its inputs (ruleset, parsed pipeline,
//! traffic) made once in the part and every cache of the sweep replayed on them.
//!
//! | experiment | a part | merged |
//! |---|---|---|
//! | `gigaflow.e2e` (Figs. 8-12, Table 2) | MF and GF on one (pipeline, locality) | byte for byte the whole run's output |
//! | `gigaflow.tables` (Figs. 14-15) | every K on one (pipeline, locality) | byte for byte the whole run's output |
//!
//! The same contract as `innet_switchv2p::experiments::{parts, run_part, merge_parts}`: each
//! answers None for an experiment that does not split here.

use super::*;

/// The split form of `name`, its parameters resolved; None: not a sweep of this crate.
fn resolve(name: &str, overrides: &BTreeMap<String, String>, quick: bool) -> Option<Result<Grid, ExperimentError>> {
    match name {
        "gigaflow.e2e" => Some(e2e::grid(overrides, quick)),
        "gigaflow.tables" => Some(tables::grid(overrides, quick)),
        _ => None,
    }
}

fn label(pipeline: &str, locality: Locality) -> String {
    format!("{pipeline} {}", loc_name(locality))
}

/// The parts `name` with these parameters makes, by label ("PSC high"), in the order
/// [`merge_parts`] takes their results.
pub fn parts(name: &str, overrides: &BTreeMap<String, String>, quick: bool) -> Option<Result<Vec<String>, ExperimentError>> {
    Some(resolve(name, overrides, quick)?.map(|g| g.parts().into_iter().map(|(p, l)| label(p, l)).collect()))
}

/// Part result as text: `{"part": label, "results": [one RunResult per cache, floats as bits]}`.
#[derive(Serialize, Deserialize)]
struct Part {
    part: String,
    results: Vec<RunResult>,
}

/// Run part `index` alone; its result as JSON text (floats kept exactly) for [`merge_parts`].
pub fn run_part(name: &str, overrides: &BTreeMap<String, String>, quick: bool, index: usize, progress: Progress<'_>) -> Option<Result<String, ExperimentError>> {
    Some(resolve(name, overrides, quick)?.and_then(|g| {
        let parts = g.parts();
        let &(pipeline, locality) = parts
            .get(index)
            .ok_or_else(|| ExperimentError::Input(format!("{name}: part {index} does not exist (these parameters make {} parts)", parts.len())))?;
        let (n, mut done) = (g.caches.len() as f64, 0);
        let results = g.run_part(index, &mut || {
            done += 1;
            progress(done as f64 / n);
        })?;
        Ok(serde_json::to_string(&Part { part: label(pipeline, locality), results }).expect("a run's result is plain data"))
    }))
}

/// The output the whole run gives, from every part's [`run_part`] text in order.
pub fn merge_parts(name: &str, overrides: &BTreeMap<String, String>, quick: bool, texts: &[String]) -> Option<Result<RunOutput, ExperimentError>> {
    Some(resolve(name, overrides, quick)?.and_then(|g| {
        let parts = g.parts();
        if texts.len() != parts.len() {
            return Err(ExperimentError::Input(format!("{name}: {} part results given, these parameters make {}", texts.len(), parts.len())));
        }
        let mut results = Vec::with_capacity(parts.len());
        for (i, (text, &(pipeline, locality))) in texts.iter().zip(&parts).enumerate() {
            let part: Part = serde_json::from_str(text).map_err(|e| ExperimentError::Input(format!("{name}: part {i}: not a part result ({e})")))?;
            let want = label(pipeline, locality);
            if part.part != want {
                return Err(ExperimentError::Input(format!("{name}: part {i} is the result of '{}', expected '{want}'", part.part)));
            }
            if part.results.len() != g.caches.len() {
                return Err(ExperimentError::Input(format!("{name}: part {i} ({want}) holds {} cache results, expected {}", part.results.len(), g.caches.len())));
            }
            results.push(part.results);
        }
        Ok(g.output(results))
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
    fn experiments_that_do_not_split_here_say_so() {
        assert!(parts("gigaflow.search", &BTreeMap::new(), true).is_none());
        assert!(parts("switchv2p.cachesize", &BTreeMap::new(), true).is_none());
        let e = parts("gigaflow.tables", &overrides(&[("ks", "0")]), true).unwrap().unwrap_err().to_string();
        assert!(e.contains("ks"), "{e}");
    }
}
