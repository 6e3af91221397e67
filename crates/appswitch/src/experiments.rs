//! The application switch's experiments: the paper's figures on real packets (a real Cassandra,
//! network namespaces, `innet switch run`) and the pcap-replay throughput. They are declared here
//! like every other experiment; their runs orchestrate processes, so each names the Python
//! function that runs it (`innet.appswitch.<module>:<function>`, called with the experiment's
//! name and the parameters the registry resolved). This list is the only one of them.

use innet_registry::{Experiment, ParamSpec, PythonExperiment};

const fn p(name: &'static str, default: &'static str, doc: &'static str) -> ParamSpec {
    ParamSpec { name, default, doc }
}

/// `own` parameters, then the §5.1 workload's (the same in every Cassandra experiment).
fn cql_workload(own: &[ParamSpec]) -> Vec<ParamSpec> {
    let mut v = own.to_vec();
    v.extend([
        p("tables", "16", "tables, name lengths 1..tables"),
        p("keys_per_table", "256", "keys per table"),
        p("protocol", "5", "CQL native protocol version (4 or 5)"),
        p("seed", "1", "workload seed"),
    ]);
    v
}

const QUERIES: ParamSpec = p("queries", "1024", "read queries per run (per point, per client)");
const CACHE: ParamSpec = p("cache_entries", "64", "switch cache capacity (keys)");
const ZIPF: ParamSpec = p("zipf", "1.0", "Zipf exponent of the key popularity");

/// Every experiment of the application switch.
pub fn experiments() -> Vec<Box<dyn Experiment>> {
    fn e(
        name: &'static str,
        module: &'static str,
        description: &'static str,
        params: Vec<ParamSpec>,
        quick: &'static [(&'static str, &'static str)],
    ) -> Box<dyn Experiment> {
        Box::new(PythonExperiment { name, description, params, quick, module })
    }
    vec![
        e(
            "appswitch.turnaround",
            "innet.appswitch.experiments:turnaround",
            "Fig. 12 on real packets: Cassandra 5.0 + the application switch in network namespaces; \
             mean turnaround normal vs with cache, hit vs miss (needs root)",
            cql_workload(&[
                QUERIES,
                CACHE,
                ZIPF,
                p("rounds", "10", "rounds of one normal and one cached pass (order alternating per round)"),
            ]),
            &[("queries", "512"), ("rounds", "2"), ("tables", "8"), ("keys_per_table", "64")],
        ),
        e(
            "appswitch.cachesize",
            "innet.appswitch.experiments:sweep",
            "Fig. 15 on real packets: mean turnaround and hit ratio vs cache size (4..1,024), Cassandra 5.0 (needs root)",
            cql_workload(&[p("sizes", "\"4,16,64,256,1024\"", "cache sizes (keys)"), p("queries", "1000", QUERIES.doc), ZIPF]),
            &[("sizes", "\"4,64,512\""), ("queries", "400"), ("tables", "8"), ("keys_per_table", "64")],
        ),
        e(
            "appswitch.skew",
            "innet.appswitch.experiments:sweep",
            "Fig. 16 on real packets: mean turnaround normal vs with cache for Zipf k = 0.5..1.5 (needs root)",
            cql_workload(&[p("zipfs", "\"0.5,0.75,1.0,1.25,1.5\"", "Zipf exponents"), QUERIES, CACHE]),
            &[("zipfs", "\"0.5,1.5\""), ("queries", "400"), ("tables", "8"), ("keys_per_table", "64")],
        ),
        e(
            "appswitch.readwrite",
            "innet.appswitch.experiments:sweep",
            "Fig. 18 on real packets: mean turnaround normal vs with cache for read:write 10:0..0:10 (needs root)",
            cql_workload(&[
                p("read_ratios", "\"1.0,0.9,0.5,0.1,0.0\"", "fraction of reads (the rest are UPDATEs)"),
                p("queries", "1024", "operations per point"),
                CACHE,
                ZIPF,
            ]),
            &[("read_ratios", "\"1.0,0.5,0.0\""), ("queries", "400"), ("tables", "8"), ("keys_per_table", "64")],
        ),
        e(
            "appswitch.throughput",
            "innet.appswitch.experiments:throughput",
            "Fig. 23: packets per second through the application switch program from a pcap replay \
             (in memory, one core), CQL and Redis, all-hit and all-miss captures",
            vec![
                p("exchanges", "10000", "request/answer/ACK exchanges per capture"),
                p("repeat", "20", "replays of each capture"),
            ],
            &[("exchanges", "1000"), ("repeat", "3")],
        ),
        e(
            "appswitch.connections",
            "innet.appswitch.passes:connections",
            "Fig. 17 on real packets: mean turnaround normal vs with cache for 1..64 connections \
             per client and 1..2 client namespaces, Cassandra 5.0 (needs root)",
            cql_workload(&[
                p("conns", "\"1,2,4,8,16,32,64\"", "connections per client"),
                p("clients", "\"1,2\"", "client machines (namespaces), 1 or 2"),
                QUERIES,
                CACHE,
                ZIPF,
            ]),
            &[("conns", "\"1,8\""), ("clients", "\"1,2\""), ("queries", "150"), ("tables", "4"), ("keys_per_table", "64")],
        ),
        e(
            "appswitch.lexical",
            "innet.appswitch.passes:lexical",
            "Fig. 19 on real packets: mean turnaround with lexical analysis vs a fixed-offset key \
             parser vs normal, literal SELECTs of fixed-length keys, Cassandra 5.0 (needs root)",
            cql_workload(&[
                p("key_lens", "\"4,8,16\"", "table-name and key lengths N (one table per point)"),
                QUERIES,
                p("rounds", "6", "passes per mode and point (mode order rotated per round)"),
                CACHE,
                ZIPF,
            ]),
            &[("key_lens", "\"8\""), ("queries", "300"), ("rounds", "1"), ("tables", "8"), ("keys_per_table", "64")],
        ),
        e(
            "appswitch.timeline",
            "innet.appswitch.timeline:timeline",
            "Figs. 13-14 on real packets: one query's frames timestamped on the client's, both switch \
             ports' and the server's interfaces, the paper's marks A-E, for cache misses and hits (needs root)",
            vec![
                p("pairs", "20", "miss/hit query pairs (a new key, then the same key again)"),
                p("table_len", "8", "the §5.1 table queried: name and key length N (1..16)"),
                p("keys_per_table", "64", "keys loaded per table"),
                p("gap_ms", "50", "pause before each query (ms), so each is alone on the wire"),
                p("protocol", "5", "CQL native protocol version (4 or 5)"),
                p("seed", "1", "workload seed"),
            ],
            &[("pairs", "5")],
        ),
        e(
            "appswitch.cluster",
            "innet.appswitch.cluster:cluster",
            "Fig. 22 on real packets: a two-node Cassandra 5.0 cluster (RF 1, consistency ONE), the \
             client on Server1, the switch in front; hit/miss x Server1/Server2 and the paper's \
             estimate of the coordinator cache (needs root)",
            cql_workload(&[QUERIES, CACHE, ZIPF, p("heap_mb", "512", "heap of each Cassandra node (MiB)")]),
            &[("queries", "300"), ("tables", "8"), ("keys_per_table", "64")],
        ),
    ]
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
            let Runner::Python { module, quick } = e.runner() else { panic!("{} should run in Python", info.name) };
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
