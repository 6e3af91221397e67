//! The Megaflow our slow path produces is sound: every packet inside it (same bits where the
//! mask is 1, anything where it is 0) takes the same outputs, and each output carries the first
//! packet's written bits and the new packet's own bits elsewhere. This is what a Megaflow cache
//! hit relies on; the OVS differential tests show the mask is also exactly OVS's.

use innet_ofswitch::fields::{Field, Flow, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP};
use innet_ofswitch::packetgen::{random_packets, random_pipeline_with};
use innet_ofswitch::Pipeline;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random packet inside the Megaflow of `p` (None when the draw is not a valid packet).
fn variant(p: &Flow, mask: &Flow, rng: &mut ChaCha8Rng) -> Option<Flow> {
    let mut v = *p;
    for f in Field::all().filter(|f| f.is_packet_field()) {
        let m = mask.get(f);
        let r = match f {
            // The Megaflow keeps the VLAN header's presence and the ethertype (ODP key shape).
            Field::VlanTci | Field::DlType => continue,
            Field::NwProto => [IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, 47][rng.gen_range(0..4)],
            _ => rng.gen::<u64>(),
        };
        v.set(f, (p.get(f) & m) | (r & !m & f.full_mask()));
    }
    v.set(Field::NwTos, v.get(Field::NwTos) & 0xfc);
    match v.get(Field::NwProto) {
        IPPROTO_TCP | IPPROTO_UDP => {}
        IPPROTO_ICMP => {
            if (v.get(Field::TpSrc) | v.get(Field::TpDst)) >> 8 != 0 {
                for f in [Field::TpSrc, Field::TpDst] {
                    if mask.get(f) >> 8 != 0 && p.get(f) >> 8 != 0 {
                        return None;
                    }
                    v.set(f, v.get(f) & 0xff);
                }
            }
        }
        _ => {
            for f in [Field::TpSrc, Field::TpDst] {
                if mask.get(f) & p.get(f) != 0 {
                    return None;
                }
                v.set(f, 0);
            }
        }
    }
    Some(v)
}

fn check(pipeline: &Pipeline, seed: u64) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut checked = 0;
    for p in random_packets(pipeline, 300, 4, seed) {
        let first = pipeline.trace(&p);
        let mask = first.megaflow_mask;
        for _ in 0..10 {
            let Some(v) = variant(&p, &mask, &mut rng) else { continue };
            let second = pipeline.trace(&v);
            let ports = |t: &innet_ofswitch::Trace| t.outputs.iter().map(|o| o.port).collect::<Vec<_>>();
            assert_eq!(ports(&first), ports(&second), "seed {seed}: {p:?} vs {v:?}");
            for (a, b) in first.outputs.iter().zip(&second.outputs) {
                for f in Field::all().filter(|f| f.is_packet_field()) {
                    let m = mask.get(f);
                    let expected = (a.headers.get(f) & m) | (v.get(f) & !m);
                    assert_eq!(b.headers.get(f) & f.full_mask(), expected & f.full_mask(), "seed {seed}: field {} of {p:?} vs {v:?}", f.name());
                }
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn megaflows_of_example_pipelines_are_sound() {
    for (i, name) in ["l3_router.flows", "acl_regs.flows", "l2_rewrite.flows"].iter().enumerate() {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ofswitch/pipelines").join(name);
        let p = Pipeline::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(check(&p, i as u64) > 2000, "{name}: too few variants checked");
    }
}

#[test]
fn megaflows_of_random_pipelines_are_sound() {
    for seed in 0..20 {
        let p = Pipeline::parse(&random_pipeline_with(seed, 4, 15, 4, seed % 2 == 1)).unwrap();
        assert!(check(&p, seed) > 2000);
    }
}
