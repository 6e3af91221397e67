//! Scripted TCP conversations through the real switch core (`RealSwitch::on_frame` on real
//! Ethernet frames): a miss is forwarded and learned, a hit is answered by the switch with the
//! right sequence numbers, and afterwards both directions are rewritten by α and β; a lost
//! reply's retransmitted request is answered again and never forwarded; duplicate pure ACKs
//! caused by hits are not forwarded; traffic to other ports passes untouched.

use std::collections::BTreeMap;

use innet_appswitch::switch_programs;
use innet_dataplane::real::{FrameSwitch, TxBatch};
use innet_wire::ethernet::{EthernetRepr, ETHERTYPE_IPV4};
use innet_wire::frame::{parse_frame, FrameRepr, L4Repr};
use innet_wire::ipv4::{Ipv4Repr, PROTO_TCP};
use innet_wire::tcp::{flags, TcpOption, TcpRepr};
use innet_wire::Ipv4Addr;

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const CPORT: u16 = 40000;
const SPORT: u16 = 6379;
const C_ISN: u32 = 1000;
const S_ISN: u32 = 5000;

fn frame(to_server: bool, seq: u32, ack: u32, fl: u8, opts: Vec<TcpOption>, payload: &[u8], dport: u16) -> Vec<u8> {
    let (src, dst, sp, dp) = if to_server { (CLIENT, SERVER, CPORT, dport) } else { (SERVER, CLIENT, dport, CPORT) };
    FrameRepr {
        eth: EthernetRepr { dst: [2, 0, 0, 0, 0, 2], src: [2, 0, 0, 0, 0, 1], vlan_tci: None, ethertype: ETHERTYPE_IPV4 },
        tunnel: None,
        ip: Ipv4Repr {
            src: Ipv4Addr::from(src),
            dst: Ipv4Addr::from(dst),
            protocol: PROTO_TCP,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_fragment: true,
            options: vec![],
            payload_len: 0,
        },
        l4: L4Repr::Tcp(TcpRepr {
            src_port: sp,
            dst_port: dp,
            seq,
            ack,
            flags: fl,
            window: 500,
            urgent: 0,
            options: opts,
            payload_len: payload.len(),
        }),
        payload: payload.to_vec(),
    }
    .emit()
    .expect("test frame emits")
}

struct Rig {
    sw: Box<dyn FrameSwitch>,
    tx: TxBatch,
    now: u64,
}

/// (out port, tcp repr, payload) of every frame the switch sent.
type Out = Vec<(u16, TcpRepr, Vec<u8>)>;

impl Rig {
    fn new() -> Rig {
        let spec = switch_programs().into_iter().find(|p| p.name == "appswitch").unwrap();
        let mut s = BTreeMap::new();
        s.insert("protocol".to_string(), "redis".to_string());
        s.insert("cache_entries".to_string(), "8".to_string());
        Rig { sw: spec.instantiate(s, 2).unwrap(), tx: TxBatch::new(2), now: 0 }
    }
    fn send(&mut self, port: u16, f: &[u8]) -> Out {
        self.now += 1_000_000;
        self.tx.clear();
        self.sw.on_frame(port, f, [0; 10], self.now, &mut self.tx);
        let mut out = Vec::new();
        for p in 0..2u16 {
            for (_, b) in self.tx.port(p).queued() {
                let fr = parse_frame(b).expect("switch output parses with valid checksums");
                let L4Repr::Tcp(t) = fr.l4 else { panic!("not tcp") };
                out.push((p, t, fr.payload));
            }
        }
        out
    }
    fn client(&mut self, seq: u32, ack: u32, fl: u8, payload: &[u8]) -> Out {
        let f = frame(true, seq, ack, fl, ts(seq), payload, SPORT);
        self.send(0, &f)
    }
    fn server(&mut self, seq: u32, ack: u32, fl: u8, payload: &[u8]) -> Out {
        let f = frame(false, seq, ack, fl, ts(seq + 7), payload, SPORT);
        self.send(1, &f)
    }
}

fn ts(v: u32) -> Vec<TcpOption> {
    vec![TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamps { value: v, echo: 1 }]
}

const A: u8 = flags::ACK;
const PA: u8 = flags::ACK | flags::PSH;

fn handshake(r: &mut Rig) {
    let syn = frame(
        true,
        C_ISN,
        0,
        flags::SYN,
        vec![TcpOption::Mss(1460), TcpOption::SackPermitted, TcpOption::Timestamps { value: 1, echo: 0 }, TcpOption::WindowScale(7)],
        &[],
        SPORT,
    );
    let out = r.send(0, &syn);
    assert_eq!(out.len(), 1);
    assert!(!out[0].1.options.contains(&TcpOption::SackPermitted), "SACK-permitted is disabled in the handshake");
    let synack = frame(false, S_ISN, C_ISN + 1, flags::SYN | A, vec![TcpOption::Mss(1460), TcpOption::SackPermitted, TcpOption::Timestamps { value: 9, echo: 1 }], &[], SPORT);
    assert!(!r.send(1, &synack)[0].1.options.contains(&TcpOption::SackPermitted));
    assert_eq!(r.client(C_ISN + 1, S_ISN + 1, A, &[]).len(), 1);
}

#[test]
fn miss_learn_hit_and_offsets() {
    let mut r = Rig::new();
    handshake(&mut r);
    let get = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    let val = b"$5\r\nhello\r\n";
    let (c, s) = (C_ISN + 1, S_ISN + 1);
    // Miss: forwarded unchanged to the server port.
    let out = r.client(c, s, PA, get);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1.seq, &out[0].2[..]), (1, c, &get[..]));
    // The server's answer is forwarded and learned.
    let c = c + get.len() as u32;
    let out = r.server(s, c, PA, val);
    assert_eq!((out[0].0, out[0].1.seq, out[0].1.ack), (0, s, c));
    let s_srv = s + val.len() as u32;
    // Hit: the switch answers on port 0 with the next server→client sequence number.
    let out = r.client(c, s_srv, PA, get);
    assert_eq!(out.len(), 1, "answered, not forwarded: {out:?}");
    let (port, t, p) = &out[0];
    assert_eq!(*port, 0);
    assert_eq!(&p[..], &val[..]);
    assert_eq!(t.seq, s_srv);
    assert_eq!((t.src_port, t.dst_port), (SPORT, CPORT));
    // Timestamps: the server's latest TSval, echoing the client's.
    assert!(t.options.contains(&TcpOption::Timestamps { value: s + 7, echo: c }), "{:?}", t.options);
    let alpha = get.len() as u32;
    let beta = val.len() as u32;
    // The client ACKs the reply: the server sees the ACK of its own bytes only (s_srv), and the
    // switch now ACKs the request to the client itself.
    let out = r.client(c + alpha, s_srv + beta, A, &[]);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!((out[0].0, out[0].1.ack), (0, c + alpha));
    assert_eq!((out[1].0, out[1].1.seq, out[1].1.ack), (1, c, s_srv));
    // A retransmission of the answered request: answered again (a bare ACK now that the client
    // holds the reply), never forwarded.
    let out = r.client(c, s_srv + beta, PA, get);
    assert!(out.iter().all(|o| o.0 == 0), "{out:?}");
    assert_eq!(out.len(), 1);
    // Next request (a write): forwarded with seq - α, ack - β.
    let set = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nnew\r\n";
    let out = r.client(c + alpha, s_srv + beta, PA, set);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1.seq, out[0].1.ack), (1, c, s_srv));
    // Server's +OK: forwarded with seq + β, ack + α; the cache takes the new value.
    let out = r.server(s_srv, c + set.len() as u32, PA, b"+OK\r\n");
    assert_eq!((out[0].0, out[0].1.seq, out[0].1.ack), (0, s_srv + beta, c + alpha + set.len() as u32));
    let c2 = c + alpha + set.len() as u32;
    let s2 = s_srv + beta + 5;
    let out = r.client(c2, s2, PA, get);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 0, "answered from the updated cache");
    assert_eq!(&out[0].2[..], b"$3\r\nnew\r\n");
    assert_eq!(out[0].1.seq, s2);
    // The client ACKs that reply: for the server it is the same ACK as the one before (the
    // paper's duplicate ACK, Fig. A-1), so it is not forwarded.
    let c3 = c2 + get.len() as u32;
    let out = r.client(c3, s2, A, &[]);
    assert!(out.iter().any(|o| o.0 == 1 && o.1.ack == s_srv + 5), "{out:?}");
    let out = r.client(c3, s2 + 9, A, &[]);
    assert!(out.iter().all(|o| o.0 == 0), "duplicate ACK suppressed: {out:?}");
}

#[test]
fn lost_reply_is_answered_again_with_same_bytes() {
    let mut r = Rig::new();
    handshake(&mut r);
    let get = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    let val = b"$1\r\nv\r\n";
    let (c, s) = (C_ISN + 1, S_ISN + 1);
    r.client(c, s, PA, get);
    let c = c + get.len() as u32;
    r.server(s, c, PA, val);
    let s = s + val.len() as u32;
    let first = r.client(c, s, PA, get);
    assert_eq!(first.len(), 1);
    // The reply was lost: the client retransmits the request (its ACK has not moved).
    let again = r.client(c, s, PA, get);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].0, 0);
    assert_eq!((again[0].1.seq, &again[0].2), (first[0].1.seq, &first[0].2));
    // Before the client holds the reply, the switch does not acknowledge the request.
    assert_eq!(again[0].1.ack, c);
}

#[test]
fn other_ports_and_garbage_pass_through() {
    let mut r = Rig::new();
    let f = frame(true, 1, 2, PA, vec![], b"\x00\xffgarbage", 80);
    let out = r.send(0, &f);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, &out[0].2[..]), (1, &b"\x00\xffgarbage"[..]));
    // Garbage on the Redis port of a tracked connection: forwarded, never answered.
    handshake(&mut r);
    let out = r.client(C_ISN + 1, S_ISN + 1, PA, b"\x00\x01\x02 not resp\r\n*x\r\n");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 1);
}
