//! Lookups per second of each stateful block at 10K and 100K entries.
//! Run: `cargo run --release -p innet-dataplane --example state_bench`
//! Wall-clock timing lives only here, never inside a simulation.

use std::hint::black_box;
use std::time::Instant;

use innet_switch::state::{
    ExactTable, HashAlgorithm, HashUnit, KeyLayout, LpmTable, RegisterArray, TernaryTable,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn report(what: &str, entries: usize, ops: u64, start: Instant, hits: u64) {
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{what:<10} {entries:>7} entries  {:>12.0} lookups/s  ({:>7.1} ns each, {:.0}% hits)",
        ops as f64 / secs,
        secs * 1e9 / ops as f64,
        100.0 * hits as f64 / ops as f64
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for &n in &[10_000usize, 100_000] {
        // Exact on a 5-tuple; half the probes are installed keys.
        let layout = KeyLayout::new(&[
            ("src", 32),
            ("dst", 32),
            ("sport", 16),
            ("dport", 16),
            ("proto", 8),
        ])?;
        let mut exact = ExactTable::new("flows", layout, n, 0u32)?;
        let mut keys = Vec::with_capacity(n);
        while keys.len() < n {
            let k: u128 = rng.gen::<u128>() >> 24;
            if exact.insert(k, keys.len() as u32).is_ok() {
                keys.push(k);
            }
        }
        let probes: Vec<u128> = (0..1 << 16)
            .map(|i| {
                if i % 2 == 0 {
                    keys[rng.gen_range(0..n)]
                } else {
                    rng.gen::<u128>() >> 24
                }
            })
            .collect();
        let ops = 4_000_000u64;
        let start = Instant::now();
        let mut hits = 0u64;
        for i in 0..ops as usize {
            hits += black_box(exact.lookup(probes[i & 0xffff])).is_some() as u64;
        }
        report("exact", n, ops, start, hits);

        // LPM on IPv4 with a BGP-like length mix: mostly /24, then /16-/23, some /8-/15 and /25-/32.
        let mut lpm = LpmTable::new("routes", KeyLayout::new(&[("dst", 32)])?, n, 0u32)?;
        let mut installed = 0;
        while installed < n {
            let roll = rng.gen_range(0..100);
            let len = match roll {
                0..=59 => 24,
                60..=89 => rng.gen_range(16..24),
                90..=94 => rng.gen_range(8..16),
                _ => rng.gen_range(25..=32),
            };
            let prefix = rng.gen::<u32>() & (u32::MAX << (32 - len));
            if lpm.insert(prefix as u128, len, installed as u32).is_ok() {
                installed += 1;
            }
        }
        let addrs: Vec<u128> = (0..1 << 16).map(|_| rng.gen::<u32>() as u128).collect();
        let start = Instant::now();
        let mut hits = 0u64;
        for i in 0..ops as usize {
            hits += black_box(lpm.lookup(addrs[i & 0xffff])).is_some() as u64;
        }
        report("lpm", n, ops, start, hits);

        // Ternary ACL: dst prefix /8../32 and dport exact or wildcard, random priorities.
        // Tuple-space search, so the cost follows the number of distinct masks (50 here).
        let mut tern = TernaryTable::new(
            "acl",
            KeyLayout::new(&[("dst", 32), ("dport", 16)])?,
            n,
            0u32,
        )?;
        let mut installed = 0u32;
        while (installed as usize) < n {
            let dst_len = rng.gen_range(8..=32u32);
            let dst_mask = (u32::MAX as u128) << (32 - dst_len) & 0xffff_ffff;
            let port_mask: u128 = if rng.gen_bool(0.5) { 0xffff } else { 0 };
            let mask = dst_mask << 16 | port_mask;
            let value = (rng.gen::<u64>() as u128 & ((1 << 48) - 1)) & mask;
            if tern
                .insert(value, mask, rng.gen_range(0..1000), installed)
                .is_ok()
            {
                installed += 1;
            }
        }
        let tern_ops = ops;
        let start = Instant::now();
        let mut hits = 0u64;
        for i in 0..tern_ops as usize {
            hits += black_box(tern.lookup(probes[i & 0xffff] & ((1 << 48) - 1))).is_some() as u64;
        }
        report("ternary", n, tern_ops, start, hits);

        // Register read-modify-write at a CRC-32 index, as a count-min row does.
        let mut reg = RegisterArray::new("counts", n, 32)?;
        let crc = HashUnit::new(HashAlgorithm::Crc32, 0);
        let start = Instant::now();
        for i in 0..ops as usize {
            let idx = crc.index(&probes[i & 0xffff].to_be_bytes()[3..], n as u32)?;
            black_box(reg.add(idx as u64, 1)?);
        }
        report("crc+reg", n, ops, start, ops);
    }
    Ok(())
}
