//! `gigaflow.threads` (Fig. 19, Appendix A): the NIC cache's misses spread over N slow-path
//! worker threads by flow hash (RSS, as OVS spreads upcalls over its handler threads), for MF and
//! GF, measured with real threads on this machine. The cache run is sequential and deterministic
//! (which packets miss); the misses are then replayed on N threads, each a vSwitch core with its
//! own cache of the run's shape that it installs its misses into (traversal, and for GF the
//! partitioning and rule generation). Wall time and thread CPU time depend on the machine and its
//! load, so the summary is not byte-identical across runs (as `gigaflow.cpu`).

use super::*;
use innet_ofswitch::fields::{Field, Flow};
use std::time::Instant;

pub(super) const THREADS: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.threads",
        "Cache misses spread over N slow-path worker threads by flow hash (RSS): throughput and misses per core vs N for Megaflow and Gigaflow, measured with real threads (Fig. 19)",
        &[
            COMMON,
            &[
                pipelines("Pipebench pipelines"),
                ParamSpec::new("locality", "\"high\"", "traffic locality: high or low"),
                ParamSpec::new("threads", "\"1,2,4\"", "slow-path worker threads (vSwitch cores) to measure; beyond this machine's cores they time-share"),
            ],
            CACHES,
            &[ParamSpec::new("repeats", "3", "replays per (pipeline, scheme, threads), interleaved (medians reported)")],
        ],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("pipelines", "\"PSC\""), ("threads", "\"1,2\""), ("mf_entries", "960"), ("gf_entries", "240"), ("repeats", "1")]),
    run: |overrides, quick, progress| {
        let setup = setup(overrides, quick)?;
        let rows = setup.measure(&setup.pipes, progress)?;
        Ok(setup.output(rows))
    },
};

#[derive(Deserialize)]
struct ThreadsParams {
    #[serde(flatten)]
    common: Common,
    pipelines: List<String>,
    locality: String,
    threads: List<usize>,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
    repeats: usize,
}

/// The RSS worker of a packet: a hash of its 5-tuple (the NIC's Toeplitz hash plays this role;
/// any hash that keeps a flow on one worker does).
fn rss_worker(p: &Flow, n: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in [Field::NwSrc, Field::NwDst, Field::NwProto, Field::TpSrc, Field::TpDst] {
        h = (h ^ p.get(f)).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    (h % n as u64) as usize
}

/// One replay of `misses` over `n` workers: (wall ns, per-worker misses, per-worker CPU ns).
fn replay(pipeline: &Pipeline, spec: &CacheSpec, nic: NicModel, misses: &[(u64, Flow)], n: usize) -> Result<(u64, Vec<u64>, Vec<u64>), String> {
    let mut queues: Vec<Vec<(u64, Flow)>> = vec![Vec::new(); n];
    for m in misses {
        queues[rss_worker(&m.1, n)].push(*m);
    }
    let t0 = Instant::now();
    let per: Vec<Result<(u64, u64), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = queues
            .iter()
            .map(|q| {
                s.spawn(move || {
                    let mut o = offload(pipeline, spec, nic)?;
                    let c0 = thread_cpu_ns().unwrap_or(0);
                    for (t, p) in q {
                        o.process(p, *t);
                    }
                    Ok((q.len() as u64, thread_cpu_ns().unwrap_or(0).saturating_sub(c0)))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a worker thread panicked".into()))).collect()
    });
    let wall = t0.elapsed().as_nanos() as u64;
    let per = per.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok((wall, per.iter().map(|x| x.0).collect(), per.iter().map(|x| x.1).collect()))
}

/// A row of the `threads` table: one replay.
#[derive(Serialize, Deserialize)]
pub(super) struct Replay {
    pipeline: String,
    scheme: String,
    threads: usize,
    repeat: usize,
    misses: u64,
    max_worker_misses: u64,
    wall_ns: u64,
    cpu_ns: u64,
}

/// The experiment's parameters resolved: what [`Setup::measure`] replays.
pub(super) struct Setup {
    p: ThreadsParams,
    ns: Vec<usize>,
    pub(super) pipes: Vec<String>,
    loc: Locality,
    specs: [(&'static str, CacheSpec); 2],
}

pub(super) fn setup(overrides: &BTreeMap<String, String>, quick: bool) -> Result<Setup, ExperimentError> {
    let p: ThreadsParams = THREADS.declaration.resolve(overrides, quick)?;
    if p.repeats == 0 {
        return Err(ExperimentError::bad_param("repeats", 0, "at least 1"));
    }
    let ns = p.threads.within("threads", 1..=64, "a thread count in 1..=64")?;
    let pipes = p.pipelines.non_empty("pipelines")?;
    let loc = locality("locality", &p.locality)?;
    let specs: [(&'static str, CacheSpec); 2] = [
        ("mf", CacheSpec::Megaflow { entries: p.mf_entries, eviction: Eviction::None, max_masks: usize::MAX }),
        ("gf", CacheSpec::Gigaflow(GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, ..p.common.gf() })),
    ];
    Ok(Setup { p, ns, pipes, loc, specs })
}

impl Setup {
    /// The replays of `pipes` (every pipeline of the run, or one part's), interleaved: every
    /// repeat of every thread count over the pipelines and schemes before the next.
    pub(super) fn measure(&self, pipes: &[String], progress: Progress<'_>) -> Result<Vec<Replay>, ExperimentError> {
        let (p, nic) = (&self.p, self.p.common.nic());
        // The misses of every (pipeline, scheme), from one sequential run each.
        let mut loaded = Vec::new();
        for name in pipes {
            let (_, pl, traffic) = inputs(name, self.loc, &p.common).map_err(ExperimentError::Input)?;
            let mut misses = Vec::new();
            for (scheme, spec) in &self.specs {
                let mut o = offload(&pl, spec, nic).map_err(ExperimentError::Invariant)?;
                let mut m = Vec::new();
                for (t, pkt) in traffic.iter() {
                    let before = o.stats.upcalls;
                    o.process(pkt, t);
                    if o.stats.upcalls > before {
                        m.push((t, *pkt));
                    }
                }
                misses.push((*scheme, spec, m));
            }
            loaded.push((name.clone(), pl, misses));
        }
        // Every repeat of every thread count over the pipelines and schemes (by index) before the next.
        let (pipe_ids, scheme_ids): (Vec<usize>, Vec<usize>) = ((0..loaded.len()).collect(), (0..self.specs.len()).collect());
        let sweep = Sweep::over(0..p.repeats).by(&self.ns).by(&pipe_ids).by(&scheme_ids);
        sweep.run(progress, |&(((repeat, n), i), s), _| {
            let (name, pl, misses) = &loaded[i];
            let (scheme, spec, m) = &misses[s];
            let (wall_ns, per, cpu) = replay(pl, spec, nic, m, n).map_err(ExperimentError::Invariant)?;
            if per.iter().sum::<u64>() != m.len() as u64 {
                return Err(ExperimentError::Invariant(format!("{name} {scheme}: workers handled {} of {} misses", per.iter().sum::<u64>(), m.len())));
            }
            Ok(Replay { pipeline: name.clone(), scheme: scheme.to_string(), threads: n, repeat, misses: m.len() as u64, max_worker_misses: per.iter().copied().max().unwrap_or(0), wall_ns, cpu_ns: cpu.iter().sum() })
        })
    }

    /// The whole run's order of `rows` measured in parts (pipeline by pipeline): repeat, thread
    /// count, pipeline, scheme.
    pub(super) fn interleave(&self, rows: &mut [Replay]) {
        let at = |v: &[String], x: &str| v.iter().position(|y| y == x);
        rows.sort_by_key(|r| (r.repeat, self.ns.iter().position(|&n| n == r.threads), at(&self.pipes, &r.pipeline)));
    }

    pub(super) fn output(&self, rows: Vec<Replay>) -> RunOutput {
        let (p, ns) = (&self.p, &self.ns);
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let mut tree = Map::new();
        for name in &self.pipes {
            let mut per_scheme = Map::new();
            for (scheme, _) in &self.specs {
                let mine = |n: usize| rows.iter().filter(move |r| &r.pipeline == name && r.scheme == *scheme && r.threads == n);
                let misses = mine(ns[0]).next().map_or(0, |r| r.misses);
                let mut by_n = Map::new();
                let base_wall = median(mine(ns[0]).map(|r| r.wall_ns as f64).collect());
                for &n in ns {
                    let wall = median(mine(n).map(|r| r.wall_ns as f64).collect());
                    let cpu = median(mine(n).map(|r| r.cpu_ns as f64).collect());
                    let max_worker = mine(n).next().map_or(0, |r| r.max_worker_misses);
                    by_n.insert(
                        n.to_string(),
                        json!({
                            "misses_per_core_max": max_worker,
                            "misses_per_core_mean": r6(misses as f64 / n as f64),
                            "throughput_misses_per_s": r6(misses as f64 / (wall / 1e9).max(1e-9)),
                            "speedup": r6(base_wall / wall.max(1.0)),
                            "cpu_s": r6(cpu / 1e9),
                            "cpu_us_per_miss": r6(cpu / 1e3 / misses.max(1) as f64),
                        }),
                    );
                }
                per_scheme.insert(scheme.to_string(), json!({ "misses": misses, "threads": by_n }));
            }
            tree.insert(name.clone(), Value::Object(per_scheme));
        }
        let mut summary = Map::new();
        summary.insert("experiment".into(), json!("gigaflow.threads"));
        p.common.describe(&mut summary);
        summary.insert("locality".into(), json!(loc_name(self.loc)));
        summary.insert("mf".into(), json!(format!("1x{}", p.mf_entries)));
        summary.insert("gf".into(), json!(format!("{}x{}", p.gf_tables, p.gf_entries)));
        summary.insert("repeats".into(), json!(p.repeats));
        summary.insert("cores_on_this_machine".into(), json!(cores));
        summary.insert("measured_on_this_machine".into(), json!(true));
        summary.insert("pipelines".into(), Value::Object(tree));
        let t = Table::new("threads")
            .with("pipeline", strs(&rows, |x| x.pipeline.clone()))
            .with("scheme", strs(&rows, |x| x.scheme.clone()))
            .with("threads", u64s(&rows, |x| x.threads as u64))
            .with("repeat", u64s(&rows, |x| x.repeat as u64))
            .with("misses", u64s(&rows, |x| x.misses))
            .with("max_worker_misses", u64s(&rows, |x| x.max_worker_misses))
            .with("wall_s", f64s(&rows, |x| r6(x.wall_ns as f64 / 1e9)))
            .with("cpu_s", f64s(&rows, |x| r6(x.cpu_ns as f64 / 1e9)))
            .with("throughput_misses_per_s", f64s(&rows, |x| r6(x.misses as f64 / (x.wall_ns as f64 / 1e9).max(1e-9))));
        RunOutput { summary, tables: vec![t] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tests::run;

    #[test]
    fn threads_quick_spreads_every_miss_over_the_workers_by_flow() {
        let out = run(&THREADS, &[("repeats", "2")]);
        let psc = &out.summary["pipelines"]["PSC"];
        let (mf, gf) = (&psc["mf"], &psc["gf"]);
        assert!(gf["misses"].as_u64().unwrap() > 0 && mf["misses"].as_u64().unwrap() > 0, "{psc}");
        for s in [mf, gf] {
            let misses = s["misses"].as_u64().unwrap();
            assert_eq!(s["threads"]["1"]["misses_per_core_max"].as_u64().unwrap(), misses);
            // Two workers split the misses: neither gets them all, nor fewer than a fifth.
            let two = s["threads"]["2"]["misses_per_core_max"].as_u64().unwrap();
            assert!(two < misses && two * 5 > misses * 2, "{s}");
            assert!(s["threads"]["2"]["throughput_misses_per_s"].as_f64().unwrap() > 0.0);
        }
        // Interleaved: repeat 0 for every thread count before repeat 1.
        assert_eq!(out.tables[0].rows(), 2 * 2 * 2);
        let ColumnData::U64(r) = &out.tables[0].columns[3].1 else { panic!() };
        assert_eq!(r, &[0, 0, 0, 0, 1, 1, 1, 1]);
        let o: BTreeMap<String, String> = [("threads".to_string(), "0".to_string())].into();
        assert!(THREADS.run(&o, true, &mut |_| {}).unwrap_err().to_string().contains("threads"));
    }

    #[test]
    fn rss_keeps_a_flow_on_one_worker_and_spreads_flows() {
        let mut count = [0u32; 4];
        for i in 0..4000u64 {
            let mut f = Flow::default();
            f.set(Field::NwSrc, 0x0a00_0000 + i);
            f.set(Field::TpDst, 80);
            let w = rss_worker(&f, 4);
            assert_eq!(w, rss_worker(&f, 4));
            count[w] += 1;
        }
        assert!(count.iter().all(|&c| (800..1200).contains(&c)), "{count:?}");
    }
}
