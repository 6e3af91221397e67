//! The shipped applications against plain-Rust reference implementations, over random packet
//! sequences: LB1 (hash), LB2 (batched round robin), LB3 (power of two choices with load
//! reports), Paxos leader and acceptor, and the count-min sketch.

use std::collections::HashMap;

use innet_switchvm::asm::assemble;
use innet_switchvm::control::ControlPlane;
use innet_switchvm::isa::Pc;
use innet_switchvm::machine::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const L: u8 = 4;
const T: u32 = 3;

fn src(name: &str) -> String {
    std::fs::read_to_string(format!("{}/dpfs/{name}.dpf", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn setup() -> (Machine, ControlPlane) {
    let mut m = Machine::new(VmConfig::default());
    let mut cp = ControlPlane::default();
    cp.authorize(&mut m, T, Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: 0, app_id: 0 }).unwrap();
    (m, cp)
}

fn run(m: &mut Machine, pc: Pc, stack: Vec<u32>, rng: &mut ChaCha8Rng) -> (Outcome, DpfPacket) {
    let mut p = DpfPacket { tenant: T, init_pc: Some(pc), stack, gas: 2, ..Default::default() };
    let o = m.execute(&mut p, &SwitchMeta::default(), rng);
    (o, p)
}

fn servers(m: &mut Machine, cp: &mut ControlPlane, n: u32) {
    for i in 0..n {
        cp.install_steering(m, T, i, SteerAction::Forward(0x0a00_0100 + i)).unwrap();
    }
}

static ALGS: [crc::Algorithm<u32>; 4] = [crc::CRC_32_ISO_HDLC, crc::CRC_32_ISCSI, crc::CRC_32_BZIP2, crc::CRC_32_MPEG_2];

/// The reference hash: lane i's CRC-32 polynomial over the value's big-endian bytes.
fn crc(lane: usize, v: u32) -> u32 {
    crc::Crc::<u32>::new(&ALGS[lane]).checksum(&v.to_be_bytes())
}

#[test]
fn lb1_steers_by_the_hash_of_the_value() {
    let (mut m, mut cp) = setup();
    servers(&mut m, &mut cp, 8);
    let d = cp.deploy(&mut m, &assemble(&src("lb1_hash"), 4, L).unwrap()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut per = [0u32; 8];
    for _ in 0..4000 {
        let v: u32 = rng.gen();
        let (o, _) = run(&mut m, d.init_pc, vec![v], &mut rng);
        let want = crc(0, v) & 7;
        assert_eq!(o, Outcome::Steer(SteerAction::Forward(0x0a00_0100 + want)));
        per[want as usize] += 1;
    }
    assert!(per.iter().all(|&c| c > 400), "{per:?}");
}

#[test]
fn lb2_sends_batches_of_1024_round_robin() {
    let (mut m, mut cp) = setup();
    servers(&mut m, &mut cp, 8);
    cp.alloc_segment(&mut m, T, 0, 0, 0, 1).unwrap();
    let d = cp.deploy(&mut m, &assemble(&src("lb2_batch"), 4, L).unwrap()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for n in 0..10_000u32 {
        let (o, _) = run(&mut m, d.init_pc, vec![], &mut rng);
        assert_eq!(o, Outcome::Steer(SteerAction::Forward(0x0a00_0100 + (n >> 10) % 8)), "packet {n}");
    }
}

#[test]
fn lb3_picks_the_less_loaded_of_two_random_servers() {
    let (mut m, mut cp) = setup();
    servers(&mut m, &mut cp, 8);
    cp.alloc_segment(&mut m, T, 1, 0, 0, 8).unwrap();
    cp.alloc_segment(&mut m, T, 1, 1, 0, 8).unwrap();
    let req = cp.deploy(&mut m, &assemble(&src("lb3_request"), 4, L).unwrap()).unwrap();
    let rep = cp.deploy(&mut m, &assemble(&src("lb3_report"), 4, L).unwrap()).unwrap();
    let mut loads = [0u32; 8];
    let mut gen = ChaCha8Rng::seed_from_u64(7);
    // The machine's RAND and the reference draw from identical streams.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut mirror = ChaCha8Rng::seed_from_u64(11);
    for step in 0..5000 {
        if gen.gen_bool(0.3) {
            let (s, load) = (gen.gen_range(0..8u32), gen.gen_range(0..1000u32));
            let (o, p) = run(&mut m, rep.init_pc, vec![load, s], &mut rng);
            assert_eq!(o, Outcome::Steer(SteerAction::Pass));
            assert!(p.stack.is_empty());
            loads[s as usize] = load;
        } else {
            let (o, _) = run(&mut m, req.init_pc, vec![], &mut rng);
            let (a, b) = (mirror.gen::<u32>() & 7, mirror.gen::<u32>() & 7);
            let pick = if loads[a as usize] > loads[b as usize] { b } else { a };
            assert_eq!(o, Outcome::Steer(SteerAction::Forward(0x0a00_0100 + pick)), "step {step}");
        }
    }
}

#[test]
fn paxos_leader_and_acceptor_match_the_protocol() {
    let (mut m, mut cp) = setup();
    cp.install_steering(&mut m, T, 100, SteerAction::Multicast(1)).unwrap();
    cp.install_steering(&mut m, T, 101, SteerAction::Multicast(2)).unwrap();
    cp.install_steering(&mut m, T, 102, SteerAction::Drop).unwrap();
    // The leader's instance counter: one directly mapped cell (EU 0, lane 0, address 0).
    cp.map_direct(&mut m, T, 0, 0, 0).unwrap();
    let acc_src = src("paxos_acceptor");
    let acc = cp.deploy(&mut m, &assemble(&acc_src, 4, L).unwrap()).unwrap();
    let leader_text = src("paxos_leader").replace("next_pc 0x0001", &format!("next_pc {}", acc.init_pc.to_u16()));
    let leader = cp.deploy(&mut m, &assemble(&leader_text, 4, L).unwrap()).unwrap();
    // The acceptors are other switches: one with rounds at EU 0 lane 0 and values/vrounds at
    // EU 2 lanes 0/1.
    let mut m2 = Machine::new(VmConfig::default());
    let mut cp2 = ControlPlane::default();
    cp2.authorize(&mut m2, T, Permission { on_unauthorized: Unauthorized::Drop, default_pc: None, caps: 0, app_id: 0 }).unwrap();
    cp2.install_steering(&mut m2, T, 101, SteerAction::Multicast(2)).unwrap();
    cp2.install_steering(&mut m2, T, 102, SteerAction::Drop).unwrap();
    cp2.alloc_segment(&mut m2, T, 0, 0, 0, 64).unwrap();
    cp2.alloc_segment(&mut m2, T, 2, 0, 0, 64).unwrap();
    cp2.alloc_segment(&mut m2, T, 2, 1, 0, 64).unwrap();
    let acc2 = cp2.deploy(&mut m2, &assemble(&acc_src, 4, L).unwrap()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    // Leader: consecutive instances, round 0, chained to the acceptor, multicast.
    for i in 0..50u32 {
        let (o, p) = run(&mut m, leader.init_pc, vec![1000 + i], &mut rng);
        assert_eq!(o, Outcome::Steer(SteerAction::Multicast(1)));
        assert_eq!(p.stack, vec![1000 + i, i, 0]);
        assert_eq!(p.init_pc, Some(acc.init_pc));
    }
    // Acceptor against the reference over random phase-2 messages.
    let (mut rounds, mut values, mut vrounds) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut gen = ChaCha8Rng::seed_from_u64(5);
    for step in 0..5000 {
        let (v, i, r) = (gen.gen::<u32>(), gen.gen_range(0..64u32), gen.gen_range(0..20u32));
        let (o, p) = run(&mut m2, acc2.init_pc, vec![v, i, r], &mut rng);
        let stored = rounds.get(&i).copied().unwrap_or(0);
        rounds.insert(i, stored.max(r));
        if stored > r {
            assert_eq!(o, Outcome::Steer(SteerAction::Drop), "step {step}");
        } else {
            assert_eq!(o, Outcome::Steer(SteerAction::Multicast(2)), "step {step}");
            assert_eq!(p.stack, vec![v, i, r]);
            values.insert(i, v);
            vrounds.insert(i, r);
        }
    }
    for i in 0..64u32 {
        let cell = |eu: usize, lane: usize| {
            let lm = &m2.mem[eu][lane];
            lm.cells[lm.translate(T, i).unwrap() as usize]
        };
        assert_eq!(cell(0, 0), rounds.get(&i).copied().unwrap_or(0));
        assert_eq!(cell(2, 0), values.get(&i).copied().unwrap_or(0));
        assert_eq!(cell(2, 1), vrounds.get(&i).copied().unwrap_or(0));
    }
}

#[test]
fn count_min_matches_a_reference_sketch() {
    let (mut m, mut cp) = setup();
    for lane in 0..3 {
        cp.alloc_segment(&mut m, T, 1, lane, 0, 1024).unwrap();
    }
    let d = cp.deploy(&mut m, &assemble(&src("countmin"), 4, L).unwrap()).unwrap();
    let mut rows = vec![vec![0u32; 1024]; 3];
    let mut truth: HashMap<u32, u32> = HashMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut gen = ChaCha8Rng::seed_from_u64(2);
    for _ in 0..20_000 {
        // Skewed keys, so estimates are exercised on hot and cold ones.
        let key = if gen.gen_bool(0.5) { gen.gen_range(0..20u32) } else { gen.gen::<u32>() };
        let (o, p) = run(&mut m, d.init_pc, vec![key], &mut rng);
        assert_eq!(o, Outcome::Steer(SteerAction::Pass));
        let est = (0..3).map(|l| rows[l][(crc(l, key) & 1023) as usize]).min().unwrap();
        for l in 0..3 {
            rows[l][(crc(l, key) & 1023) as usize] += 1;
        }
        assert_eq!(p.stack, vec![key, est]);
        let t = truth.entry(key).or_insert(0);
        assert!(est >= *t, "a count-min estimate never undercounts");
        *t += 1;
    }
}

/// The reference cache: key → <valid, index>, values and hit counters per index.
#[derive(Default)]
struct RefCache {
    tuple: HashMap<u32, u32>,
    values: HashMap<u32, [u32; 3]>,
    hits: HashMap<u32, u32>,
}

#[test]
fn kvs_cache_get_put_update_and_the_miss_chain_match_a_reference() {
    const K: u32 = 16;
    let (mut m, mut cp) = setup();
    cp.install_steering(&mut m, T, 0, SteerAction::ReturnToSender).unwrap();
    cp.alloc_null_segment(&mut m, T, 0, 0).unwrap();
    for lane in 0..3 {
        cp.alloc_segment(&mut m, T, 2, lane, 0, K).unwrap();
        cp.alloc_segment(&mut m, T, 1, lane, 0, 1024).unwrap();
    }
    cp.alloc_segment(&mut m, T, 3, 0, 0, K).unwrap();
    let cm = cp.deploy(&mut m, &assemble(&src("countmin"), 4, L).unwrap()).unwrap();
    let get_text = src("kvs_get").replace("next_pc 0x0002", &format!("next_pc {}", cm.init_pc.to_u16()));
    let get = cp.deploy(&mut m, &assemble(&get_text, 4, L).unwrap()).unwrap();
    let put = cp.deploy(&mut m, &assemble(&src("kvs_put"), 4, L).unwrap()).unwrap();
    let upd = cp.deploy(&mut m, &assemble(&src("kvs_update"), 4, L).unwrap()).unwrap();
    let mut r = RefCache::default();
    let mut owner: HashMap<u32, u32> = HashMap::new(); // index → key
    let mut cm_rows = vec![vec![0u32; 1024]; 3];
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut gen = ChaCha8Rng::seed_from_u64(4);
    let (mut hits, mut misses) = (0, 0);
    for step in 0..6000 {
        let key = gen.gen_range(1..60u32);
        match gen.gen_range(0..10) {
            0 | 1 => {
                // The server installs key at an index (evicting its previous owner).
                let index = gen.gen_range(0..K);
                let value = [gen.gen(), gen.gen(), gen.gen()];
                if let Some(old) = owner.insert(index, key) {
                    if old != key && r.tuple.remove(&old).is_some() {
                        cp.unmap_direct(&mut m, T, 0, old).unwrap();
                    }
                }
                if let Some(prev) = r.tuple.get(&key) {
                    let prev_index = prev & 0x7fff_ffff;
                    if prev_index != index {
                        owner.remove(&prev_index);
                    }
                } else {
                    cp.map_direct(&mut m, T, 0, 0, key).unwrap();
                }
                let tuple = 0x8000_0000 | index;
                let (o, p) = run(&mut m, upd.init_pc, vec![value[2], value[1], value[0], tuple, index, key], &mut rng);
                assert_eq!(o, Outcome::Steer(SteerAction::ReturnToSender), "step {step}");
                assert_eq!(p.stack, vec![key]);
                r.tuple.insert(key, tuple);
                r.values.insert(index, value);
                r.hits.insert(index, 0);
            }
            2 => {
                let (o, p) = run(&mut m, put.init_pc, vec![key], &mut rng);
                assert_eq!(o, Outcome::Steer(SteerAction::Pass));
                assert_eq!(p.stack, vec![key]);
                if let Some(t) = r.tuple.get_mut(&key) {
                    *t &= 0x7fff_ffff;
                }
            }
            _ => {
                let mut p = DpfPacket { tenant: T, init_pc: Some(get.init_pc), stack: vec![key], gas: 2, code: None, ..Default::default() };
                let o = m.execute(&mut p, &SwitchMeta::default(), &mut rng);
                let t = r.tuple.get(&key).copied().unwrap_or(0);
                if t & 0x8000_0000 != 0 {
                    hits += 1;
                    let index = t & 0x7fff_ffff;
                    let v = r.values[&index];
                    *r.hits.get_mut(&index).unwrap() += 1;
                    assert_eq!(o, Outcome::Steer(SteerAction::ReturnToSender), "step {step}: a hit");
                    assert_eq!(p.stack, vec![key, v[0], v[1], v[2]], "step {step}");
                } else {
                    misses += 1;
                    assert_eq!(o, Outcome::Steer(SteerAction::Pass), "step {step}: a miss");
                    assert_eq!(p.stack, vec![key]);
                    assert_eq!(p.init_pc, Some(cm.init_pc), "a miss chains to the sketch");
                    // The next pipe runs the count-min DPF the miss chained to.
                    let o2 = m.execute(&mut p, &SwitchMeta::default(), &mut rng);
                    assert_eq!(o2, Outcome::Steer(SteerAction::Pass));
                    let est = (0..3).map(|l| cm_rows[l][(crc(l, key) & 1023) as usize]).min().unwrap();
                    for l in 0..3 {
                        cm_rows[l][(crc(l, key) & 1023) as usize] += 1;
                    }
                    assert_eq!(p.stack, vec![key, est]);
                }
            }
        }
    }
    assert!(hits > 500 && misses > 500, "{hits} hits, {misses} misses");
    for (index, &h) in &r.hits {
        let lm = &m.mem[3][0];
        assert_eq!(lm.cells[lm.translate(T, *index).unwrap() as usize], h, "hit counter {index}");
    }
}
