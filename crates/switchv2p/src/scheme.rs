//! The V2P translation schemes an experiment can select: SwitchV2P (and its ablations) and the
//! paper's seven baselines.

use std::fmt;
use innet_registry::{ExperimentError, ListItem};

/// How virtual destinations get resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Scheme {
    /// Pure gateway: every tenant packet goes through a gateway (Andromeda's Hoverboard model).
    NoCache,
    /// Every switch learns destinations from resolved packets and resolves from its own cache.
    LocalLearning,
    /// Like LocalLearning, but only the gateway ToRs cache (Sailfish-like).
    GwCache,
    /// ToR route caches (LRU); misses go through the switch CPU (Bluebird).
    Bluebird,
    /// Hosts learn mappings after a first lookup through the gateway (VL2-like on-demand).
    OnDemand,
    /// Hosts pre-programmed with every mapping.
    Direct,
    /// A central controller solving the placement ILP every 150 µs / 300 µs (the theoretical
    /// baseline of the paper's Appendix A).
    Controller150,
    Controller300,
    /// SwitchV2P with all its mechanisms.
    SwitchV2P,
    /// SwitchV2P without invalidation packets (Table 4, row 3).
    SwitchV2PNoInvalidation,
    /// SwitchV2P sending an invalidation packet for every tagged hit (no timestamp vector; Table 4, row 4).
    SwitchV2PNoTimestampVector,
}

impl Scheme {
    pub const ALL: [Scheme; 11] = [
        Scheme::NoCache,
        Scheme::LocalLearning,
        Scheme::GwCache,
        Scheme::Bluebird,
        Scheme::OnDemand,
        Scheme::Direct,
        Scheme::Controller150,
        Scheme::Controller300,
        Scheme::SwitchV2P,
        Scheme::SwitchV2PNoInvalidation,
        Scheme::SwitchV2PNoTimestampVector,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scheme::NoCache => "nocache",
            Scheme::LocalLearning => "locallearning",
            Scheme::GwCache => "gwcache",
            Scheme::Bluebird => "bluebird",
            Scheme::OnDemand => "ondemand",
            Scheme::Direct => "direct",
            Scheme::Controller150 => "controller150",
            Scheme::Controller300 => "controller300",
            Scheme::SwitchV2P => "switchv2p",
            Scheme::SwitchV2PNoInvalidation => "switchv2p_noinval",
            Scheme::SwitchV2PNoTimestampVector => "switchv2p_nots",
        }
    }

    pub fn parse(s: &str) -> Result<Scheme, String> {
        let t = s.trim().to_ascii_lowercase();
        Scheme::ALL.iter().copied().find(|x| x.name() == t).ok_or_else(|| {
            format!("unknown scheme '{s}'; expected one of {}", Scheme::ALL.map(|x| x.name()).join(", "))
        })
    }

    /// The schemes a parameter `name` lists: a comma list, or "all" (every scheme but the slow
    /// Controller ones); at least one.
    pub fn parse_list(name: &str, s: &str) -> Result<Vec<Scheme>, ExperimentError> {
        if s.trim() == "all" {
            return Ok(Scheme::ALL.into_iter().filter(|x| x.controller_interval_ps().is_none()).collect());
        }
        let v: Vec<Scheme> = innet_registry::parse_list(name, s)?;
        if v.is_empty() {
            return Err(ExperimentError::bad_param(name, s, "at least one scheme, or all"));
        }
        Ok(v)
    }

    pub fn is_switchv2p(self) -> bool {
        matches!(self, Scheme::SwitchV2P | Scheme::SwitchV2PNoInvalidation | Scheme::SwitchV2PNoTimestampVector)
    }

    /// The controller's solving interval, for the Controller schemes.
    pub fn controller_interval_ps(self) -> Option<u64> {
        match self {
            Scheme::Controller150 => Some(150_000_000),
            Scheme::Controller300 => Some(300_000_000),
            _ => None,
        }
    }

    /// Whether switches hold a direct-mapped mapping cache under this scheme.
    pub fn uses_switch_cache(self) -> bool {
        self.is_switchv2p() || matches!(self, Scheme::LocalLearning | Scheme::GwCache)
    }

    /// How hosts pick the outer destination.
    pub fn host_mode(self) -> HostMode {
        match self {
            Scheme::Direct => HostMode::Direct,
            Scheme::OnDemand => HostMode::OnDemand,
            _ => HostMode::Gateway,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The host vswitch's resolution policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostMode {
    /// Unresolved: to a gateway chosen per flow.
    Gateway,
    /// Straight to the current PIP (global knowledge).
    Direct,
    /// Learned mappings go direct; others to a gateway, after which the mapping is learned.
    OnDemand,
}

impl ListItem for Scheme {
    fn parse_item(item: &str) -> Result<Scheme, String> {
        Scheme::parse(item).map_err(|_| format!("one of {}", Scheme::ALL.map(|x| x.name()).join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors_list_choices() {
        for s in Scheme::ALL {
            assert_eq!(Scheme::parse(s.name()), Ok(s));
        }
        let e = Scheme::parse("bogus").unwrap_err();
        assert!(e.contains("nocache") && e.contains("switchv2p_nots"), "{e}");
        assert_eq!(Scheme::parse_list("schemes", "nocache, switchv2p").unwrap(), vec![Scheme::NoCache, Scheme::SwitchV2P]);
        assert!(Scheme::parse_list("schemes", " , ").unwrap_err().to_string().starts_with("parameter 'schemes': expected at least one scheme"));
        let e = Scheme::parse_list("schemes", "nocache,bogus").unwrap_err().to_string();
        assert!(e.starts_with("parameter 'schemes': expected each item to be one of nocache") && e.ends_with("got 'bogus'"), "{e}");
    }
}
