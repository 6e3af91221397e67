//! `gigaflow.tables` (Figs. 14–15): misses and entries as the number of LTM tables grows.

use super::*;

pub(super) const TABLES: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.tables",
        "Misses and entries as the number of LTM tables grows, K=1..5 at 100K entries per table (Figs. 14-15)",
        &[
            COMMON,
            &[
                pipelines("Pipebench pipelines"),
                ParamSpec::new("localities", "\"high,low\"", "high, low"),
                ParamSpec::new("ks", "\"1,2,3,4,5\"", "numbers of LTM tables (K=1 is Megaflow-like)"),
                ParamSpec::new("entries", "100000", "entries per LTM table (paper: 100K)"),
            ],
        ],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"PSC\""), ("ks", "\"1,2,4\""), ("entries", "3000")]),
    run: |overrides, quick, progress| grid(overrides, quick)?.run(progress),
};

#[derive(Deserialize)]
struct TablesParams {
    #[serde(flatten)]
    common: Common,
    pipelines: List<String>,
    localities: List<String>,
    ks: List<usize>,
    entries: usize,
}

/// The sweep: Gigaflow with every K on every (pipeline, locality).
pub(super) fn grid(overrides: &BTreeMap<String, String>, quick: bool) -> Result<Grid, ExperimentError> {
    let p: TablesParams = TABLES.declaration.resolve(overrides, quick)?;
    let parts = Sweep::over(p.pipelines.non_empty("pipelines")?).by(&localities(&p.localities)?);
    let ks = p.ks.within("ks", 1..=crate::ltm::MAX_LTM_TABLES, "a table count in 1..=32")?;
    let caches: Vec<(String, CacheSpec)> = ks.iter().map(|&k| (format!("k{k}"), CacheSpec::Gigaflow(GigaflowConfig { tables: k, entries_per_table: p.entries, ..p.common.gf() }))).collect();
    let common = p.common.clone();
    let output = move |rows: &[Row]| {
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.tables"));
        p.common.describe(&mut summary);
        summary.insert("entries_per_table".into(), json!(p.entries));
        summary.insert("pipelines".into(), Value::Object(results_tree(rows)));
        RunOutput { summary, tables: vec![points_table(rows)] }
    };
    Ok(Grid { parts, common, caches, output: Box::new(output) })
}
