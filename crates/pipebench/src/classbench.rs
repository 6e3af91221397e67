//! ClassBench-style 5-tuple rules (Taylor & Turner, "ClassBench: a packet classification
//! benchmark", 2005) for the ACL, FW and IPC profiles: source/destination prefixes with the
//! profiles' prefix-length shapes, port ranges from ClassBench's five classes (WC, HI, LO, AR,
//! EM) and protocol mixes; plus the prefix expansion OVS needs to match a port range.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// Which ClassBench seed family the rules imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Access control lists (acl1..acl5): specific destinations, exact service ports.
    Acl,
    /// Firewalls (fw1..fw5): many wildcarded sources, port ranges.
    Fw,
    /// IP chains (ipc1, ipc2): specific sources and destinations, exact ports.
    Ipc,
}

impl Profile {
    pub fn parse(s: &str) -> Result<Profile, String> {
        match s.to_ascii_lowercase().as_str() {
            "acl" => Ok(Profile::Acl),
            "fw" => Ok(Profile::Fw),
            "ipc" => Ok(Profile::Ipc),
            _ => Err(format!("unknown ClassBench profile '{s}' (expected acl, fw or ipc)")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Profile::Acl => "acl",
            Profile::Fw => "fw",
            Profile::Ipc => "ipc",
        }
    }
}

/// ClassBench's port-range classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortClass {
    /// Wildcard 0:65535.
    Wc,
    /// 1024:65535.
    Hi,
    /// 0:1023.
    Lo,
    /// An arbitrary range.
    Ar,
    /// An exact port.
    Em,
}

/// An inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

impl PortRange {
    pub const ANY: PortRange = PortRange { lo: 0, hi: 65535 };
    pub fn is_wildcard(&self) -> bool {
        *self == Self::ANY
    }
    /// The value/mask pairs (disjoint prefixes of the 16-bit port) that cover the range exactly,
    /// as OVS needs it: a flow matches one masked value per field.
    pub fn to_masks(&self) -> Vec<(u16, u16)> {
        let mut out = Vec::new();
        let (mut lo, hi) = (self.lo as u32, self.hi as u32);
        while lo <= hi {
            // Largest aligned block starting at lo that stays inside the range.
            let mut size = if lo == 0 { 1u32 << 16 } else { 1u32 << lo.trailing_zeros() };
            while lo + size - 1 > hi {
                size >>= 1;
            }
            out.push((lo as u16, (!(size - 1) & 0xffff) as u16));
            lo += size;
        }
        out
    }
}

/// An IPv4 prefix (value already masked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub addr: u32,
    pub len: u8,
}

impl Prefix {
    pub fn mask(&self) -> u32 {
        if self.len == 0 { 0 } else { u32::MAX << (32 - self.len) }
    }
    pub fn contains(&self, a: u32) -> bool {
        a & self.mask() == self.addr
    }
    /// A random address inside the prefix.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        self.addr | (rng.gen::<u32>() & !self.mask())
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.addr.to_be_bytes();
        write!(f, "{}.{}.{}.{}/{}", b[0], b[1], b[2], b[3], self.len)
    }
}

/// One ClassBench rule: the 5-tuple filter (protocol `None` = wildcard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CbRule {
    pub src: Prefix,
    pub dst: Prefix,
    pub sport: PortRange,
    pub dport: PortRange,
    pub proto: Option<u8>,
}

/// Per-profile distributions. Weights are relative; prefix lengths are listed with weights.
struct Shape {
    src_len: &'static [(u8, u32)],
    dst_len: &'static [(u8, u32)],
    /// WC, HI, LO, AR, EM weights.
    sport: [u32; 5],
    dport: [u32; 5],
    /// (protocol or None for wildcard, weight).
    proto: &'static [(Option<u8>, u32)],
    /// How many distinct /16 "sites" addresses come from (address locality of real rule sets).
    n_sites: u32,
}

// The shapes follow the seed statistics ClassBench reports for its families (its Figs. 3–6 and
// Tables 2–4): ACL destinations are mostly hosts (/32) and small subnets, sources often wild;
// FW sources are mostly wildcards, ports frequently ranges; IPC has specific prefixes on both
// sides and exact ports. The seed files themselves are not used (not available here).
const ACL: Shape = Shape {
    src_len: &[(0, 22), (8, 3), (16, 8), (24, 20), (28, 7), (32, 40)],
    dst_len: &[(0, 3), (16, 6), (24, 26), (26, 5), (28, 8), (30, 4), (32, 48)],
    sport: [96, 1, 1, 1, 1],
    dport: [30, 5, 3, 8, 54],
    proto: &[(Some(6), 64), (Some(17), 22), (Some(1), 6), (None, 8)],
    n_sites: 40,
};
const FW: Shape = Shape {
    src_len: &[(0, 55), (8, 4), (16, 10), (24, 13), (32, 18)],
    dst_len: &[(0, 20), (16, 8), (24, 22), (28, 8), (32, 42)],
    sport: [80, 8, 2, 6, 4],
    dport: [35, 14, 4, 17, 30],
    proto: &[(Some(6), 58), (Some(17), 26), (Some(1), 4), (None, 12)],
    n_sites: 20,
};
const IPC: Shape = Shape {
    src_len: &[(0, 10), (16, 6), (24, 24), (28, 6), (32, 54)],
    dst_len: &[(0, 8), (16, 6), (24, 24), (28, 6), (32, 56)],
    sport: [55, 5, 5, 5, 30],
    dport: [40, 5, 5, 5, 45],
    proto: &[(Some(6), 50), (Some(17), 36), (Some(1), 8), (None, 6)],
    n_sites: 30,
};

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[(T, u32)]) -> T {
    let total: u32 = items.iter().map(|x| x.1).sum();
    let mut r = rng.gen_range(0..total);
    for &(v, w) in items {
        if r < w {
            return v;
        }
        r -= w;
    }
    items[items.len() - 1].0
}

/// Well-known service ports exact-match rules favour.
const SERVICE_PORTS: [u16; 16] = [80, 443, 53, 22, 25, 110, 123, 143, 161, 389, 445, 993, 3306, 5432, 8080, 8443];

fn port_range(rng: &mut ChaCha8Rng, weights: [u32; 5]) -> PortRange {
    let class = pick(rng, &[(PortClass::Wc, weights[0]), (PortClass::Hi, weights[1]), (PortClass::Lo, weights[2]), (PortClass::Ar, weights[3]), (PortClass::Em, weights[4])]);
    match class {
        PortClass::Wc => PortRange::ANY,
        PortClass::Hi => PortRange { lo: 1024, hi: 65535 },
        PortClass::Lo => PortRange { lo: 0, hi: 1023 },
        PortClass::Ar => {
            let lo = rng.gen_range(1..60000u16);
            let width = [10u16, 100, 256, 1000, 5000][rng.gen_range(0..5)];
            PortRange { lo, hi: lo.saturating_add(width) }
        }
        PortClass::Em => {
            let p = if rng.gen_bool(0.7) { SERVICE_PORTS[rng.gen_range(0..SERVICE_PORTS.len())] } else { rng.gen_range(1024..65535) };
            PortRange { lo: p, hi: p }
        }
    }
}

/// Generates ClassBench-style rules for a profile from a seeded generator.
pub struct RuleGen {
    shape: &'static Shape,
    sites: Vec<u32>,
}

impl RuleGen {
    pub fn new(profile: Profile, rng: &mut ChaCha8Rng) -> Self {
        let shape = match profile {
            Profile::Acl => &ACL,
            Profile::Fw => &FW,
            Profile::Ipc => &IPC,
        };
        // Sites: /16 blocks from private and public space, as real rule sets cluster addresses.
        let sites = (0..shape.n_sites)
            .map(|_| {
                let first = [10u32, 172, 192, 64, 128, 150][rng.gen_range(0..6)];
                (first << 24) | (rng.gen_range(0..256u32) << 16)
            })
            .collect();
        RuleGen { shape, sites }
    }

    fn prefix(&self, rng: &mut ChaCha8Rng, lens: &[(u8, u32)]) -> Prefix {
        let len = pick(rng, lens);
        // Addresses skew toward a few subnets inside each site, so prefixes nest and recur.
        let site = self.sites[(rng.gen::<f64>().powi(2) * self.sites.len() as f64) as usize];
        let addr = site | (rng.gen_range(0..16u32) << 8) | rng.gen_range(0..256u32);
        let p = Prefix { addr: 0, len };
        Prefix { addr: addr & p.mask(), len }
    }

    pub fn rule(&self, rng: &mut ChaCha8Rng) -> CbRule {
        let proto = pick(rng, self.shape.proto);
        let (sport, dport) = match proto {
            Some(6) | Some(17) => (port_range(rng, self.shape.sport), port_range(rng, self.shape.dport)),
            _ => (PortRange::ANY, PortRange::ANY),
        };
        CbRule { src: self.prefix(rng, self.shape.src_len), dst: self.prefix(rng, self.shape.dst_len), sport, dport, proto }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn port_ranges_expand_to_exact_covers() {
        for (lo, hi) in [(0u16, 65535u16), (1024, 65535), (0, 1023), (80, 80), (1000, 2000), (1, 65534), (33, 34)] {
            let r = PortRange { lo, hi };
            let masks = r.to_masks();
            for p in 0..=65535u32 {
                let n = masks.iter().filter(|(v, m)| (p as u16) & m == *v).count();
                assert_eq!(n, ((lo as u32..=hi as u32).contains(&p)) as usize, "{lo}:{hi} port {p}");
            }
        }
        assert_eq!(PortRange { lo: 1024, hi: 65535 }.to_masks().len(), 6);
        assert_eq!(PortRange { lo: 0, hi: 1023 }.to_masks(), vec![(0, 0xfc00)]);
    }

    #[test]
    fn profiles_differ_in_shape() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let count = |p: Profile, rng: &mut ChaCha8Rng| {
            let g = RuleGen::new(p, rng);
            let rules: Vec<CbRule> = (0..4000).map(|_| g.rule(rng)).collect();
            let wild_src = rules.iter().filter(|r| r.src.len == 0).count();
            let exact_dport = rules.iter().filter(|r| r.dport.lo == r.dport.hi).count();
            (wild_src, exact_dport)
        };
        let (acl_ws, acl_em) = count(Profile::Acl, &mut rng);
        let (fw_ws, _) = count(Profile::Fw, &mut rng);
        let (ipc_ws, _) = count(Profile::Ipc, &mut rng);
        assert!(fw_ws > 2 * acl_ws && acl_ws > ipc_ws, "{fw_ws} {acl_ws} {ipc_ws}");
        assert!(acl_em > 1500, "{acl_em}");
    }
}
