//! The application switch's experiments: the paper's figures on real packets (a real Cassandra,
//! network namespaces, `innet switch run`) and the in-memory replay throughput (Fig. 23,
//! [`crate::throughput`], run here). The real-packet ones are declared here like every other
//! experiment; their runs orchestrate processes, so each names the Python function that runs it
//! (`innet.appswitch.<module>:<function>`, called with the experiment's name and the parameters
//! the registry resolved). This list is the only one of them.

use innet_registry::{Declaration, Experiment, ParamSpec, PythonExperiment};

/// The §5.1 workload's parameters (the same in every Cassandra experiment, after its own).
const CQL_WORKLOAD: &[ParamSpec] = &[
    ParamSpec::new("tables", "16", "tables, name lengths 1..tables"),
    ParamSpec::new("keys_per_table", "256", "keys per table"),
    ParamSpec::new("protocol", "5", "CQL native protocol version (4 or 5)"),
    ParamSpec::new("seed", "1", "workload seed"),
];

const QUERIES: ParamSpec = ParamSpec::new("queries", "1024", "read queries per run (per point, per client)");
const CACHE: ParamSpec = ParamSpec::new("cache_entries", "64", "switch cache capacity (keys)");
const ZIPF: ParamSpec = ParamSpec::new("zipf", "1.0", "Zipf exponent of the key popularity");

/// Every experiment of the application switch, with the Python function that runs it.
const EXPERIMENTS: &[(Declaration, &str)] = &[
    (
        Declaration::new(
            "appswitch.turnaround",
            "Fig. 12 on real packets: Cassandra 5.0 + the application switch in network namespaces; \
             mean turnaround normal vs with cache, hit vs miss (needs root)",
            &[&[QUERIES, CACHE, ZIPF, ParamSpec::new("rounds", "10", "rounds of one normal and one cached pass (order alternating per round)")], CQL_WORKLOAD],
        )
        .quick(&[("queries", "512"), ("rounds", "2"), ("tables", "8"), ("keys_per_table", "64")]),
        "innet.appswitch.experiments:turnaround",
    ),
    (
        Declaration::new(
            "appswitch.cachesize",
            "Fig. 15 on real packets: mean turnaround and hit ratio vs cache size (4..1,024), Cassandra 5.0 (needs root)",
            &[&[ParamSpec::new("sizes", "\"4,16,64,256,1024\"", "cache sizes (keys)"), ParamSpec::new("queries", "1000", QUERIES.doc), ZIPF], CQL_WORKLOAD],
        )
        .quick(&[("sizes", "\"4,64,512\""), ("queries", "400"), ("tables", "8"), ("keys_per_table", "64")]),
        "innet.appswitch.experiments:sweep",
    ),
    (
        Declaration::new(
            "appswitch.skew",
            "Fig. 16 on real packets: mean turnaround normal vs with cache for Zipf k = 0.5..1.5 (needs root)",
            &[&[ParamSpec::new("zipfs", "\"0.5,0.75,1.0,1.25,1.5\"", "Zipf exponents"), QUERIES, CACHE], CQL_WORKLOAD],
        )
        .quick(&[("zipfs", "\"0.5,1.5\""), ("queries", "400"), ("tables", "8"), ("keys_per_table", "64")]),
        "innet.appswitch.experiments:sweep",
    ),
    (
        Declaration::new(
            "appswitch.readwrite",
            "Fig. 18 on real packets: mean turnaround normal vs with cache for read:write 10:0..0:10 (needs root)",
            &[
                &[
                    ParamSpec::new("read_ratios", "\"1.0,0.9,0.5,0.1,0.0\"", "fraction of reads (the rest are UPDATEs)"),
                    ParamSpec::new("queries", "1024", "operations per point"),
                    CACHE,
                    ZIPF,
                ],
                CQL_WORKLOAD,
            ],
        )
        .quick(&[("read_ratios", "\"1.0,0.5,0.0\""), ("queries", "400"), ("tables", "8"), ("keys_per_table", "64")]),
        "innet.appswitch.experiments:sweep",
    ),
    (
        Declaration::new(
            "appswitch.connections",
            "Fig. 17 on real packets: mean turnaround normal vs with cache for 1..64 connections \
             per client and 1..2 client namespaces, Cassandra 5.0 (needs root)",
            &[
                &[
                    ParamSpec::new("conns", "\"1,2,4,8,16,32,64\"", "connections per client"),
                    ParamSpec::new("clients", "\"1,2\"", "client machines (namespaces), 1 or 2"),
                    QUERIES,
                    CACHE,
                    ZIPF,
                ],
                CQL_WORKLOAD,
            ],
        )
        .quick(&[("conns", "\"1,8\""), ("clients", "\"1,2\""), ("queries", "150"), ("tables", "4"), ("keys_per_table", "64")]),
        "innet.appswitch.passes:connections",
    ),
    (
        Declaration::new(
            "appswitch.lexical",
            "Fig. 19 on real packets: mean turnaround with lexical analysis vs a fixed-offset key \
             parser vs normal, literal SELECTs of fixed-length keys, Cassandra 5.0 (needs root)",
            &[
                &[
                    ParamSpec::new("key_lens", "\"4,8,16\"", "table-name and key lengths N (one table per point)"),
                    QUERIES,
                    ParamSpec::new("rounds", "6", "passes per mode and point (mode order rotated per round)"),
                    CACHE,
                    ZIPF,
                ],
                CQL_WORKLOAD,
            ],
        )
        .quick(&[("key_lens", "\"8\""), ("queries", "300"), ("rounds", "1"), ("tables", "8"), ("keys_per_table", "64")]),
        "innet.appswitch.passes:lexical",
    ),
    (
        Declaration::new(
            "appswitch.timeline",
            "Figs. 13-14 on real packets: one query's frames timestamped on the client's, both switch \
             ports' and the server's interfaces, the paper's marks A-E, for cache misses and hits (needs root)",
            &[&[
                ParamSpec::new("pairs", "20", "miss/hit query pairs (a new key, then the same key again)"),
                ParamSpec::new("table_len", "8", "the §5.1 table queried: name and key length N (1..16)"),
                ParamSpec::new("keys_per_table", "64", "keys loaded per table"),
                ParamSpec::new("gap_ms", "50", "pause before each query (ms), so each is alone on the wire"),
                ParamSpec::new("protocol", "5", "CQL native protocol version (4 or 5)"),
                ParamSpec::new("seed", "1", "workload seed"),
            ]],
        )
        .quick(&[("pairs", "5")]),
        "innet.appswitch.timeline:timeline",
    ),
    (
        Declaration::new(
            "appswitch.cluster",
            "Fig. 22 on real packets: a two-node Cassandra 5.0 cluster (RF 1, consistency ONE), the \
             client on Server1, the switch in front; hit/miss x Server1/Server2 and the paper's \
             estimate of the coordinator cache (needs root)",
            &[&[QUERIES, CACHE, ZIPF, ParamSpec::new("heap_mb", "512", "heap of each Cassandra node (MiB)")], CQL_WORKLOAD],
        )
        .quick(&[("queries", "300"), ("tables", "8"), ("keys_per_table", "64")]),
        "innet.appswitch.cluster:cluster",
    ),
];

/// Every experiment of the application switch.
pub fn experiments() -> Vec<Box<dyn Experiment>> {
    let real = EXPERIMENTS.iter().map(|&(declaration, module)| Box::new(PythonExperiment { declaration, module }) as Box<dyn Experiment>);
    real.chain([Box::new(crate::throughput::Throughput) as Box<dyn Experiment>]).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use innet_registry::{resolve_table, Runner};

    use super::*;

    #[test]
    fn every_default_and_quick_value_resolves_and_names_a_declared_parameter() {
        for e in experiments() {
            let info = e.info();
            let Runner::Python { module, quick } = e.runner() else {
                assert_eq!(info.name, "appswitch.throughput", "only the in-memory replay runs in Rust");
                continue;
            };
            let (m, f) = module.split_once(':').expect("module:function");
            assert!(m.starts_with("innet.appswitch.") && !f.is_empty(), "{}: runner {module}", info.name);
            for (k, _) in quick {
                assert!(info.params.iter().any(|p| p.name == *k), "{}: quick key {k} is not a parameter", info.name);
            }
            let t = resolve_table(&info, quick, true, &BTreeMap::new()).unwrap();
            assert_eq!(t.len(), info.params.len(), "{}", info.name);
        }
    }

    #[test]
    fn bad_values_are_rejected_with_the_parameter_named() {
        let e = experiments().into_iter().find(|e| e.info().name == "appswitch.turnaround").unwrap();
        let user = BTreeMap::from([("queries".to_string(), "many".to_string())]);
        let err = resolve_table(&e.info(), &[], false, &user).unwrap_err().to_string();
        assert!(err.contains("'queries'") && err.contains("integer"), "{err}");
        let mut noop = |_: f64| {};
        let err = e.run(&BTreeMap::new(), true, &mut noop).unwrap_err().to_string();
        assert!(err.contains("innet.appswitch.experiments:turnaround"), "{err}");
    }
}
