//! `gigaflow.revalidation` (§6.3.6): the work of re-checking every cached entry after a pipeline
//! update, Megaflow vs Gigaflow.

use super::*;

pub(super) const REVALIDATION: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.revalidation",
        "Revalidation after a pipeline update (paper §6.3.6): wall time to re-check every cached entry, MF 32K vs GF 4x8K",
        &[
            COMMON,
            &[
                ParamSpec::new("pipeline", "\"OLS\"", "Pipebench pipeline (paper: OLS)"),
                ParamSpec::new("locality", "\"high\"", "high or low"),
                ParamSpec::new("update_every", "100", "the update removes every n-th rule of the pipeline"),
            ],
        ],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("pipeline", "\"PSC\"")]),
    run,
};

#[derive(Deserialize)]
struct RevalParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    update_every: usize,
}

/// The flow file with every `every`-th rule line removed (a pipeline update).
fn drop_rules(text: &str, every: usize) -> String {
    let mut n = 0;
    text.lines()
        .filter(|l| {
            let rule = !l.trim().is_empty() && !l.trim_start().starts_with('#') && !l.contains("priority=0,");
            if rule {
                n += 1;
                n % every != 0
            } else {
                true
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn run(overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
    let p: RevalParams = REVALIDATION.declaration.resolve(overrides, quick)?;
    if p.update_every < 2 {
        return Err(ExperimentError::bad_param("update_every", p.update_every, "at least 2"));
    }
    let loc = locality("locality", &p.locality)?;
    let (rs, pl, traffic) = inputs(&p.pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
    let updated = Pipeline::parse(&drop_rules(&rs.text, p.update_every)).map_err(|e| ExperimentError::Input(format!("updated pipeline: {e}")))?;
    let nic = p.common.nic();
    let mut mf = Offload::megaflow(&pl, crate::megaflow::DEFAULT_MEGAFLOW_ENTRIES, Eviction::None, nic);
    let mut gf = Offload::gigaflow(&pl, GigaflowConfig { ..p.common.gf() }, nic).map_err(ExperimentError::Input)?;
    for (t, pkt) in traffic.iter() {
        mf.process(pkt, t);
        gf.process(pkt, t);
    }
    progress(0.5);
    let mut schemes = Map::new();
    let mut rows = Vec::new();
    for (name, o) in [("mf", &mut mf), ("gf", &mut gf)] {
        let before = o.entries();
        let r = match &mut o.cache {
            crate::nic::NicCache::Megaflow(m) => m.revalidate(&updated),
            crate::nic::NicCache::Gigaflow(g) => g.revalidate(&updated),
        };
        schemes.insert(name.to_string(), json!({ "entries": before, "checked": r.checked, "removed": r.removed, "lookups_rerun": r.lookups }));
        rows.push((name, before, r));
    }
    // The paper's claim (GF revalidates ~2× faster: sub-traversals are shorter) as the work
    // ratio, which does not depend on the machine.
    let work = rows[1].2.lookups as f64 / rows[0].2.lookups.max(1) as f64;
    progress(1.0);
    let mut summary = Map::new();
    summary.insert("experiment".into(), json!("gigaflow.revalidation"));
    p.common.describe(&mut summary);
    summary.insert("pipeline".into(), json!(p.pipeline));
    summary.insert("locality".into(), json!(loc_name(loc)));
    summary.insert("removed_rules_every".into(), json!(p.update_every));
    summary.insert("schemes".into(), Value::Object(schemes));
    summary.insert("gf_over_mf_lookups_rerun".into(), json!(r6(work)));
    // Wall-clock times depend on the machine: in the table, not the summary.
    let t = Table::new("revalidation")
        .with("scheme", strs(&rows, |r| r.0.to_string()))
        .with("entries", u64s(&rows, |r| r.1 as u64))
        .with("removed", u64s(&rows, |r| r.2.removed as u64))
        .with("revalidation_ms", f64s(&rows, |r| r.2.elapsed_ns as f64 / 1e6));
    Ok(RunOutput { summary, tables: vec![t] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tests::run;

    #[test]
    fn revalidation_quick_removes_stale_entries_of_both_caches() {
        let out = run(&REVALIDATION, &[("update_every", "5")]);
        for k in ["mf", "gf"] {
            let x = &out.summary["schemes"][k];
            assert_eq!(x["checked"], x["entries"]);
            assert!(x["removed"].as_u64().unwrap() > 0, "{x}");
            // Every entry re-ran at least one lookup.
            assert!(x["lookups_rerun"].as_u64().unwrap() >= x["checked"].as_u64().unwrap(), "{x}");
        }
        // Sub-traversals are shorter than whole traversals (paper §4.3.1, §6.3.6).
        let (mf, gf) = (&out.summary["schemes"]["mf"], &out.summary["schemes"]["gf"]);
        let per_entry = |x: &Value| x["lookups_rerun"].as_f64().unwrap() / x["checked"].as_f64().unwrap();
        assert!(per_entry(gf) < per_entry(mf), "{mf} {gf}");
        assert_eq!(out.tables[0].rows(), 2);
    }
}
