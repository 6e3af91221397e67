//! Cache correctness against the slow path: on random pipelines and on the example pipelines,
//! every Megaflow-cache hit and every Gigaflow hit gives exactly the slow path's final flow and
//! outputs (headers of every emitted packet); no table ever holds more than its capacity or
//! more masks than its limit; and hits + misses = packets.

use innet_ofswitch::fields::{Field, Flow};
use innet_gigaflow::ltm::{GigaflowCache, GigaflowConfig};
use innet_gigaflow::megaflow::{Eviction, MegaflowCache};
use innet_ofswitch::packetgen::{random_packets, random_pipeline};
use innet_gigaflow::partition::Scheme;
use innet_ofswitch::{LookupWildcards, Pipeline};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A stream with reuse: packets drawn from a pool, half of them with random bits flipped in a
/// few headers (so they land inside or just outside cached wildcards).
fn stream(pipeline: &Pipeline, n: usize, seed: u64) -> Vec<Flow> {
    let pool = random_packets(pipeline, 40, 4, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    (0..n)
        .map(|_| {
            let mut p = pool[rng.gen_range(0..pool.len())];
            if rng.gen_bool(0.5) {
                let f = [Field::NwSrc, Field::NwDst, Field::DlSrc, Field::DlDst][rng.gen_range(0..4)];
                p.set(f, p.get(f) ^ (1 << rng.gen_range(0..f.bits())));
                if rng.gen_bool(0.3) && matches!(p.get(Field::NwProto), 6 | 17) {
                    p.set(Field::TpSrc, rng.gen_range(0..65536));
                }
            }
            p
        })
        .collect()
}

struct Counts {
    mf_hits: u64,
    gf_hits: u64,
}

fn check(pipeline: &Pipeline, packets: &[Flow], mf: &mut MegaflowCache, gf: &mut GigaflowCache) -> Counts {
    let (mut out, mut outs) = (Flow::default(), Vec::new());
    for (i, p) in packets.iter().enumerate() {
        let now = i as u64 * 1_000;
        let t = pipeline.trace(p);
        let expected: Vec<(u32, Flow)> = t.outputs.iter().map(|o| (o.port, o.headers)).collect();
        if mf.lookup(p, now, &mut out, &mut outs) {
            assert_eq!(out, t.final_flow, "megaflow hit, packet {i}: final flow {p:?}");
            assert_eq!(outs, expected, "megaflow hit, packet {i}: outputs {p:?}");
        } else {
            mf.install(&t, now);
        }
        if gf.lookup(p, now, &mut out, &mut outs) {
            assert_eq!(out, t.final_flow, "gigaflow hit, packet {i}: final flow {p:?}");
            assert_eq!(outs, expected, "gigaflow hit, packet {i}: outputs {p:?}");
        } else {
            // The traversal as this cache's upcalls make it (its lookup wildcards): the same
            // outputs, masks that may differ.
            let tg = pipeline.trace_with(p, gf.cfg.lookup_wildcards);
            assert_eq!((tg.final_flow, tg.outputs.len()), (t.final_flow, t.outputs.len()), "packet {i}: lookup wildcards change no answer");
            gf.install(&tg, now);
        }
        assert!(mf.len() <= mf.table.capacity);
        for tb in &gf.tables {
            assert!(tb.len() <= tb.capacity);
            assert!(tb.n_masks() < gf.cfg.max_masks);
        }
        if i % 50 == 49 {
            mf.expire(now);
            gf.expire(now);
        }
    }
    for s in [mf.stats, gf.stats.cache] {
        assert_eq!(s.hits + s.misses, s.packets);
        assert_eq!(s.packets, packets.len() as u64);
    }
    let inserted = gf.stats.entries_inserted - gf.stats.expired_idle;
    assert_eq!(gf.len() as u64, inserted, "entries conserved");
    Counts { mf_hits: mf.stats.hits, gf_hits: gf.stats.cache.hits }
}

fn eviction(i: u8) -> Eviction {
    [Eviction::None, Eviction::Lru, Eviction::IdleTimeout { idle_ns: 40_000 }][i as usize % 3]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn cache_hits_equal_the_slow_path(
        seed in any::<u64>(), n_tables in 2u8..8, rules in 3usize..16,
        k in 1usize..6, entries in 2usize..48, max_masks in 3usize..64,
        scheme in 0u8..4, ev in 0u8..3, idle in any::<bool>(),
    ) {
        let p = Pipeline::parse(&random_pipeline(seed, n_tables, rules, 4)).unwrap();
        let packets = stream(&p, 250, seed);
        let mut mf = MegaflowCache::new(entries * k, eviction(ev));
        let scheme = [Scheme::Disjoint, Scheme::Random, Scheme::OneToOne, Scheme::DisjointArtifact][scheme as usize];
        let cfg = GigaflowConfig { tables: k, entries_per_table: entries, max_masks, scheme, idle_timeout_ns: idle.then_some(40_000), seed, repair: true, align: seed % 2 == 0, count_coverage: seed % 3 != 0, recycle_by_lookup: false, drops_complete: true, match_metadata: true, key_after_writes: false, masked_commit: false, vlan_always_matched: false,
            // Both ways of steering the slow path's lookups (OVS's, and gvs's fresh per-table wildcards).
            lookup_wildcards: if seed % 4 < 2 { LookupWildcards::Traversal } else { LookupWildcards::PerLookup } };
        let mut gf = GigaflowCache::new(cfg).unwrap();
        check(&p, &packets, &mut mf, &mut gf);
    }
}

#[test]
fn example_pipelines_hit_and_agree() {
    for name in ["l3_router.flows", "acl_regs.flows", "l2_rewrite.flows"] {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ofswitch/pipelines").join(name);
        let p = Pipeline::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        for scheme in [Scheme::Disjoint, Scheme::Random, Scheme::OneToOne] {
            let packets = stream(&p, 3000, 11);
            let mut mf = MegaflowCache::new(32_000, Eviction::None);
            let mut gf = GigaflowCache::new(GigaflowConfig { scheme, ..Default::default() }).unwrap();
            let c = check(&p, &packets, &mut mf, &mut gf);
            // The checks above only bite if there are hits to check.
            assert!(c.mf_hits > 1000 && c.gf_hits > 1000, "{name} {scheme:?}: {} / {} hits", c.mf_hits, c.gf_hits);
        }
    }
}

#[test]
fn random_pipelines_with_pending_resubmits_agree() {
    // Larger random pipelines: resubmits followed by more actions are common here, so tags must
    // carry the pending continuation, not just the table id.
    let mut total = 0;
    for seed in 0..30 {
        let p = Pipeline::parse(&random_pipeline(1000 + seed, 8, 12, 4)).unwrap();
        let packets = stream(&p, 600, seed);
        let mut mf = MegaflowCache::new(64, Eviction::Lru);
        let mut gf = GigaflowCache::new(GigaflowConfig { tables: 4, entries_per_table: 64, ..Default::default() }).unwrap();
        total += check(&p, &packets, &mut mf, &mut gf).gf_hits;
    }
    assert!(total > 5000, "only {total} Gigaflow hits checked");
}

#[test]
fn a_table_reached_with_actions_pending_gets_its_own_tag() {
    // Table 1 is reached from dl_src=A with `output:2` still pending after the resubmit, and from
    // dl_src=B by a tail call. Table 0 (dl_src) and table 1 (tp_dst) are disjoint, so both
    // traversals split after table 0; their table-1 entries have the same match and must not be
    // shared (a tag that is only the table id would replay A's pending output for B).
    let flows = "\
table=0,priority=10,dl_src=00:00:00:00:00:0a,actions=resubmit(,1),output:2
table=0,priority=10,dl_src=00:00:00:00:00:0b,actions=goto_table:1
table=1,priority=10,tcp,tp_dst=80,actions=output:3
";
    let p = Pipeline::parse(flows).unwrap();
    let mk = |src: u64| {
        let mut f = Flow::default();
        f.set(Field::InPort, 1);
        f.set(Field::DlType, 0x0800);
        f.set(Field::NwProto, 6);
        f.set(Field::DlSrc, src);
        f.set(Field::TpDst, 80);
        f
    };
    let packets = [mk(0xa), mk(0xb), mk(0xa), mk(0xb), mk(0xb)];
    let mut mf = MegaflowCache::new(16, Eviction::None);
    let mut gf = GigaflowCache::new(GigaflowConfig::default()).unwrap();
    let c = check(&p, &packets, &mut mf, &mut gf);
    assert_eq!(c.gf_hits, 3);
    assert_eq!(gf.tables.iter().filter(|t| !t.is_empty()).count(), 2, "split into two sub-traversals");
}
