//! `gigaflow.cpu` (Fig. 13): the slow path's time per miss split into the userspace pipeline
//! (the traversal), sub-traversal partitioning and LTM rule generation, per pipeline, measured on
//! this machine from our own code with Gigaflow 4×8K; the Gigaflow overhead (partitioning + rule
//! generation over the pipeline) beside the paper's. Repeats are interleaved across pipelines;
//! medians are reported. The times depend on the machine and its load, so unlike the other
//! experiments' summaries this one is not byte-identical across runs (as `gigaflow.search`).

use super::*;

pub(super) const CPU: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.cpu",
        "Slow-path time per miss split into pipeline traversal, sub-traversal partitioning and LTM rule generation, per pipeline, measured on this machine (Fig. 13)",
        &[
            COMMON,
            &[
                pipelines("Pipebench pipelines (Fig. 13)"),
                ParamSpec::new("locality", "\"high\"", "traffic locality: high or low"),
                GF_TABLES,
                GF_ENTRIES,
                ParamSpec::new("repeats", "3", "runs per pipeline, interleaved across pipelines (medians reported)"),
            ],
        ],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"PSC,OFD\""), ("gf_entries", "240"), ("repeats", "1")]),
    run: |overrides, quick, progress| {
        let setup = setup(overrides, quick)?;
        let rows = setup.measure(&setup.pipes, progress)?;
        Ok(setup.output(rows))
    },
};

#[derive(Deserialize)]
struct CpuParams {
    #[serde(flatten)]
    common: Common,
    pipelines: List<String>,
    locality: String,
    gf_tables: usize,
    gf_entries: usize,
    repeats: usize,
}

/// A row of the `cpu` table: one replay of one pipeline.
#[derive(Serialize, Deserialize)]
pub(super) struct CpuRow {
    pipeline: String,
    repeat: u64,
    misses: u64,
    /// Traversal, partitioning and rule generation, µs per miss.
    #[serde(with = "innet_registry::exact_f64::list")]
    us: [f64; 3],
}

/// The experiment's parameters resolved: what [`Setup::measure`] replays.
pub(super) struct Setup {
    p: CpuParams,
    pub(super) pipes: Vec<String>,
    loc: Locality,
    gf: CacheSpec,
}

pub(super) fn setup(overrides: &BTreeMap<String, String>, quick: bool) -> Result<Setup, ExperimentError> {
    let p: CpuParams = CPU.declaration.resolve(overrides, quick)?;
    if p.repeats == 0 {
        return Err(ExperimentError::bad_param("repeats", 0, "at least 1"));
    }
    let pipes = p.pipelines.non_empty("pipelines")?;
    let loc = locality("locality", &p.locality)?;
    let gf = CacheSpec::Gigaflow(GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, count_coverage: false, ..p.common.gf() });
    Ok(Setup { p, pipes, loc, gf })
}

impl Setup {
    /// The replays of `pipes` (every pipeline of the run, or one part's), every repeat over the
    /// pipelines before the next.
    pub(super) fn measure(&self, pipes: &[String], progress: Progress<'_>) -> Result<Vec<CpuRow>, ExperimentError> {
        let nic = self.p.common.nic();
        let loaded: Vec<(Pipeline, Traffic)> = pipes
            .iter()
            .map(|name| inputs(name, self.loc, &self.p.common).map(|(_, pl, t)| (pl, t)))
            .collect::<Result<_, _>>()
            .map_err(ExperimentError::Input)?;
        // Every repeat over the pipelines (by index) before the next.
        let ids: Vec<usize> = (0..pipes.len()).collect();
        Sweep::over(0..self.p.repeats).by(&ids).run(progress, |&(r, i), _| {
            let (pl, traffic) = &loaded[i];
            let res = run_cache(pl, traffic, &self.gf, nic).map_err(ExperimentError::Invariant)?;
            Ok(CpuRow { pipeline: pipes[i].clone(), repeat: r as u64, misses: res.misses, us: res.clock_us })
        })
    }

    /// The whole run's order of `rows` measured in parts (pipeline by pipeline): repeat, pipeline.
    pub(super) fn interleave(&self, rows: &mut [CpuRow]) {
        rows.sort_by_key(|r| (r.repeat, self.pipes.iter().position(|y| *y == r.pipeline)));
    }

    pub(super) fn output(&self, rows: Vec<CpuRow>) -> RunOutput {
        let p = &self.p;
        let mut tree = Map::new();
        for name in &self.pipes {
            let mine: Vec<&CpuRow> = rows.iter().filter(|x| &x.pipeline == name).collect();
            let part = |i: usize| median(mine.iter().map(|x| x.us[i]).collect());
            let (traversal, partition, rulegen) = (part(0), part(1), part(2));
            let v = json!({
                "misses": mine.first().map_or(0, |x| x.misses),
                "traversal_us_per_miss": r6(traversal),
                "partition_us_per_miss": r6(partition),
                "rulegen_us_per_miss": r6(rulegen),
                "gigaflow_overhead_pct": r6(100.0 * (partition + rulegen) / traversal.max(1e-9)),
            });
            tree.insert(name.clone(), v);
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.cpu"));
        p.common.describe(&mut summary);
        summary.insert("locality".into(), json!(loc_name(self.loc)));
        summary.insert("gf".into(), json!(format!("{}x{}", p.gf_tables, p.gf_entries)));
        summary.insert("repeats".into(), json!(p.repeats));
        summary.insert("measured_on_this_machine".into(), json!(true));
        summary.insert("pipelines".into(), Value::Object(tree));
        let t = Table::new("cpu")
            .with("pipeline", strs(&rows, |x| x.pipeline.clone()))
            .with("repeat", u64s(&rows, |x| x.repeat))
            .with("misses", u64s(&rows, |x| x.misses))
            .with("traversal_us_per_miss", f64s(&rows, |x| r6(x.us[0])))
            .with("partition_us_per_miss", f64s(&rows, |x| r6(x.us[1])))
            .with("rulegen_us_per_miss", f64s(&rows, |x| r6(x.us[2])));
        RunOutput { summary, tables: vec![t] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tests::run;

    #[test]
    fn cpu_quick_splits_every_miss_into_three_measured_parts() {
        let out = run(&CPU, &[("repeats", "2")]);
        for name in ["PSC", "OFD"] {
            let x = &out.summary["pipelines"][name];
            assert!(x["misses"].as_u64().unwrap() > 0, "{x}");
            // Every miss walks the pipeline; Gigaflow partitions and builds entries for it.
            for k in ["traversal_us_per_miss", "partition_us_per_miss", "rulegen_us_per_miss"] {
                assert!(x[k].as_f64().unwrap() > 0.0, "{k}: {x}");
            }
            assert!(x["gigaflow_overhead_pct"].as_f64().unwrap() > 0.0, "{x}");
        }
        // Repeats interleaved: PSC, OFD, PSC, OFD; the misses do not depend on the repeat.
        assert_eq!(out.tables[0].rows(), 4);
        let ColumnData::Str(p) = &out.tables[0].columns[0].1 else { panic!() };
        assert_eq!(p, &["PSC", "OFD", "PSC", "OFD"]);
        let ColumnData::U64(m) = &out.tables[0].columns[2].1 else { panic!() };
        assert_eq!((m[0], m[1]), (m[2], m[3]));
        let o: BTreeMap<String, String> = [("repeats".to_string(), "0".to_string())].into();
        assert!(CPU.run(&o, true, &mut |_| {}).unwrap_err().to_string().contains("repeats"));
    }
}
