//! Random test packets for a pipeline: each header is either drawn near a value some rule
//! matches (the rule's bits kept, the wildcarded bits random) or uniformly at random, so
//! packets exercise hits, near misses and the prefix/port tries alike.

use crate::fields::{Field, Flow, ETH_TYPE_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use crate::slowpath::Pipeline;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` packets for `pipeline` from `seed`, arriving on OpenFlow ports 1..=n_ports.
pub fn random_packets(pipeline: &Pipeline, n: usize, n_ports: u32, seed: u64) -> Vec<Flow> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen: Vec<Vec<(u64, u64)>> = vec![Vec::new(); crate::fields::N_FIELDS];
    for r in &pipeline.rules {
        for m in &r.matches {
            seen[m.field.index()].push((m.value, m.mask));
        }
    }
    let pick = |rng: &mut ChaCha8Rng, f: Field| -> u64 {
        let cands = &seen[f.index()];
        let random = rng.gen::<u64>() & f.full_mask();
        if !cands.is_empty() && rng.gen_bool(0.7) {
            let (v, m) = cands[rng.gen_range(0..cands.len())];
            // Sometimes flip one matched bit to land just outside the rule.
            let flip = if rng.gen_bool(0.2) && m != 0 { 1u64 << rng.gen_range(0..f.bits()) & m } else { 0 };
            ((v & m) | (random & !m)) ^ flip
        } else {
            random
        }
    };
    (0..n)
        .map(|_| {
            let mut p = Flow::default();
            p.set(Field::InPort, rng.gen_range(1..=n_ports as u64));
            p.set(Field::DlType, ETH_TYPE_IP);
            let proto = match rng.gen_range(0..20) {
                0..=8 => IPPROTO_TCP,
                9..=14 => IPPROTO_UDP,
                15..=18 => IPPROTO_ICMP,
                _ => 47, // GRE: an IP protocol without L4 ports
            };
            p.set(Field::NwProto, proto);
            for f in [Field::DlSrc, Field::DlDst, Field::NwSrc, Field::NwDst] {
                let v = pick(&mut rng, f);
                p.set(f, v);
            }
            if rng.gen_bool(0.1) {
                let vid = if rng.gen_bool(0.5) { 10 } else { rng.gen_range(1..4095) };
                p.set(Field::VlanTci, 0x1000 | vid);
            }
            let tos = pick(&mut rng, Field::NwTos) & 0xfc;
            p.set(Field::NwTos, tos);
            let (src, dst) = (pick(&mut rng, Field::TpSrc), pick(&mut rng, Field::TpDst));
            if proto == IPPROTO_ICMP {
                p.set(Field::TpSrc, src & 0xff);
                p.set(Field::TpDst, dst & 0xff);
            } else if proto != IPPROTO_TCP && proto != IPPROTO_UDP {
                // No L4 header: OVS's flow has zero ports.
            } else {
                p.set(Field::TpSrc, src);
                p.set(Field::TpDst, dst);
            }
            p
        })
        .collect()
}

/// A random multi-table pipeline in `ovs-ofctl add-flows` syntax, for differential tests.
/// `n_tables` tables of `rules_per_table` rules each plus a catch-all; matches mix exact values,
/// prefixes (few distinct lengths, so subtables are shared), arbitrary masks, L4 port masks,
/// registers and metadata; actions mix header rewrites, register writes, move, outputs,
/// resubmit and goto_table. Priorities are distinct within a table.
pub fn random_pipeline(seed: u64, n_tables: u8, rules_per_table: usize, n_ports: u32) -> String {
    random_pipeline_with(seed, n_tables, rules_per_table, n_ports, false)
}

/// As [`random_pipeline`]; with `priority_ties` priorities come from 1..=4, so rules of equal
/// priority share tables (OpenFlow leaves overlapping equal-priority rules undefined).
pub fn random_pipeline_with(seed: u64, n_tables: u8, rules_per_table: usize, n_ports: u32, priority_ties: bool) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = String::new();
    let ip = |rng: &mut ChaCha8Rng| -> String {
        let pools = [[10u8, 0], [10, 1], [192, 168], [172, 16]];
        let p = pools[rng.gen_range(0..pools.len())];
        format!("{}.{}.{}.{}", p[0], p[1], rng.gen_range(0..4u8), rng.gen_range(0..=255u8))
    };
    let mac = |rng: &mut ChaCha8Rng| -> String {
        format!("00:16:3e:{:02x}:{:02x}:{:02x}", rng.gen_range(0..4u8), rng.gen::<u8>(), rng.gen::<u8>())
    };
    for table in 0..n_tables {
        let mut priorities: Vec<u32> = (1..=1000).collect();
        for i in 0..rules_per_table {
            let pi = rng.gen_range(0..priorities.len());
            let priority = if priority_ties { rng.gen_range(1..=4) } else { priorities.swap_remove(pi) };
            let mut m: Vec<String> = vec![format!("table={table}"), format!("priority={priority}")];
            let l4 = match rng.gen_range(0..10) {
                0..=3 => "tcp",
                4..=6 => "udp",
                7..=8 => "ip",
                _ => "",
            };
            if !l4.is_empty() {
                m.push(l4.into());
            }
            if table == 0 && rng.gen_bool(0.4) {
                m.push(format!("in_port={}", rng.gen_range(1..=n_ports)));
            }
            if table > 0 && rng.gen_bool(0.3) {
                m.push(format!("reg0={}", rng.gen_range(1..4)));
            }
            if rng.gen_bool(0.15) {
                m.push(format!("metadata=0x{:x}/0xff00", rng.gen_range(0..3u64) << 8));
            }
            if rng.gen_bool(0.15) {
                let masks = ["ff:ff:ff:00:00:00", "01:00:00:00:00:00", "ff:ff:ff:ff:ff:ff", "ff:ff:ff:ff:00:00"];
                let f = if rng.gen_bool(0.5) { "dl_src" } else { "dl_dst" };
                m.push(format!("{f}={}/{}", mac(&mut rng), masks[rng.gen_range(0..masks.len())]));
            }
            if !l4.is_empty() {
                for f in ["nw_src", "nw_dst"] {
                    if rng.gen_bool(0.5) {
                        let len = [8, 16, 24, 32, 32, 20][rng.gen_range(0..6)];
                        if rng.gen_bool(0.1) {
                            m.push(format!("{f}={}/255.255.0.255", ip(&mut rng)));
                        } else {
                            m.push(format!("{f}={}/{len}", ip(&mut rng)));
                        }
                    }
                }
                if rng.gen_bool(0.15) {
                    m.push(format!("nw_tos={}", 4 * rng.gen_range(0..4)));
                }
            }
            if l4 == "tcp" || l4 == "udp" {
                for f in ["tp_src", "tp_dst"] {
                    if rng.gen_bool(0.45) {
                        let port: u16 = [22, 53, 80, 443, 8080, 1024, 5000, 0x8000][rng.gen_range(0..8)];
                        let mask = ["0xffff", "0xff00", "0xfff0", "0x8000", "0xfc00"][rng.gen_range(0..5)];
                        if rng.gen_bool(0.5) {
                            m.push(format!("{f}={port}"));
                        } else {
                            m.push(format!("{f}={port}/{mask}"));
                        }
                    }
                }
            }
            let _ = i;
            let mut a: Vec<String> = Vec::new();
            for _ in 0..rng.gen_range(0..3) {
                match rng.gen_range(0..7) {
                    0 => a.push(format!("mod_dl_dst:{}", mac(&mut rng))),
                    1 if !l4.is_empty() => a.push(format!("mod_nw_dst:{}", ip(&mut rng))),
                    2 if l4 == "tcp" || l4 == "udp" => a.push(format!("mod_tp_dst:{}", rng.gen_range(1..65535))),
                    3 => a.push(format!("load:{}->NXM_NX_REG0[]", rng.gen_range(1..4))),
                    4 => a.push(format!("set_field:0x{:x}/0xff00->metadata", rng.gen_range(0..3u64) << 8)),
                    5 if l4 == "tcp" => a.push("move:NXM_OF_TCP_DST[]->NXM_NX_REG1[0..15]".into()),
                    6 if !l4.is_empty() => a.push(format!("set_field:{}->ip_src", ip(&mut rng))),
                    _ => {}
                }
            }
            for _ in 0..rng.gen_range(0..3) {
                a.push(format!("output:{}", rng.gen_range(1..=n_ports)));
            }
            if table + 1 < n_tables && rng.gen_bool(0.7) {
                let next = rng.gen_range(table + 1..n_tables);
                if rng.gen_bool(0.5) {
                    a.push(format!("resubmit(,{next})"));
                    if rng.gen_bool(0.3) {
                        a.push(format!("output:{}", rng.gen_range(1..=n_ports)));
                    }
                } else {
                    a.push(format!("goto_table:{next}"));
                }
            }
            if a.is_empty() {
                a.push("drop".into());
            }
            out += &format!("{},actions={}\n", m.join(","), a.join(","));
        }
        let miss = if table + 1 < n_tables && rng.gen_bool(0.5) { format!("goto_table:{}", table + 1) } else { "drop".into() };
        out += &format!("table={table},priority=0,actions={miss}\n");
    }
    out
}

/// A long linear pipeline for benchmarks: `n_tables` tables in groups of three that match the
/// same header (dl_dst, nw_dst prefixes, tp_dst, nw_src prefixes, dl_src, tp_src in turn), each
/// with `rules_per_table` rules and a catch-all, every rule continuing to the next table; the
/// last table outputs. Every packet takes all `n_tables` lookups (like OLS's long traversals).
pub fn chain_pipeline(seed: u64, n_tables: u8, rules_per_table: usize) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = String::new();
    for table in 0..n_tables {
        let last = table + 1 == n_tables;
        let next = if last { format!("output:{}", 1 + table % 4) } else { format!("goto_table:{}", table + 1) };
        let group = (table / 3) % 6;
        for r in 0..rules_per_table {
            let m = match group {
                0 => format!("dl_dst=00:16:3e:00:{:02x}:{:02x}", rng.gen_range(0..4u8), rng.gen::<u8>()),
                1 => format!("ip,nw_dst=10.{}.{}.0/{}", rng.gen_range(0..4u8), rng.gen::<u8>(), [16, 24][rng.gen_range(0..2)]),
                2 => format!("tcp,tp_dst={}", [22, 53, 80, 443, 8080, 1024, 5000][rng.gen_range(0..7)] + r as u32),
                3 => format!("ip,nw_src=192.168.{}.0/24", rng.gen::<u8>()),
                4 => format!("dl_src=00:16:3e:01:{:02x}:{:02x}", rng.gen_range(0..4u8), rng.gen::<u8>()),
                _ => format!("tcp,tp_src={}", 1000 + rng.gen_range(0..64u32)),
            };
            let act = if rng.gen_bool(0.1) && group == 1 { format!("mod_dl_dst:00:00:00:00:{:02x}:01,{next}", r % 256) } else { next.clone() };
            out += &format!("table={table},priority={},{m},actions={act}\n", 10 + r);
        }
        out += &format!("table={table},priority=0,actions={next}\n");
    }
    out
}
