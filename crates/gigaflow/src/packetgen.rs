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
                9..=15 => IPPROTO_UDP,
                _ => IPPROTO_ICMP,
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
            } else {
                p.set(Field::TpSrc, src);
                p.set(Field::TpDst, dst);
            }
            p
        })
        .collect()
}
