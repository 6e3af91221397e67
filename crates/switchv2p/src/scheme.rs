//! The V2P translation schemes an experiment can select: SwitchV2P (and its ablations), the
//! paper's seven baselines, and schemes defined outside this crate ([`CacheScheme`]: one of the
//! cache-based protocols with a cache of its own; docs/extending.md).

use std::fmt;
use innet_registry::{ExperimentError, ListItem};

use crate::cache::{ArtifactIds, DirectMapped, MappingCache};
use crate::switch::V2pRole;

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
    /// A scheme defined outside this crate: a built-in protocol with its own cache. Not in
    /// [`Scheme::ALL`], not parsed by name (its crate names it), and its results do not
    /// serialise (the split sweeps run built-in schemes only).
    #[serde(skip)]
    Custom(&'static CacheScheme),
}

/// A scheme built from the switch protocol of a built-in scheme (`protocol`: LocalLearning,
/// GwCache, SwitchV2P or one of its ablations) and a cache of its own on every caching switch
/// (`cache`, called once per switch). Everything else (which switches cache, their slots, the
/// hosts, the metrics) is the protocol's. Two schemes with the same name are the same scheme.
///
/// ```
/// use innet_switchv2p::cache::{DirectMapped, MappingCache};
/// use innet_switchv2p::scheme::{CacheScheme, CacheSite, Scheme};
/// fn salted(site: &CacheSite) -> Box<dyn MappingCache> {
///     Box::new(DirectMapped::new(site.slots, site.salt ^ 0x9e37))
/// }
/// static MINE: CacheScheme = CacheScheme { name: "switchv2p_salted", protocol: Scheme::SwitchV2P, cache: salted };
/// let s = Scheme::Custom(&MINE);
/// assert_eq!((s.name(), s.protocol(), s.is_switchv2p()), ("switchv2p_salted", Scheme::SwitchV2P, true));
/// ```
#[derive(Debug)]
pub struct CacheScheme {
    /// The scheme's name in summaries and tables: not a built-in scheme's.
    pub name: &'static str,
    pub protocol: Scheme,
    pub cache: fn(&CacheSite) -> Box<dyn MappingCache>,
}

/// What a cache is built for: its switch's slots (the run's total cache split over the caching
/// switches), the index-hash salt the protocol uses (0 on every switch for SwitchV2P, random per
/// switch for LocalLearning and GwCache), the switch's role, and, with `cache_index=artifact`,
/// the artifact's VM numbers the built-in caches hash instead of the VIP.
#[derive(Debug, Clone)]
pub struct CacheSite {
    pub slots: u32,
    pub salt: u32,
    pub role: V2pRole,
    pub artifact_ids: Option<ArtifactIds>,
}

impl CacheSite {
    /// The built-in schemes' cache for this site: direct-mapped, indexed as the run asks.
    pub fn direct_mapped(&self) -> DirectMapped {
        match &self.artifact_ids {
            Some(ids) => DirectMapped::artifact(self.slots, self.salt, ids.clone()),
            None => DirectMapped::new(self.slots, self.salt),
        }
    }
}

impl PartialEq for CacheScheme {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for CacheScheme {}
impl std::hash::Hash for CacheScheme {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h)
    }
}
impl PartialOrd for CacheScheme {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for CacheScheme {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name.cmp(other.name)
    }
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
            Scheme::Custom(c) => c.name,
        }
    }

    /// The built-in scheme whose switch protocol, hosts and cache placement this one follows:
    /// itself, or a [`CacheScheme`]'s protocol.
    pub fn protocol(self) -> Scheme {
        match self {
            Scheme::Custom(c) => c.protocol.protocol(),
            s => s,
        }
    }

    /// The cache of one caching switch: SwitchV2P's direct-mapped cache for the built-in
    /// schemes, a [`CacheScheme`]'s own otherwise.
    pub fn new_cache(self, site: &CacheSite) -> Box<dyn MappingCache> {
        match self {
            Scheme::Custom(c) => (c.cache)(site),
            _ => Box::new(site.direct_mapped()),
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
        Scheme::parse_list_with(name, s, &[])
    }

    /// [`Scheme::parse_list`] knowing `extra` schemes besides the built-in ones (a crate that
    /// defines [`CacheScheme`]s lets its experiments name them; "all" includes them).
    pub fn parse_list_with(name: &str, s: &str, extra: &[Scheme]) -> Result<Vec<Scheme>, ExperimentError> {
        let known: Vec<Scheme> = Scheme::ALL.into_iter().chain(extra.iter().copied()).collect();
        if s.trim() == "all" {
            return Ok(known.into_iter().filter(|x| x.controller_interval_ps().is_none()).collect());
        }
        let names: Vec<String> = innet_registry::parse_list(name, s)?;
        let choices = || known.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ");
        let v = names
            .iter()
            .map(|n| {
                let t = n.to_ascii_lowercase();
                known.iter().copied().find(|x| x.name() == t).ok_or_else(|| ExperimentError::bad_param(name, n, format!("each item to be one of {}", choices())))
            })
            .collect::<Result<Vec<Scheme>, ExperimentError>>()?;
        if v.is_empty() {
            return Err(ExperimentError::bad_param(name, s, "at least one scheme, or all"));
        }
        Ok(v)
    }

    pub fn is_switchv2p(self) -> bool {
        matches!(self.protocol(), Scheme::SwitchV2P | Scheme::SwitchV2PNoInvalidation | Scheme::SwitchV2PNoTimestampVector)
    }

    /// The controller's solving interval, for the Controller schemes.
    pub fn controller_interval_ps(self) -> Option<u64> {
        match self.protocol() {
            Scheme::Controller150 => Some(150_000_000),
            Scheme::Controller300 => Some(300_000_000),
            _ => None,
        }
    }

    /// Whether switches hold a direct-mapped mapping cache under this scheme.
    pub fn uses_switch_cache(self) -> bool {
        self.is_switchv2p() || matches!(self.protocol(), Scheme::LocalLearning | Scheme::GwCache)
    }

    /// How hosts pick the outer destination.
    pub fn host_mode(self) -> HostMode {
        match self.protocol() {
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
