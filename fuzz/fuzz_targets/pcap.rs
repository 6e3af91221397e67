//! pcap files: `parse` never panics; records it reads, written again by PcapWriter (nanosecond
//! format), read back the same when they are representable (time below 2^32 s, orig_len not
//! smaller than the captured bytes).
#![no_main]

use innet_wire::pcap::{self, PcapWriter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((_link, recs)) = pcap::parse(data) else {
        return;
    };
    let captured: usize = recs.iter().map(|r| r.data.len()).sum();
    assert_eq!(
        24 + 16 * recs.len() + captured,
        data.len(),
        "parse must account for every byte"
    );
    let keep: Vec<_> = recs
        .into_iter()
        .filter(|r| r.time_ns < (1u64 << 32) * 1_000_000_000 && r.orig_len as usize >= r.data.len())
        .collect();
    let mut w = PcapWriter::new(Vec::new(), u32::MAX).expect("writing to a Vec");
    for r in &keep {
        w.write(r.time_ns, &r.data, r.orig_len)
            .expect("writing to a Vec");
    }
    let (link, back) = pcap::parse(&w.into_inner()).expect("a written pcap parses");
    assert_eq!(link, pcap::LINKTYPE_ETHERNET);
    assert_eq!(back, keep);
});
