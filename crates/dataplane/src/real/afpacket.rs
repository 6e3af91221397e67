//! One Linux interface as an AF_PACKET socket: every frame the interface receives (all
//! ethertypes, promiscuous), none of the frames this socket itself sends
//! (PACKET_IGNORE_OUTGOING), each frame with its 10-byte virtio_net_hdr (PACKET_VNET_HDR) so
//! checksum-offloaded and GSO frames are recognizable. Receive and send in batches with
//! recvmmsg/sendmmsg; the socket is non-blocking.
//!
//! This is the one module of the runtime with `unsafe` (the libc calls); buffers are owned
//! Rust vectors and every length the kernel returns is checked against them.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::switch::VnetHeader;

const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_OUTGOING: u8 = 4;
const VNET_LEN: usize = 10;
/// Largest frame accepted: a 64 KiB GSO super-frame plus headers.
pub const MAX_FRAME_BYTES: usize = 65536 + 128;

/// A receive batch: `n` slots of frame buffers, reused.
pub struct RxBatch {
    vnet: Vec<VnetHeader>,
    data: Vec<Vec<u8>>,
    addrs: Vec<libc::sockaddr_ll>,
    lens: Vec<usize>,
    count: usize,
    /// Frames cut because they were larger than the buffer (dropped and counted).
    pub truncated: u64,
}

impl RxBatch {
    pub fn new(n: usize) -> Self {
        RxBatch {
            vnet: vec![[0; 10]; n],
            data: (0..n).map(|_| vec![0u8; MAX_FRAME_BYTES]).collect(),
            // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; n],
            lens: vec![0; n],
            count: 0,
            truncated: 0,
        }
    }
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Frame `i` of the last receive: its vnet header and its bytes (mutable, so checksums can be
    /// completed in place).
    pub fn frame_mut(&mut self, i: usize) -> (VnetHeader, &mut [u8]) {
        let len = self.lens[i];
        (self.vnet[i], &mut self.data[i][..len])
    }
    /// Whether frame `i` is one the host sent out of this interface (skipped by the runtime; only
    /// seen on kernels without PACKET_IGNORE_OUTGOING).
    pub fn is_outgoing(&self, i: usize) -> bool {
        self.addrs[i].sll_pkttype == PACKET_OUTGOING
    }
}

pub struct PacketSocket {
    fd: OwnedFd,
    pub iface: String,
    pub ifindex: i32,
}

fn os_err(what: &str, iface: &str) -> String {
    let e = io::Error::last_os_error();
    let hint = if e.raw_os_error() == Some(libc::EPERM) {
        " (AF_PACKET needs root or CAP_NET_RAW)"
    } else {
        ""
    };
    format!("interface {iface}: {what}: {e}{hint}")
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> libc::c_int {
    // SAFETY: a valid fd and a pointer to a c_int of the given size.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    }
}

impl PacketSocket {
    /// Open `iface` (must exist and be up; the runtime does not configure interfaces).
    pub fn open(iface: &str) -> Result<Self, String> {
        let cname = CString::new(iface)
            .map_err(|_| format!("interface name {iface:?} contains a NUL byte"))?;
        // SAFETY: a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(format!(
                "interface {iface}: no such interface in this network namespace"
            ));
        }
        let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
        // SAFETY: plain socket(2).
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto,
            )
        };
        if raw < 0 {
            return Err(os_err("socket(AF_PACKET)", iface));
        }
        // SAFETY: a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if setsockopt_int(raw, libc::SOL_PACKET, PACKET_VNET_HDR, 1) != 0 {
            return Err(os_err("PACKET_VNET_HDR", iface));
        }
        if setsockopt_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1) != 0 {
            // Older kernels: the runtime also skips PACKET_OUTGOING frames by their address.
        }
        for (opt, bytes) in [(libc::SO_RCVBUF, 8 << 20), (libc::SO_SNDBUF, 8 << 20)] {
            setsockopt_int(raw, libc::SOL_SOCKET, opt, bytes);
        }
        // SAFETY: sockaddr_ll zeroed then filled; its size passed.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex;
        let rc = unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(os_err("bind", iface));
        }
        // SAFETY: packet_mreq zeroed then filled.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        let rc = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                &mreq as *const libc::packet_mreq as *const libc::c_void,
                std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(os_err("promiscuous mode", iface));
        }
        Ok(PacketSocket {
            fd,
            iface: iface.to_string(),
            ifindex,
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receive up to the batch's size of frames without blocking; returns how many (0 when none
    /// are waiting).
    pub fn recv_batch(&self, b: &mut RxBatch) -> io::Result<usize> {
        let n = b.data.len();
        let mut iov: Vec<[libc::iovec; 2]> = Vec::with_capacity(n);
        for i in 0..n {
            iov.push([
                libc::iovec {
                    iov_base: b.vnet[i].as_mut_ptr() as *mut libc::c_void,
                    iov_len: VNET_LEN,
                },
                libc::iovec {
                    iov_base: b.data[i].as_mut_ptr() as *mut libc::c_void,
                    iov_len: b.data[i].len(),
                },
            ]);
        }
        // SAFETY: mmsghdr is plain old data; every pointer set below points into `iov`,
        // `b.addrs`, `b.vnet`, `b.data`, which outlive the call.
        let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
        for i in 0..n {
            msgs[i].msg_hdr.msg_iov = iov[i].as_mut_ptr();
            msgs[i].msg_hdr.msg_iovlen = 2;
            msgs[i].msg_hdr.msg_name =
                &mut b.addrs[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
            msgs[i].msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        }
        let rc = unsafe {
            libc::recvmmsg(
                self.raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            b.count = 0;
            if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        let got = rc as usize;
        let mut kept = 0;
        for i in 0..got {
            let total = msgs[i].msg_len as usize;
            if msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || total < VNET_LEN {
                b.truncated += 1;
                continue;
            }
            let len = (total - VNET_LEN).min(b.data[i].len());
            if kept != i {
                b.vnet.swap(kept, i);
                b.data.swap(kept, i);
                b.addrs.swap(kept, i);
            }
            b.lens[kept] = len;
            kept += 1;
        }
        b.count = kept;
        Ok(kept)
    }

    /// Send frames (each with its vnet header). Returns (sent, failed). Waits briefly for room
    /// when the socket buffer is full, so a burst is not lost to EAGAIN.
    pub fn send_batch(&self, frames: &[(VnetHeader, Vec<u8>)]) -> (usize, usize) {
        let mut iov: Vec<[libc::iovec; 2]> = frames
            .iter()
            .map(|(h, f)| {
                [
                    libc::iovec {
                        iov_base: h.as_ptr() as *mut libc::c_void,
                        iov_len: VNET_LEN,
                    },
                    libc::iovec {
                        iov_base: f.as_ptr() as *mut libc::c_void,
                        iov_len: f.len(),
                    },
                ]
            })
            .collect();
        // SAFETY: as in recv_batch; the kernel only reads the buffers.
        let mut msgs: Vec<libc::mmsghdr> = (0..frames.len())
            .map(|_| unsafe { std::mem::zeroed() })
            .collect();
        for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
            m.msg_hdr.msg_iov = v.as_mut_ptr();
            m.msg_hdr.msg_iovlen = 2;
        }
        let (mut at, mut sent, mut failed, mut waits) = (0usize, 0usize, 0usize, 0u32);
        while at < msgs.len() {
            let rc = unsafe {
                libc::sendmmsg(
                    self.raw_fd(),
                    msgs[at..].as_mut_ptr(),
                    (msgs.len() - at) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if rc > 0 {
                at += rc as usize;
                sent += rc as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) if waits < 100 => {
                    waits += 1;
                    let mut p = libc::pollfd {
                        fd: self.raw_fd(),
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut p, 1, 10) };
                }
                Some(libc::EINTR) => {}
                _ => {
                    // This frame is refused (too big for the MTU, interface down, ...): skip it.
                    failed += 1;
                    at += 1;
                }
            }
        }
        (sent, failed)
    }
}
