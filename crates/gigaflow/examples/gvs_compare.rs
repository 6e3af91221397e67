//! `cargo run --release -p innet-gigaflow --example gvs_compare -- PIPELINE LOCALITY CACHE [--limit N] [--per-packet M] [k=v ...]`:
//! replays the packets `gigaflow.e2e` replays (the same `k=v` parameters; the same packets
//! `export_e2e_inputs` writes for gvs) through one of innet's NIC caches and prints, as JSON, the
//! counters bench/artifacts/gvs_run.py reads from the authors' gvs: packets, NIC (Gigaflow) hits,
//! host-datapath Megaflow hits, upcalls, entries and recycled entries per LTM table, and for the
//! first M packets what each was (gigaflow / megaflow / upcall) with the occupancy after it.
//! CACHE: `mf` (innet's Megaflow cache, e2e's MF), `gf` (e2e's GF), or `gvs` (a Gigaflow
//! configured as the artifact runs: `dp-artifact` partitioning, no aligned installs, no repair
//! entries, the artifact's 64-mask limit, its host Megaflow cache (200,000) behind the NIC, its
//! recycling by lookup, its drop traversals that never complete, its entries that match no
//! register and its keys rewritten by the entry's own actions: `artifact_ltm=true` of e2e).
//! Cache shape: `tables=K entries=N` (default 4 x 8000; e2e's `mf_entries`/`gf_entries` names are
//! not used here), `max_masks=X` (0: none), `scheme=dp|dp-artifact`, `align=`, `repair=`,
//! `host=`, `recycle_by_lookup=`, `artifact_drops=`, `clear_registers=`, `key_after_writes=`,
//! `fresh_lookup_wc=`, `masked_commit=`, `vlan_always_matched=` override the chosen CACHE's settings.
//! Debugging: `GVS_COMPARE_EXPLAIN=1` adds each recorded packet's walk (entries with keys, masks
//! and ops); `GVS_COMPARE_DUMP_AT=I` prints every LTM entry after packet I to stderr.
use innet_gigaflow::experiments::{e2e_inputs, offload, CacheSpec};
use innet_gigaflow::ltm::GigaflowConfig;
use innet_gigaflow::megaflow::Eviction;
use innet_gigaflow::nic::{NicCache, NicModel};
use innet_gigaflow::partition::Scheme;
use innet_ofswitch::fields::Flow;
use innet_ofswitch::slowpath::{LookupWildcards, Pipeline};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Instant;

fn die(msg: String) -> ! {
    eprintln!("gvs_compare: {msg}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        die("usage: gvs_compare PIPELINE LOCALITY mf|gf|gvs [--limit N] [--per-packet M] [k=v ...]".into());
    }
    let (pipe, loc, cache) = (&args[0], &args[1], args[2].as_str());
    let (mut limit, mut per_packet) = (usize::MAX, 0usize);
    let mut sets = BTreeMap::new();
    let mut own: BTreeMap<String, String> = BTreeMap::new();
    let mut it = args[3..].iter();
    while let Some(a) = it.next() {
        let num = |v: Option<&String>| v.and_then(|s| s.parse::<usize>().ok()).unwrap_or_else(|| die(format!("{a} needs a number")));
        match a.as_str() {
            "--limit" => limit = num(it.next()),
            "--per-packet" => per_packet = num(it.next()),
            _ => {
                let Some((k, v)) = a.split_once('=') else { die(format!("argument '{a}' is not k=v")) };
                if ["tables", "entries", "max_masks", "scheme", "align", "repair", "host", "recycle_by_lookup", "artifact_drops", "clear_registers", "key_after_writes", "fresh_lookup_wc", "masked_commit", "vlan_always_matched"].contains(&k) {
                    own.insert(k.into(), v.into());
                } else {
                    sets.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    let get = |k: &str, d: &str| own.get(k).cloned().unwrap_or_else(|| d.to_string());
    let n = |k: &str, d: &str| get(k, d).parse::<usize>().unwrap_or_else(|_| die(format!("{k}: expected a number")));
    let b = |k: &str, d: &str| get(k, d).parse::<bool>().unwrap_or_else(|_| die(format!("{k}: expected true or false")));
    let artifact = cache == "gvs";
    let (d_masks, d_scheme, d_flag, d_host) = if artifact { ("64", "dp-artifact", "false", "200000") } else { ("0", "dp", "true", "0") };
    let d_art = if artifact { "true" } else { "false" };
    let masks = match n("max_masks", d_masks) {
        0 => usize::MAX,
        m => m,
    };
    let nic = NicModel { host_cache_entries: n("host", d_host), ..NicModel::default() };
    let spec = match cache {
        "mf" => CacheSpec::Megaflow { entries: n("entries", "32000"), eviction: Eviction::None, max_masks: masks },
        "gf" | "gvs" => CacheSpec::Gigaflow(GigaflowConfig {
            tables: n("tables", "4"),
            entries_per_table: n("entries", "8000"),
            max_masks: masks,
            scheme: Scheme::parse(&get("scheme", d_scheme)).unwrap_or_else(|e| die(e)),
            align: b("align", d_flag),
            repair: b("repair", d_flag),
            count_coverage: false,
            recycle_by_lookup: b("recycle_by_lookup", d_art),
            drops_complete: !b("artifact_drops", d_art),
            match_metadata: !b("clear_registers", d_art),
            key_after_writes: b("key_after_writes", d_art),
            lookup_wildcards: if b("fresh_lookup_wc", d_art) { LookupWildcards::PerLookup } else { LookupWildcards::Traversal },
            masked_commit: b("masked_commit", d_art),
            vlan_always_matched: b("vlan_always_matched", d_art),
            ..GigaflowConfig::default()
        }),
        other => die(format!("cache '{other}': expected mf, gf or gvs")),
    };
    let (rs, traffic) = e2e_inputs(pipe, loc, &sets).unwrap_or_else(|e| die(e.to_string()));
    let pl = Pipeline::parse(&rs.text).unwrap_or_else(|e| die(format!("flow file: {e}")));
    let mut o = offload(&pl, &spec, nic).unwrap_or_else(|e| die(e));
    let mut records = Vec::new();
    let t0 = Instant::now();
    for (i, (t, pkt)) in traffic.iter().take(limit).enumerate() {
        let before = o.stats;
        o.process(pkt, t);
        if i < per_packet {
            let kind = if o.stats.hits > before.hits {
                "gigaflow"
            } else if o.stats.host_hits > before.host_hits {
                "megaflow"
            } else {
                "upcall"
            };
            let (entries, recycled, masks) = tables_of(&o.cache);
            let mut rec = json!({"i": i, "in_port": pkt.get(innet_ofswitch::fields::Field::InPort), "kind": kind, "entries": entries, "recycled": recycled, "masks": masks});
            if std::env::var_os("GVS_COMPARE_EXPLAIN").is_some() {
                rec["explain"] = explain(&mut o.cache, &pl, pkt);
            }
            records.push(rec);
            if std::env::var("GVS_COMPARE_DUMP_AT").ok().and_then(|v| v.parse::<usize>().ok()) == Some(i) {
                if let NicCache::Gigaflow(g) = &o.cache {
                    for (k, t) in g.tables.iter().enumerate() {
                        for id in t.ids() {
                            let (sl, m) = (t.get(id), t.mask_of(id));
                            let f = matched_fields(&sl.key, m, None);
                            eprintln!("ENTRY k={k} tag={} p={} {}", sl.tag, sl.priority, f.join(","));
                        }
                    }
                }
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let (entries, recycled, masks) = tables_of(&o.cache);
    let s = o.stats;
    let extra = match &o.cache {
        NicCache::Gigaflow(g) => json!({"masks": masks, "rejected_full": g.stats.rejected_full, "rejected_masks": g.stats.rejected_masks, "repairs": g.stats.repairs, "aligned": g.stats.aligned, "uncacheable": g.stats.uncacheable}),
        NicCache::Megaflow(m) => json!({"rejected_full": m.stats.rejected_full, "rejected_masks": m.stats.rejected_masks}),
    };
    let clock = s.clock;
    let out = json!({
        "pipeline": pipe, "locality": loc, "cache": cache, "params": sets, "settings": own,
        "packets": s.packets, "gigaflow_hits": s.hits, "megaflow_hits": s.host_hits, "upcalls": s.upcalls,
        "entries": entries, "recycled": recycled, "extra": extra, "replay_s": wall,
        "clock": format!("{clock:?}"),
        "per_packet": records,
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
}

/// Entries and recycled installs per table (one table for the Megaflow cache).
fn tables_of(c: &NicCache) -> (Vec<usize>, Vec<u64>, Vec<usize>) {
    match c {
        NicCache::Gigaflow(g) => (g.tables.iter().map(|t| t.len()).collect(), g.stats.table_recycled.clone(), g.tables.iter().map(|t| t.n_masks()).collect()),
        NicCache::Megaflow(m) => (vec![m.len()], vec![0], Vec::new()),
    }
}

/// An entry's matched fields as `Field=key/mask`, with the packet's value when given.
fn matched_fields(key: &Flow, mask: &Flow, packet: Option<&Flow>) -> Vec<String> {
    (0..innet_ofswitch::fields::N_FIELDS)
        .filter(|&f| mask.0[f] != 0)
        .map(|f| {
            let field = innet_ofswitch::fields::Field::from_index(f);
            match packet {
                Some(p) => format!("{field:?}={:x}/{:x} (packet {:x})", key.0[f], mask.0[f], p.0[f]),
                None => format!("{field:?}={:x}/{:x}", key.0[f], mask.0[f]),
            }
        })
        .collect()
}

/// For a debugging session (GVS_COMPARE_EXPLAIN=1): the packet's traversal (vSwitch tables,
/// output actions) and the LTM entries its lookup takes (table, tag, priority, next tag, mask
/// fields).
fn explain(c: &mut NicCache, pl: &Pipeline, pkt: &innet_ofswitch::fields::Flow) -> serde_json::Value {
    let t = pl.trace(pkt);
    let tables: Vec<u8> = t.visits.iter().map(|v| v.table).collect();
    let mut steps = Vec::new();
    if let NicCache::Gigaflow(g) = c {
        let mut flow = *pkt;
        let mut outs = Vec::new();
        let mut tag = innet_gigaflow::ltm::TAG_START;
        for k in 0..g.tables.len() {
            if let Some(id) = g.tables[k].lookup(tag, &flow, None) {
                let mask = *g.tables[k].mask_of(id);
                let slot = g.tables[k].get(id);
                let fields = matched_fields(&slot.key, &mask, Some(&flow));
                steps.push(json!({"table": k, "tag": slot.tag, "priority": slot.priority, "next": slot.payload.next_tag, "mask": fields, "ops": format!("{:?}", slot.payload.ops)}));
                innet_gigaflow::actions::apply_ops(&slot.payload.ops, &mut flow, &mut outs);
                tag = slot.payload.next_tag;
                if tag == innet_gigaflow::ltm::TAG_DONE {
                    break;
                }
            }
        }
    }
    json!({"tables": tables, "output_actions": t.output_actions, "outputs": t.outputs.len(), "ltm": steps})
}
