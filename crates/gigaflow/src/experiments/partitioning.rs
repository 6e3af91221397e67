//! `gigaflow.partitioning` (Fig. 16): random (RND), disjoint (DP) and the ideal 1-1 partitioning
//! against Megaflow on one pipeline.

use super::*;

pub(super) const PARTITIONING: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.partitioning",
        "Partitioning schemes (Fig. 16): random (RND), disjoint (DP; and dp-artifact, the artifact's scoring of it) and the ideal 1-1 mapping (one LTM table per traversal step), misses and entries vs Megaflow",
        &[
            COMMON,
            &[
                ParamSpec::new("pipeline", "\"OLS\"", "Pipebench pipeline (paper: OLS)"),
                ParamSpec::new("locality", "\"high\"", "high or low"),
                ParamSpec::new("gf_tables", "4", "LTM tables for RND and DP"),
                GF_ENTRIES,
                ParamSpec::new("mf_entries", "32000", "Megaflow baseline entries"),
            ],
        ],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("pipeline", "\"PSC\""), ("mf_entries", "960"), ("gf_entries", "240")]),
    run,
};

#[derive(Deserialize)]
struct PartParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    gf_tables: usize,
    gf_entries: usize,
    mf_entries: usize,
}

fn run(overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
    let p: PartParams = PARTITIONING.declaration.resolve(overrides, quick)?;
    let loc = locality("locality", &p.locality)?;
    let (rs, pl, traffic) = inputs(&p.pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
    // The ideal 1-1 mapping needs as many LTM tables as the longest traversal has lookups.
    let longest = rs.spec.traversals().map_err(ExperimentError::Input)?.iter().map(|t| t.len()).max().unwrap_or(1);
    let one_to_one_tables = longest.clamp(1, crate::ltm::MAX_LTM_TABLES);
    let base = GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, ..p.common.gf() };
    let runs: Vec<(&str, CacheSpec)> = vec![
        ("mf", CacheSpec::Megaflow { entries: p.mf_entries, eviction: Eviction::None, max_masks: usize::MAX }),
        ("rnd", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::Random, ..base })),
        ("dp", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::Disjoint, ..base })),
        // The artifact's own scoring of the same idea (docs/gigaflow.md, Partitioning).
        ("dp-artifact", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::DisjointArtifact, ..base })),
        ("1-1", CacheSpec::Gigaflow(GigaflowConfig { scheme: Scheme::OneToOne, tables: one_to_one_tables, ..base })),
    ];
    let nic = p.common.nic();
    let results = Sweep::over(&runs).run(progress, |(_, spec), _| run_cache(&pl, &traffic, spec, nic).map_err(ExperimentError::Invariant))?;
    let mf_misses = results[0].misses;
    let mut schemes = Map::new();
    let mut rows = Vec::new();
    for ((name, _), r) in runs.iter().zip(results) {
        let mut v = result_json(&r);
        v.as_object_mut().unwrap().insert("miss_reduction_vs_mf".into(), json!(r6(1.0 - r.misses as f64 / mf_misses.max(1) as f64)));
        v.as_object_mut().unwrap().insert("cache_used".into(), json!(r6(r.entries as f64 / r.capacity.max(1) as f64)));
        schemes.insert(name.to_string(), v);
        rows.push(Row { pipeline: p.pipeline.clone(), locality: loc_name(loc), scheme: name.to_string(), r });
    }
    let mut summary = Map::new();
    summary.insert("experiment".into(), json!("gigaflow.partitioning"));
    p.common.describe(&mut summary);
    summary.insert("pipeline".into(), json!(p.pipeline));
    summary.insert("locality".into(), json!(loc_name(loc)));
    summary.insert("one_to_one_tables".into(), json!(one_to_one_tables));
    summary.insert("schemes".into(), Value::Object(schemes));
    Ok(RunOutput { summary, tables: vec![points_table(&rows)] })
}
