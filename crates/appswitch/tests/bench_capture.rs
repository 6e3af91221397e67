//! The throughput benchmark's captures stay faithful to a live connection through the switch:
//! replayed (twice, as the benchmark repeats them) through the real switch core, every request
//! the capture expects the switch to answer is answered with exactly the expected bytes at the
//! client sequence number the client's next ACK acknowledges, nothing of it reaches the server,
//! no reply is ever resent or replayed, and every miss is forwarded and learned.

use std::collections::BTreeMap;

use innet_appswitch::bench_capture::{capture, Case};
use innet_appswitch::build_appswitch;
use innet_switch::real::{Settings, TxBatch};
use innet_wire::frame::{parse_frame, L4Repr};

const EXCHANGES: u32 = 300;

fn report(sw: &dyn innet_switch::real::FrameSwitch) -> BTreeMap<String, u64> {
    sw.report()
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect()
}

fn replay(case: Case) {
    let cap = capture(case, EXCHANGES);
    let mut s = Settings::new(
        [
            ("protocol", case.protocol().to_string()),
            ("server_port", case.server_port().to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .into_iter()
        .collect(),
    );
    let mut sw = build_appswitch(&mut s, 2).expect("appswitch builds");
    let mut tx = TxBatch::new(2);
    let hits: BTreeMap<usize, _> = cap.hits.iter().map(|h| (h.frame, h)).collect();
    for pass in 0..2 {
        for (i, f) in cap.frames.iter().enumerate() {
            let port = if cap.from_client[i] { 0 } else { 1 };
            tx.clear();
            sw.on_frame(port, f, [0; 10], 0, &mut tx);
            // Frames the switch sent back to the client (its replies and ACKs).
            let back: Vec<_> = tx
                .port(port)
                .queued()
                .iter()
                .map(|(_, b)| parse_frame(b).expect("switch output parses"))
                .collect();
            let ahead = tx.port(1 - port).queued().len();
            let what = format!("{} pass {pass} frame {i}", case.name());
            if let Some(h) = hits.get(&i) {
                assert_eq!(
                    ahead, 0,
                    "{what}: a request the switch answers reached the server"
                );
                assert_eq!(back.len(), 1, "{what}: expected exactly one reply");
                let L4Repr::Tcp(t) = &back[0].l4 else {
                    panic!("{what}: reply is not TCP")
                };
                assert_eq!(
                    t.seq, h.reply_seq,
                    "{what}: reply at the wrong sequence number"
                );
                assert_eq!(back[0].payload, h.reply, "{what}: wrong reply bytes");
            } else {
                assert!(
                    back.iter().all(|b| b.payload.is_empty()),
                    "{what}: the switch sent data nobody asked for (a resent reply?)"
                );
                if !cap.from_client[i] {
                    assert_eq!(ahead, 1, "{what}: a server frame was not forwarded");
                }
            }
        }
    }
    let r = report(sw.as_ref());
    let requests = 2 * EXCHANGES as u64;
    let expected_hits = 2 * cap.hits.len() as u64;
    assert_eq!(r["hits"], expected_hits, "{}: {r:?}", case.name());
    assert_eq!(r["misses"] + r["hits"], requests, "{}: {r:?}", case.name());
    assert_eq!(
        r["learned"],
        r["misses"],
        "{}: every miss learned: {r:?}",
        case.name()
    );
    for k in [
        "replays",
        "reply_retransmits",
        "out_of_order_dropped",
        "protocol_errors",
    ] {
        assert_eq!(r[k], 0, "{}: {k}: {r:?}", case.name());
    }
}

#[test]
fn cql_hit_capture_is_a_live_all_hits_connection() {
    replay(Case::CqlHit);
}

#[test]
fn redis_hit_capture_is_a_live_all_hits_connection() {
    replay(Case::RedisHit);
}

#[test]
fn miss_captures_forward_and_learn_every_request() {
    replay(Case::CqlMiss);
    replay(Case::RedisMiss);
}
