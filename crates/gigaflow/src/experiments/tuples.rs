//! `gigaflow.tuples` (Fig. 4, §3): how often a tuple of header fields recurs, by the number of
//! fields in the tuple (5 → 1), in Pipebench's ClassBench-style ruleset and in the traffic made
//! from it. For each k, every k-subset of the five fields (source and destination prefix,
//! protocol, source and destination port range; in traffic the packet's values) is projected
//! and the items per distinct tuple counted; the mean over the subsets is the figure's bar. Fewer
//! fields recur more: the sharing sub-traversal caching exploits.

use super::*;
use innet_ofswitch::fields::Field;
use innet_pipebench::classbench::RuleGen;
use rand::SeedableRng;
use std::collections::HashSet;

pub(super) const TUPLES: GfExperiment = GfExperiment {
    declaration: Declaration::new(
        "gigaflow.tuples",
        "Reoccurrence of header-field tuples by tuple width (5 to 1) in the ClassBench-style ruleset and in Pipebench traffic (Fig. 4)",
        &[
            COMMON,
            &[
                ParamSpec::new("ruleset_rules", "200000", "ClassBench-style rules counted (the paper's Fig. 4 ruleset has 200,000)"),
                ParamSpec::new("pipeline", "\"PSC\"", "Pipebench pipeline whose traffic (high and low locality, `rules` and `flows`) is counted"),
            ],
        ],
    )
    .quick(&[("rules", "1000"), ("flows", "3000"), ("ruleset_rules", "20000")]),
    run,
};

#[derive(Deserialize)]
struct TuplesParams {
    #[serde(flatten)]
    common: Common,
    ruleset_rules: usize,
    pipeline: String,
}

const FIELDS: [&str; 5] = ["src", "dst", "proto", "sport", "dport"];

/// Items per distinct tuple for every non-empty subset of the five fields (bit i = FIELDS[i]),
/// given each item's five field values.
fn per_subset(items: &[[u64; 5]]) -> Vec<(u8, usize, f64)> {
    (1u8..32)
        .map(|subset| {
            let distinct: HashSet<[u64; 5]> = items.iter().map(|v| std::array::from_fn(|i| if subset >> i & 1 == 1 { v[i] } else { u64::MAX })).collect();
            (subset, distinct.len(), items.len() as f64 / distinct.len().max(1) as f64)
        })
        .collect()
}

fn subset_name(subset: u8) -> String {
    (0..5).filter(|i| subset >> i & 1 == 1).map(|i| FIELDS[i]).collect::<Vec<_>>().join("+")
}

/// Mean items per tuple over the subsets of each size: index k-1 for k fields.
fn by_width(rows: &[(u8, usize, f64)]) -> [f64; 5] {
    std::array::from_fn(|i| {
        let k = i as u32 + 1;
        let v: Vec<f64> = rows.iter().filter(|r| r.0.count_ones() == k).map(|r| r.2).collect();
        v.iter().sum::<f64>() / v.len() as f64
    })
}

fn run(overrides: &BTreeMap<String, String>, quick: bool, progress: Progress<'_>) -> Result<RunOutput, ExperimentError> {
    let p: TuplesParams = TUPLES.declaration.resolve(overrides, quick)?;
    if p.ruleset_rules == 0 {
        return Err(ExperimentError::bad_param("ruleset_rules", 0, "at least 1"));
    }
    let profile = Profile::parse(&p.common.profile).map_err(|m| ExperimentError::param("profile", m))?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(p.common.seed);
    let gen = RuleGen::new(profile, &mut rng);
    let rules: Vec<[u64; 5]> = (0..p.ruleset_rules)
        .map(|_| {
            let r = gen.rule(&mut rng);
            let prefix = |x: innet_pipebench::classbench::Prefix| (x.addr as u64) << 8 | x.len as u64;
            [prefix(r.src), prefix(r.dst), r.proto.map_or(256, |x| x as u64), (r.sport.lo as u64) << 16 | r.sport.hi as u64, (r.dport.lo as u64) << 16 | r.dport.hi as u64]
        })
        .collect();
    let mut sources = vec![("ruleset".to_string(), per_subset(&rules))];
    progress(0.3);
    let traffic = Sweep::over([Locality::High, Locality::Low]).run(&mut |f| progress(0.3 + 0.7 * f), |&loc, _| {
        let (_, _, traffic) = inputs(&p.pipeline, loc, &p.common).map_err(ExperimentError::Input)?;
        let flows: Vec<[u64; 5]> = traffic.flows.iter().map(|f| [Field::NwSrc, Field::NwDst, Field::NwProto, Field::TpSrc, Field::TpDst].map(|k| f.headers.get(k))).collect();
        Ok((format!("traffic_{}", loc_name(loc)), per_subset(&flows)))
    })?;
    sources.extend(traffic);
    let mut summary = Map::new();
    summary.insert("experiment".into(), json!("gigaflow.tuples"));
    p.common.describe(&mut summary);
    summary.insert("ruleset_rules".into(), json!(p.ruleset_rules));
    summary.insert("pipeline".into(), json!(p.pipeline));
    for (name, rows) in &sources {
        let w = by_width(rows);
        let mut v: Map<String, Value> = (1..=5).map(|k| (format!("k{k}"), json!(r6(w[k - 1])))).collect();
        // The paper's "a sub-traversal matching between 1 and 4 headers can be shared by about
        // 856 flows (on average)": the mean over the widths 1-4.
        v.insert("mean_k1_to_k4".into(), json!(r6(w[..4].iter().sum::<f64>() / 4.0)));
        summary.insert(name.clone(), Value::Object(v));
    }
    let all: Vec<(&str, u8, usize, f64)> = sources.iter().flat_map(|(n, rows)| rows.iter().map(move |r| (n.as_str(), r.0, r.1, r.2))).collect();
    let t = Table::new("tuples")
        .with("source", strs(&all, |x| x.0.to_string()))
        .with("fields", strs(&all, |x| subset_name(x.1)))
        .with("k", u64s(&all, |x| x.1.count_ones() as u64))
        .with("distinct_tuples", u64s(&all, |x| x.2 as u64))
        .with("items_per_tuple", f64s(&all, |x| r6(x.3)));
    Ok(RunOutput { summary, tables: vec![t] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tests::run;

    #[test]
    fn fewer_fields_recur_more_and_high_locality_recurs_more_than_low() {
        let out = run(&TUPLES, &[]);
        let s = &out.summary;
        let k = |src: &str, k: usize| s[src][format!("k{k}")].as_f64().unwrap();
        for src in ["ruleset", "traffic_high", "traffic_low"] {
            for w in 1..5 {
                assert!(k(src, w) >= k(src, w + 1), "{src}: k{w} {} < k{} {}", k(src, w), w + 1, k(src, w + 1));
            }
            assert!(k(src, 5) >= 1.0);
        }
        assert!(k("ruleset", 1) > 10.0 * k("ruleset", 5), "{s:?}");
        assert!(k("traffic_high", 2) > k("traffic_low", 2), "{s:?}");
        assert_eq!(out.tables[0].rows(), 3 * 31);
    }

    #[test]
    fn a_hand_counted_set_of_items() {
        // Two items share everything but the destination port; a third shares only the source.
        let items = [[1, 2, 6, 5, 80], [1, 2, 6, 5, 443], [1, 9, 17, 7, 53]];
        let rows = per_subset(&items);
        let get = |sub: u8| rows.iter().find(|r| r.0 == sub).unwrap().2;
        assert_eq!(get(0b00001), 3.0); // src: one tuple
        assert_eq!(get(0b00011), 1.5); // src+dst: two tuples
        assert_eq!(get(0b11111), 1.0);
        assert_eq!(get(0b01111), 1.5); // without dport
        assert_eq!(subset_name(0b10001), "src+dport");
    }
}
