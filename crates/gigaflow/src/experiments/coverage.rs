//! `gigaflow.coverage` (Table 2): rule-space coverage in Megaflow-equivalents of MF and GF after
//! the traffic, beside the paper's numbers.

use super::*;

pub(super) const COVERAGE: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.coverage",
        "Rule-space coverage (Table 2): Megaflow-equivalents covered by MF 32K vs GF 4x8K after the traffic, per pipeline",
        &[COMMON, &[pipelines("Pipebench pipelines (Table 2)"), ParamSpec::new("locality", "\"high\"", "traffic locality (Table 2: high)")], CACHES],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"PSC,OFD\""), ("mf_entries", "960"), ("gf_entries", "240")]),
    run,
};

#[derive(Deserialize)]
struct CoverageParams {
    #[serde(flatten)]
    common: Common,
    pipelines: List<String>,
    locality: String,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
}

fn run(overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
    let p: CoverageParams = COVERAGE.declaration.resolve(overrides, quick)?;
    let pipes = Sweep::over(p.pipelines.non_empty("pipelines")?);
    let loc = locality("locality", &p.locality)?;
    let gf = GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, ..p.common.gf() };
    let nic = p.common.nic();
    let results = pipes.run(progress, |name, _| {
        let (_, pl, traffic) = inputs(name, loc, &p.common).map_err(ExperimentError::Input)?;
        let mf = CacheSpec::Megaflow { entries: p.mf_entries, eviction: Eviction::None, max_masks: usize::MAX };
        let mf = run_cache(&pl, &traffic, &mf, nic).map_err(ExperimentError::Invariant)?;
        let g = run_cache(&pl, &traffic, &CacheSpec::Gigaflow(gf), nic).map_err(ExperimentError::Invariant)?;
        Ok((mf, g))
    })?;
    let mut tree = Map::new();
    let mut rows: Vec<(String, f64, f64, f64, f64, u64, u64)> = Vec::new();
    for (name, (mf, g)) in pipes.points.iter().zip(results) {
        let ratio = g.rule_space / mf.rule_space.max(1.0);
        let v = json!({
            "mf_coverage": r6(mf.rule_space),
            "gf_coverage": r6(g.rule_space),
            "gf_feasible_chains": r6(g.rule_space_feasible),
            "gf_chains_tag_only": r6(g.rule_space_tag_only),
            "gf_unique_mappings": g.unique_mappings,
            "gf_mapping_sum": r6(g.mapping_sum),
            "gf_mapping_sum_by_field_sets": r6(g.mapping_sum_by_fields),
            "gf_upcalls": g.misses,
            "gf_over_mf": r6(ratio),
            "mf_entries": mf.entries,
            "gf_entries": g.entries,
            "mf_hit_rate": r6(mf.hit_rate()),
            "gf_hit_rate": r6(g.hit_rate()),
        });
        tree.insert(name.clone(), v);
        rows.push((name.clone(), mf.rule_space, g.rule_space, g.rule_space_feasible, g.rule_space_tag_only, mf.entries as u64, g.entries as u64));
    }
    let mut summary = Map::new();
    summary.insert("experiment".into(), json!("gigaflow.coverage"));
    p.common.describe(&mut summary);
    summary.insert("locality".into(), json!(loc_name(loc)));
    summary.insert("mf".into(), json!(format!("1x{}", p.mf_entries)));
    summary.insert("gf".into(), json!(format!("{}x{}", p.gf_tables, p.gf_entries)));
    summary.insert("definition".into(), json!("Megaflow-equivalents (the artifact's estimate): MF: its entries; GF: over unique mappings (LTM tables written, tags, wildcards), the largest per-table entry count of a mapping whose adjacent wildcards share a field, else the largest product of two adjacent non-zero counts; summed, floored at the upcalls. gf_feasible_chains: the exact count of entry chains a packet can complete"));
    summary.insert("pipelines".into(), Value::Object(tree));
    let t = Table::new("coverage")
        .with("pipeline", strs(&rows, |r| r.0.clone()))
        .with("mf_coverage", f64s(&rows, |r| r.1))
        .with("gf_coverage", f64s(&rows, |r| r.2))
        .with("gf_feasible_chains", f64s(&rows, |r| r.3))
        .with("gf_chains_tag_only", f64s(&rows, |r| r.4))
        .with("mf_entries", u64s(&rows, |r| r.5))
        .with("gf_entries", u64s(&rows, |r| r.6));
    Ok(RunOutput { summary, tables: vec![t] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tests::run;

    #[test]
    fn coverage_quick_gf_covers_more_than_mf_and_feasible_is_bounded() {
        let out = run(&COVERAGE, &[]);
        for name in ["PSC", "OFD"] {
            let x = &out.summary["pipelines"][name];
            let (mf, gf, feasible, tag_only) = (
                x["mf_coverage"].as_f64().unwrap(),
                x["gf_coverage"].as_f64().unwrap(),
                x["gf_feasible_chains"].as_f64().unwrap(),
                x["gf_chains_tag_only"].as_f64().unwrap(),
            );
            // MF covers one traversal per entry.
            assert_eq!(mf, x["mf_entries"].as_u64().unwrap() as f64, "{x}");
            // Every GF entry chain a packet completes counts; it can not exceed the tag-linked chains.
            assert!(gf <= tag_only, "{x}");
            assert!(feasible > mf, "{x}");
            // Table 2's estimate: floored at the upcalls, whatever the mappings add.
            assert!(gf >= x["gf_upcalls"].as_f64().unwrap(), "{x}");
        }
        assert_eq!(out.tables[0].rows(), 2);
    }
}
