//! `gigaflow.dynamic` (Fig. 18): hit rate over time when a second workload arrives mid-run.

use super::*;

pub(super) const DYNAMIC: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.dynamic",
        "Dynamically arriving workloads (Fig. 18): a second workload of 50K new flows arrives once the first has arrived; hit rate and misses over time, MF 32K vs GF 4x8K",
        &[
            COMMON,
            &[ParamSpec::new("pipeline", "\"PSC\"", "Pipebench pipeline (paper: PSC)"), ParamSpec::new("locality", "\"high\"", "high or low (paper: high)")],
            CACHES,
            &[ParamSpec::new("bins", "36", "bins (equal packet counts) of the hit-rate series")],
        ],
    )
    // `flows` is per workload here: the paper's 100K unique flows are two workloads of 50K.
    .redefine(&[ParamSpec::new("flows", "50000", "unique flows of EACH workload (paper: 2 x 50K)")])
    .quick(&[("rules", "1000"), ("flows", "1500"), ("mf_entries", "960"), ("gf_entries", "240"), ("bins", "12")]),
    run,
};

#[derive(Deserialize)]
struct DynamicParams {
    #[serde(flatten)]
    common: Common,
    pipeline: String,
    locality: String,
    mf_entries: usize,
    gf_tables: usize,
    gf_entries: usize,
    bins: usize,
}

/// Two workloads of `cfg.n_flows` unique flows each, as the paper's Fig. 18 builds them: "100K
/// unique flows divided evenly across two workloads (50K each)", where "the incoming traffic
/// patterns (e.g., arrival times) remain the same, as new traffic flows arrive". One trace of
/// `2 × cfg.n_flows` flows is generated (seed `cfg.seed`, so both workloads draw on the same chains
/// and anchor packets, as halves of one trace do) and a seeded random half of its flows becomes the
/// second workload. With window timing the second is replayed with the first's timing from 5/9 of
/// the run (the paper: introduced at minute 5 of 9) until the first ends, so after the switch both
/// arrive at the same rate and the second's trace is cut where the run ends (its flows with no
/// packet before then are left out); with arrival timing the second starts when the first's last
/// flow has arrived and plays whole.
pub fn two_workloads(rs: &Ruleset, cfg: &TrafficConfig) -> Result<TwoWorkloads, String> {
    use innet_pipebench::traffic::TracePacket;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let n = cfg.n_flows;
    let whole = innet_pipebench::generate_traffic(rs, &TrafficConfig { n_flows: 2 * n, ..cfg.clone() })?;
    let mut second_of = vec![false; whole.flows.len()];
    second_of[..n.min(whole.flows.len())].fill(true);
    second_of.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x0d1a_5e1f_2b0c_0a7d));
    let a_end_ns = whole.packets.iter().rev().find(|p| !second_of[p.flow as usize]).map_or(0, |p| p.time_ns);
    let a_last_arrival_ns = whole.flows.iter().zip(&second_of).filter(|(_, &b)| !b).map(|(f, _)| f.start_ns).max().unwrap_or(0);
    let b_first_ns = whole.flows.iter().zip(&second_of).filter(|(_, &b)| b).map(|(f, _)| f.start_ns).min().unwrap_or(0);
    // Where a second-workload time lands in the run, if it does.
    let (start_ns, cut_ns) = match cfg.timing {
        Timing::Window { .. } => (a_end_ns / 9 * 5, a_end_ns),
        Timing::Arrivals { .. } => (a_last_arrival_ns, u64::MAX),
    };
    let at = |t: u64| start_ns.saturating_add(t.saturating_sub(b_first_ns));
    // Each kept packet with its original flow; the second workload's times mapped.
    let kept: Vec<TracePacket> = whole
        .packets
        .iter()
        .filter_map(|p| match second_of[p.flow as usize] {
            false => Some(*p),
            true => Some(TracePacket { time_ns: at(p.time_ns), flow: p.flow }).filter(|q| q.time_ns <= cut_ns),
        })
        .collect();
    let mut kept_pkts = vec![0u32; whole.flows.len()];
    for p in &kept {
        kept_pkts[p.flow as usize] += 1;
    }
    // New flow numbers: the first workload's flows in trace order, then the second's that play.
    let mut renum = vec![u32::MAX; whole.flows.len()];
    let mut flows = Vec::with_capacity(2 * n);
    for pass in [false, true] {
        for (i, f) in whole.flows.iter().enumerate() {
            if second_of[i] == pass && kept_pkts[i] > 0 {
                renum[i] = flows.len() as u32;
                let mut f = f.clone();
                f.n_packets = kept_pkts[i];
                if pass {
                    f.start_ns = at(f.start_ns);
                }
                flows.push(f);
            }
        }
    }
    let first_flows = whole.flows.len() - n;
    let seen: std::collections::HashSet<innet_ofswitch::fields::Flow> = flows[..first_flows].iter().map(|f| f.headers).collect();
    let shared = flows[first_flows..].iter().filter(|f| seen.contains(&f.headers)).count();
    let mut packets: Vec<TracePacket> = kept.into_iter().map(|p| TracePacket { time_ns: p.time_ns, flow: renum[p.flow as usize] }).collect();
    packets.sort_by_key(|p| (p.time_ns, p.flow));
    Ok(TwoWorkloads { traffic: Traffic { flows, packets }, second_at_ns: start_ns, first_flows, second_seen_before: shared })
}

/// What [`two_workloads`] builds.
pub struct TwoWorkloads {
    /// The merged trace: the first workload's flows are `0..first_flows`, the second's follow.
    pub traffic: Traffic,
    /// When the second workload starts (ns).
    pub second_at_ns: u64,
    pub first_flows: usize,
    /// How many second-workload flows repeat a first-workload flow's headers (0: a trace's flows
    /// are unique).
    pub second_seen_before: usize,
}

fn run(overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
    let p: DynamicParams = DYNAMIC.declaration.resolve(overrides, quick)?;
    if p.bins < 2 || p.bins > 10_000 {
        return Err(ExperimentError::bad_param("bins", p.bins, "2..=10000"));
    }
    let loc = locality("locality", &p.locality)?;
    let rs = p.common.ruleset(&p.pipeline).map_err(ExperimentError::Input)?;
    let pl = Pipeline::parse(&rs.text).map_err(|e| ExperimentError::Input(format!("{}: generated flow file: {e}", p.pipeline)))?;
    let cfg = p.common.traffic(loc, p.common.seed).map_err(|m| ExperimentError::param("timing", m))?;
    let TwoWorkloads { traffic, second_at_ns: switch_ns, first_flows, second_seen_before: shared } =
        two_workloads(&rs, &cfg).map_err(ExperimentError::Input)?;
    let end_ns = traffic.packets.last().map(|x| x.time_ns).unwrap_or(0);
    // Bins of equal packet counts: the paper replays its trace at a constant packet rate
    // (tgen, ~10 kpps), so its time axis is a packet axis; a bin's trace time is reported too.
    let n = traffic.packets.len();
    let switch_pkt = traffic.packets.partition_point(|x| x.time_ns < switch_ns);
    let per_bin = n.div_ceil(p.bins).max(1);
    let gf = GigaflowConfig { tables: p.gf_tables, entries_per_table: p.gf_entries, ..p.common.gf() };
    let runs = Sweep::over([("mf", CacheSpec::Megaflow { entries: p.mf_entries, eviction: Eviction::None, max_masks: usize::MAX }), ("gf", CacheSpec::Gigaflow(gf))]);
    let nic = p.common.nic();
    // Each cache's bins of the series and its summary.
    let results = runs.run(progress, |(_, spec), _| {
        let mut o = offload(&pl, spec, nic).map_err(ExperimentError::Input)?;
        // (packets, hits, entries at the end, trace time of the first packet)
        let mut bins = vec![(0u64, 0u64, 0usize, 0u64); n.div_ceil(per_bin)];
        // Before: the second half of the first workload's packets; after: every later packet.
        let (mut before, mut after, mut second) = ((0u64, 0u64), (0u64, 0u64), (0u64, 0u64));
        for (i, (t, pkt)) in traffic.iter().enumerate() {
            let hit = o.process(pkt, t);
            if traffic.packets[i].flow as usize >= first_flows {
                second.0 += 1;
                second.1 += hit as u64;
            }
            let b = &mut bins[i / per_bin];
            if b.0 == 0 {
                b.3 = t;
            }
            b.0 += 1;
            b.1 += hit as u64;
            b.2 = o.entries();
            if i >= switch_pkt {
                after.0 += 1;
                after.1 += hit as u64;
            } else if i >= switch_pkt / 2 {
                before.0 += 1;
                before.1 += hit as u64;
            }
        }
        let r = result_of(&o).map_err(ExperimentError::Invariant)?;
        let frac = |x: (u64, u64)| r6(x.1 as f64 / x.0.max(1) as f64);
        let mut v = result_json(&r);
        let o2 = v.as_object_mut().unwrap();
        o2.insert("hit_rate_before".into(), json!(frac(before)));
        o2.insert("hit_rate_after".into(), json!(frac(after)));
        o2.insert("misses_after".into(), json!(after.0 - after.1));
        o2.insert("second_workload_hit_rate".into(), json!(frac(second)));
        Ok((bins, v))
    })?;
    let mut schemes = Map::new();
    let (mut i_col, mut t_col, mut s_col, mut pk_col, mut hit_col, mut miss_col, mut hr_col, mut ent_col) = (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for ((name, _), (bins, v)) in runs.points.iter().zip(results) {
        for (k, b) in bins.iter().enumerate() {
            i_col.push((k * per_bin) as u64);
            t_col.push(r6(b.3 as f64 / 1e9));
            s_col.push(name.to_string());
            pk_col.push(b.0);
            hit_col.push(b.1);
            miss_col.push(b.0 - b.1);
            hr_col.push(r6(b.1 as f64 / b.0.max(1) as f64));
            ent_col.push(b.2 as u64);
        }
        schemes.insert(name.to_string(), v);
    }
    let mut summary = Map::new();
    summary.insert("experiment".into(), json!("gigaflow.dynamic"));
    p.common.describe(&mut summary);
    summary.insert("pipeline".into(), json!(p.pipeline));
    summary.insert("locality".into(), json!(loc_name(loc)));
    summary.insert("flows_per_workload".into(), json!(p.common.flows));
    summary.insert("second_workload_at_s".into(), json!(r6(switch_ns as f64 / 1e9)));
    summary.insert("second_workload_at_packet".into(), json!(switch_pkt));
    summary.insert("packets".into(), json!(n));
    summary.insert("end_s".into(), json!(r6(end_ns as f64 / 1e9)));
    summary.insert("second_workload_flows_seen_before".into(), json!(shared));
    summary.insert("second_workload_flows_in_run".into(), json!(traffic.flows.len() - first_flows));
    summary.insert("second_workload_packets".into(), json!(traffic.packets.iter().filter(|x| x.flow as usize >= first_flows).count()));
    summary.insert("schemes".into(), Value::Object(schemes));
    let t = Table::new("series")
        .with("packet", ColumnData::U64(i_col))
        .with("time_s", ColumnData::F64(t_col))
        .with("scheme", ColumnData::Str(s_col))
        .with("packets", ColumnData::U64(pk_col))
        .with("hits", ColumnData::U64(hit_col))
        .with("misses", ColumnData::U64(miss_col))
        .with("hit_rate", ColumnData::F64(hr_col))
        .with("entries", ColumnData::U64(ent_col));
    Ok(RunOutput { summary, tables: vec![t] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tests::run;

    #[test]
    fn two_workloads_split_one_trace_and_replay_the_second_at_the_same_rate() {
        let rs = innet_pipebench::render_pipeline("PSC", Profile::Acl, 1000, 3).unwrap();
        let n = 2000;
        let cfg = TrafficConfig { n_flows: n, seed: 3, locality: Locality::High, ..TrafficConfig::default() };
        let whole = innet_pipebench::generate_traffic(&rs, &TrafficConfig { n_flows: 2 * n, ..cfg.clone() }).unwrap();
        let w = two_workloads(&rs, &cfg).unwrap();
        let t = &w.traffic;
        // Halves of one trace of unique flows: the first workload whole, the second's flows all
        // from the same trace, none repeating a first-workload flow.
        assert_eq!(w.first_flows, n);
        assert_eq!(w.second_seen_before, 0);
        let trace: std::collections::HashSet<_> = whole.flows.iter().map(|f| f.headers).collect();
        assert!(t.flows.iter().all(|f| trace.contains(&f.headers)));
        let heads: std::collections::HashSet<_> = t.flows.iter().map(|f| f.headers).collect();
        assert_eq!(heads.len(), t.flows.len());
        // Every flow plays, its packet count is what the trace holds for it, in time order.
        let mut count = vec![0u32; t.flows.len()];
        for p in &t.packets {
            count[p.flow as usize] += 1;
        }
        assert!(t.flows.iter().zip(&count).all(|(f, &c)| c > 0 && c == f.n_packets));
        assert!(t.packets.windows(2).all(|p| p[0].time_ns <= p[1].time_ns));
        // The second starts at 5/9 of the first's span and ends with it, cut there: part of it
        // plays (its heavy flows, which appear first, all do).
        let first_end = t.packets.iter().filter(|p| (p.flow as usize) < n).map(|p| p.time_ns).max().unwrap();
        let second: Vec<u64> = t.packets.iter().filter(|p| p.flow as usize >= n).map(|p| p.time_ns).collect();
        assert_eq!(w.second_at_ns, first_end / 9 * 5);
        assert!(second.iter().all(|&x| x >= w.second_at_ns && x <= first_end));
        let second_flows = t.flows.len() - n;
        assert!(second_flows > n / 4 && second_flows < n, "{second_flows}");
        // Same timing: after the switch both workloads arrive at about the same rate.
        let first_after = t.packets.iter().filter(|p| (p.flow as usize) < n && p.time_ns >= w.second_at_ns).count() as f64;
        let ratio = second.len() as f64 / first_after;
        assert!((0.7..1.4).contains(&ratio), "second / first packets after the switch: {ratio}");
        // Both halves draw on the same chains (sub-traversals the second can share).
        let chains = |r: std::ops::Range<usize>| t.flows[r].iter().map(|f| f.chain).collect::<std::collections::HashSet<_>>();
        let (a, b) = (chains(0..n), chains(n..t.flows.len()));
        assert!(b.intersection(&a).count() * 2 > b.len(), "{} of {} chains shared", b.intersection(&a).count(), b.len());
    }

    #[test]
    fn dynamic_quick_series_conserves_packets_and_shows_the_second_workload() {
        let out = run(&DYNAMIC, &[]);
        let t = &out.tables[0];
        assert_eq!(t.rows(), 24);
        assert!(out.summary["second_workload_at_packet"].as_u64().unwrap() > 0);
        let col = |n: &str| {
            t.columns
                .iter()
                .find(|c| c.0 == n)
                .map(|c| c.1.clone())
                .unwrap()
        };
        let (ColumnData::U64(pk), ColumnData::U64(h), ColumnData::U64(m)) =
            (col("packets"), col("hits"), col("misses"))
        else {
            panic!()
        };
        for s in ["mf", "gf"] {
            let x = &out.summary["schemes"][s];
            let rows: Vec<usize> = (0..t.rows())
                .filter(|&i| matches!(&t.columns[2].1, ColumnData::Str(v) if v[i] == s))
                .collect();
            assert_eq!(
                rows.iter().map(|&i| pk[i]).sum::<u64>(),
                x["packets"].as_u64().unwrap()
            );
            assert_eq!(
                rows.iter().map(|&i| h[i]).sum::<u64>(),
                x["hits"].as_u64().unwrap()
            );
            assert!(rows.iter().all(|&i| h[i] + m[i] == pk[i]));
            let (ColumnData::U64(e), cap) = (col("entries"), x["capacity"].as_u64().unwrap())
            else {
                panic!()
            };
            // No eviction (the artifact's caches): occupancy only grows, up to the capacity.
            assert!(
                rows.windows(2)
                    .all(|w| e[w[0]] <= e[w[1]] && e[w[1]] <= cap),
                "{x}"
            );
            for k in [
                "hit_rate_before",
                "hit_rate_after",
                "second_workload_hit_rate",
            ] {
                assert!((0.0..=1.0).contains(&x[k].as_f64().unwrap()), "{x}");
            }
        }
        assert!(out.summary["second_workload_at_s"].as_f64().unwrap() > 0.0);
        // Halves of one trace of unique flows: none of the second's flows occurred before.
        assert_eq!(out.summary["second_workload_flows_seen_before"].as_u64(), Some(0));
        let (in_run, per) = (out.summary["second_workload_flows_in_run"].as_u64().unwrap(), out.summary["flows_per_workload"].as_u64().unwrap());
        assert!(in_run > 0 && in_run <= per);
    }
}
