//! `gigaflow.tables` (Figs. 14–15): misses and entries as the number of LTM tables grows.

use super::*;

pub(super) struct Tables;

#[derive(Deserialize)]
struct TablesParams {
    #[serde(flatten)]
    common: Common,
    pipelines: String,
    localities: String,
    ks: String,
    entries: usize,
}

impl Experiment for Tables {
    fn info(&self) -> ExperimentInfo {
        let mut params = common_params();
        params.extend([
            ParamSpec { name: "pipelines", default: "\"OFD,PSC,OLS,ANT,OTL\"", doc: "Pipebench pipelines" },
            ParamSpec { name: "localities", default: "\"high,low\"", doc: "high, low" },
            ParamSpec { name: "ks", default: "\"1,2,3,4,5\"", doc: "numbers of LTM tables (K=1 is Megaflow-like)" },
            ParamSpec { name: "entries", default: "100000", doc: "entries per LTM table (paper: 100K)" },
        ]);
        ExperimentInfo { name: "gigaflow.tables", description: "Misses and entries as the number of LTM tables grows, K=1..5 at 100K entries per table (Figs. 14-15)", params }
    }

    fn run(&self, overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
        grid(overrides, quick)?.run(progress)
    }
}

/// The sweep: Gigaflow with every K on every (pipeline, locality).
pub(super) fn grid(overrides: &BTreeMap<String, String>, quick: bool) -> Result<Grid, ExperimentError> {
    let p: TablesParams = resolve_params(&Tables.info(), &[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"PSC\""), ("ks", "\"1,2,4\""), ("entries", "3000")], quick, overrides)?;
    let pipes = split_list("pipelines", &p.pipelines)?;
    let locs = localities(&p.localities)?;
    let ks = split_list("ks", &p.ks)?
        .iter()
        .map(|k| k.parse::<usize>().ok().filter(|&k| (1..=crate::ltm::MAX_LTM_TABLES).contains(&k)).ok_or_else(|| format!("'{k}' is not a table count in 1..=32")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad("ks"))?;
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
    Ok(Grid { pipes, locs, common, caches, output: Box::new(output) })
}
