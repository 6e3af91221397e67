//! A static IPv4 route table for `Verdict::Route` on the real switch (`--route CIDR=PORT`):
//! longest prefix on the routing header's destination (the tunnel's outer one when there is a
//! tunnel), so programs written for the simulator's routed fabric run unchanged.

/// Routes as (prefix, length, port), longest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteTable {
    routes: Vec<(u32, u8, u16)>,
}

impl RouteTable {
    /// Parse `CIDR=PORT` entries, e.g. `10.0.2.0/24=1`, `0.0.0.0/0=0`; ports must be below
    /// `num_ports`. Errors name the entry and what was expected.
    pub fn parse(entries: &[String], num_ports: u16) -> Result<Self, String> {
        let mut routes = Vec::new();
        for e in entries {
            let bad =
                |why: &str| format!("--route {e}: {why} (expected CIDR=PORT, e.g. 10.0.2.0/24=1)");
            let (cidr, port) = e.split_once('=').ok_or_else(|| bad("no '='"))?;
            let (addr, len) = cidr.split_once('/').unwrap_or((cidr, "32"));
            let addr: std::net::Ipv4Addr = addr
                .trim()
                .parse()
                .map_err(|_| bad("not an IPv4 address"))?;
            let len: u8 = len
                .trim()
                .parse()
                .ok()
                .filter(|l| *l <= 32)
                .ok_or_else(|| bad("prefix length must be 0..=32"))?;
            let port: u16 = port
                .trim()
                .parse()
                .map_err(|_| bad("port is not a number"))?;
            if port >= num_ports {
                return Err(bad(&format!(
                    "port {port} does not exist (ports 0..{num_ports})"
                )));
            }
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            let a = u32::from(addr);
            if a & !mask != 0 {
                return Err(bad("address has bits set beyond the prefix length"));
            }
            routes.push((a, len, port));
        }
        routes.sort_by_key(|r| std::cmp::Reverse(r.1));
        Ok(RouteTable { routes })
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The port of the longest prefix containing `dst`.
    pub fn lookup(&self, dst: u32) -> Option<u16> {
        self.routes
            .iter()
            .find(|(a, len, _)| {
                let mask = if *len == 0 { 0 } else { u32::MAX << (32 - len) };
                dst & mask == *a
            })
            .map(|r| r.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_errors_name_the_entry() {
        let t = RouteTable::parse(
            &[
                "0.0.0.0/0=0".into(),
                "10.0.2.0/24=1".into(),
                "10.0.2.7=2".into(),
            ],
            3,
        )
        .unwrap();
        assert_eq!(
            t.lookup(u32::from(std::net::Ipv4Addr::new(10, 0, 2, 9))),
            Some(1)
        );
        assert_eq!(
            t.lookup(u32::from(std::net::Ipv4Addr::new(10, 0, 2, 7))),
            Some(2)
        );
        assert_eq!(
            t.lookup(u32::from(std::net::Ipv4Addr::new(1, 1, 1, 1))),
            Some(0)
        );
        let e = RouteTable::parse(&["10.0.2.0/24=5".into()], 2).unwrap_err();
        assert!(e.contains("10.0.2.0/24=5") && e.contains("port 5"), "{e}");
        assert!(RouteTable::parse(&["10.0.2.1/24=0".into()], 2).is_err());
    }
}
