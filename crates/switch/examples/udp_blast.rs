//! A UDP traffic source and sink for measuring the real switch's forwarding rate between veth
//! ports (`docs/runtime.md`): `udp_blast send DST_IP:PORT SECONDS PAYLOAD_BYTES` sends as fast
//! as one socket can (sendmmsg, 64 datagrams per call); `udp_blast recv BIND_IP:PORT SECONDS` counts what arrives. Each prints one
//! JSON line (packets, seconds, packets per second).

use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: udp_blast send DST:PORT SECONDS PAYLOAD_BYTES | udp_blast recv BIND:PORT SECONDS");
        std::process::exit(2)
    };
    if a.len() < 3 {
        usage();
    }
    let secs: f64 = a[2].parse().unwrap_or_else(|_| usage());
    match a[0].as_str() {
        "send" => {
            let size: usize = a
                .get(3)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| usage());
            let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
            s.connect(&a[1]).expect("connect");
            let buf = vec![0x5au8; size];
            let start = Instant::now();
            let (mut sent, mut errors) = (0u64, 0u64);
            let mut iov = libc::iovec {
                iov_base: buf.as_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            };
            // SAFETY: mmsghdr is plain old data; every message points at the one iovec above.
            let mut msgs: Vec<libc::mmsghdr> =
                (0..64).map(|_| unsafe { std::mem::zeroed() }).collect();
            for m in msgs.iter_mut() {
                m.msg_hdr.msg_iov = &mut iov;
                m.msg_hdr.msg_iovlen = 1;
            }
            let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
            while start.elapsed().as_secs_f64() < secs {
                for _ in 0..16 {
                    // SAFETY: a connected UDP socket and valid messages.
                    let rc = unsafe {
                        libc::sendmmsg(fd, msgs.as_mut_ptr(), msgs.len() as libc::c_uint, 0)
                    };
                    if rc > 0 {
                        sent += rc as u64;
                    } else {
                        errors += 1;
                    }
                }
            }
            let t = start.elapsed().as_secs_f64();
            println!("{{\"sent\": {sent}, \"send_errors\": {errors}, \"seconds\": {t:.3}, \"pps\": {:.0}}}", sent as f64 / t);
        }
        "recv" => {
            let s = UdpSocket::bind(&a[1]).expect("bind");
            s.set_read_timeout(Some(Duration::from_millis(200)))
                .expect("timeout");
            let mut buf = vec![0u8; 65536];
            let deadline = Instant::now() + Duration::from_secs_f64(secs);
            let (mut got, mut first, mut last) = (0u64, None, Instant::now());
            while Instant::now() < deadline {
                if s.recv(&mut buf).is_ok() {
                    got += 1;
                    last = Instant::now();
                    first.get_or_insert(last);
                }
            }
            let t = first.map(|f| (last - f).as_secs_f64()).unwrap_or(0.0);
            println!(
                "{{\"received\": {got}, \"seconds\": {t:.3}, \"pps\": {:.0}}}",
                got as f64 / t.max(1e-9)
            );
        }
        _ => usage(),
    }
}
