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

/// A receive batch: `n` slots of frame buffers with their recvmmsg headers, built once and
/// reused (the headers point into the slots' heap buffers, which never move).
pub struct RxBatch {
    vnet: Vec<VnetHeader>,
    data: Vec<Vec<u8>>,
    addrs: Vec<libc::sockaddr_ll>,
    iov: Vec<[libc::iovec; 2]>,
    msgs: Vec<libc::mmsghdr>,
    /// Slots of the last receive that hold a whole frame, and their frame lengths.
    valid: Vec<(usize, usize)>,
    /// Frames cut because they were larger than the buffer (dropped and counted).
    pub truncated: u64,
}

impl RxBatch {
    pub fn new(n: usize) -> Self {
        let mut b = RxBatch {
            vnet: vec![[0; 10]; n],
            data: (0..n).map(|_| vec![0u8; MAX_FRAME_BYTES]).collect(),
            // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; n],
            iov: Vec::with_capacity(n),
            // SAFETY: mmsghdr is plain old data; the pointers are set right below.
            msgs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
            valid: Vec::with_capacity(n),
            truncated: 0,
        };
        for i in 0..n {
            b.iov.push([
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
        for i in 0..n {
            b.msgs[i].msg_hdr.msg_iov = b.iov[i].as_mut_ptr();
            b.msgs[i].msg_hdr.msg_iovlen = 2;
            b.msgs[i].msg_hdr.msg_name =
                &mut b.addrs[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
        }
        b
    }
    pub fn len(&self) -> usize {
        self.valid.len()
    }
    pub fn is_empty(&self) -> bool {
        self.valid.is_empty()
    }
    /// Frame `i` of the last receive: its vnet header and its bytes (mutable, so checksums can be
    /// completed in place).
    pub fn frame_mut(&mut self, i: usize) -> (VnetHeader, &mut [u8]) {
        let (slot, len) = self.valid[i];
        (self.vnet[slot], &mut self.data[slot][..len])
    }
    /// Whether frame `i` is one the host sent out of this interface (skipped by the runtime; only
    /// seen on kernels without PACKET_IGNORE_OUTGOING).
    pub fn is_outgoing(&self, i: usize) -> bool {
        self.addrs[self.valid[i].0].sll_pkttype == PACKET_OUTGOING
    }
}

pub struct PacketSocket {
    fd: OwnedFd,
    pub iface: String,
    pub ifindex: i32,
    /// sendmmsg headers, reused across batches (rebuilt per batch: they point at the frames).
    tx_headers: std::cell::RefCell<(Vec<[libc::iovec; 2]>, Vec<libc::mmsghdr>)>,
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
            tx_headers: Default::default(),
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receive up to the batch's size of frames without blocking; returns how many (0 when none
    /// are waiting).
    pub fn recv_batch(&self, b: &mut RxBatch) -> io::Result<usize> {
        b.valid.clear();
        for m in b.msgs.iter_mut() {
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            m.msg_hdr.msg_flags = 0;
            m.msg_len = 0;
        }
        // SAFETY: every header points into `b`'s own buffers (see RxBatch::new), which outlive
        // the call; the kernel writes at most iov_len bytes into each.
        let rc = unsafe {
            libc::recvmmsg(
                self.raw_fd(),
                b.msgs.as_mut_ptr(),
                b.msgs.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        for i in 0..rc as usize {
            let total = b.msgs[i].msg_len as usize;
            if b.msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || total < VNET_LEN {
                b.truncated += 1;
                continue;
            }
            b.valid.push((i, (total - VNET_LEN).min(MAX_FRAME_BYTES)));
        }
        Ok(b.valid.len())
    }

    /// Send frames (each with its vnet header). Returns (sent, failed). Waits briefly for room
    /// when the socket buffer is full, so a burst is not lost to EAGAIN.
    pub fn send_batch(&self, frames: &[(VnetHeader, Vec<u8>)]) -> (usize, usize) {
        let mut headers = self.tx_headers.borrow_mut();
        let (iov, msgs) = &mut *headers;
        iov.clear();
        iov.extend(frames.iter().map(|(h, f)| {
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
        }));
        // SAFETY: as in recv_batch; the kernel only reads the buffers, which outlive the call.
        msgs.resize_with(frames.len(), || unsafe { std::mem::zeroed() });
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
