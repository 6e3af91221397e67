//! A tunnelling virtual switch for hosts: VMs with virtual addresses live on servers; packets
//! to a VM are encapsulated toward the physical address of its server (IP-in-IP, UDP or Geneve)
//! and decapsulated on arrival. The building block of overlay networks such as SwitchV2P's.

use std::collections::HashMap;
use std::sync::Arc;

use crate::host::{HostAddr, Vswitch, VswitchVerdict};
use crate::metrics::DropReason;
use crate::network::Network;
use crate::packet::{ecn, Encap, Ipv4, OptionBytes, PacketId, Tunnel, IP_PROTO_IPIP, IP_PROTO_UDP};
use crate::routing::flow_hash;

/// Which outer header to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelKind {
    IpInIp,
    /// IP-in-IP with zero-byte in-band metadata (see [`Encap::IpInIpTagged`]).
    IpInIpTagged,
    /// UDP to `port`; the source port is `port` too unless `entropy` is set, in which case it is
    /// a hash of the inner 5-tuple (so ECMP spreads flows between the same two servers).
    Udp { port: u16, entropy: bool },
    Geneve { vni: u32 },
}

/// VIP → PIP mapping shared by every host's vswitch (the "directory").
pub type Directory = Arc<HashMap<u32, u32>>;

pub struct TunnelVswitch {
    pub kind: TunnelKind,
    pub directory: Directory,
    /// Virtual addresses of the VMs on this host.
    pub local_vms: Vec<u32>,
    pub encapsulated: u64,
    pub decapsulated: u64,
}

impl TunnelVswitch {
    pub fn new(kind: TunnelKind, directory: Directory, local_vms: Vec<u32>) -> Self {
        TunnelVswitch { kind, directory, local_vms, encapsulated: 0, decapsulated: 0 }
    }

    /// Push the outer header toward `pip` (the caller decides the physical destination).
    pub fn encapsulate(kind: &TunnelKind, net: &mut Network, host: &HostAddr, pkt: PacketId, pip: u32) {
        let p = net.pkt_mut(pkt);
        let inner_ecn = p.ip.ecn;
        let (proto, encap) = match kind {
            TunnelKind::IpInIp => (IP_PROTO_IPIP, Encap::IpInIp),
            TunnelKind::IpInIpTagged => (IP_PROTO_IPIP, Encap::IpInIpTagged { tags: OptionBytes::default() }),
            TunnelKind::Udp { port, entropy } => {
                let (s, d) = p.l4.ports();
                let src_port = if *entropy {
                    0xC000 | (flow_hash((p.ip.src, p.ip.dst, p.ip.protocol, s, d), 0) as u16 & 0x3FFF)
                } else {
                    *port
                };
                (IP_PROTO_UDP, Encap::Udp { src_port, dst_port: *port })
            }
            TunnelKind::Geneve { vni } => {
                let (s, d) = p.l4.ports();
                let src_port = 0xC000 | (flow_hash((p.ip.src, p.ip.dst, p.ip.protocol, s, d), 0) as u16 & 0x3FFF);
                (IP_PROTO_UDP, Encap::Geneve { src_port, vni: *vni, options: Vec::new() })
            }
        };
        let mut outer = Ipv4::new(host.ip, pip, proto);
        // RFC 6040 normal mode: the outer header copies the inner ECN field.
        outer.ecn = inner_ecn;
        p.tunnel = Some(Tunnel { outer, encap });
    }
}

impl Vswitch for TunnelVswitch {
    fn egress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict {
        let dst = net.pkt(pkt).ip.dst;
        match self.directory.get(&dst) {
            Some(&pip) => {
                Self::encapsulate(&self.kind, net, host, pkt, pip);
                self.encapsulated += 1;
                VswitchVerdict::Pass
            }
            None => VswitchVerdict::Drop(DropReason::Vswitch),
        }
    }

    fn ingress(&mut self, net: &mut Network, host: &HostAddr, pkt: PacketId) -> VswitchVerdict {
        let p = net.pkt_mut(pkt);
        if let Some(t) = p.tunnel.take() {
            if t.outer.dst != host.ip {
                p.tunnel = Some(t);
                return VswitchVerdict::Drop(DropReason::NotForThisHost);
            }
            // RFC 6040 decapsulation: CE on the outer header marks an ECN-capable inner packet.
            if t.outer.ecn == ecn::CE && p.ip.ecn != ecn::NOT_ECT {
                p.ip.ecn = ecn::CE;
            }
            self.decapsulated += 1;
        }
        VswitchVerdict::Pass
    }

    fn owns(&self, ip: u32) -> bool {
        self.local_vms.contains(&ip)
    }
}
