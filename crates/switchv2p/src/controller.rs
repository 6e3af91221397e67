//! The Controller baseline (paper §5 and Appendix A; the artifact's ILP controller): every
//! interval (150 or 300 µs of simulated time) the network pauses, a central controller reads the
//! per-ToR traffic matrix of the interval (packets toward gateways, per sender, gateway and
//! destination VIP), solves an integer program for which switches should cache which mappings,
//! and installs the result into the switches' LRU caches. Switches never learn by themselves.
//!
//! The program, as the artifact's "relaxed" cost: binary `x[s,d]` (switch `s` caches VIP `d`),
//! at most M mappings per switch; a packet of a (path, d) group costs 8 if any switch on its path
//! to the gateway holds `d` and 40 otherwise. Minimising Σ count × cost is maximising
//! Σ count × y[g] with `y[g] ≤ Σ_{s ∈ path(g)} x[s,d(g)]`, `0 ≤ y ≤ 1`.
//!
//! It is solved by HiGHS — the `highs` executable of the `highsbox` package from PyPI (installed
//! by scripts/setup.sh), run as a subprocess on a CPLEX-LP file — or, where the problem is tiny,
//! checked against exhaustive search in the tests.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use innet_dataplane::program::{Ctx, Metadata, Program, Verdict};
use innet_dataplane::state::{ResourceEntry, ResourceKind, ResourceReport};
use innet_dataplane::L3Forward;
use innet_sim::packet::Packet;

use crate::cache::Lru;
use crate::stats::SharedStats;
use crate::switch::{tunnel_tags, FabricFacts};

/// A switch under the Controller scheme: an LRU of controller-installed mappings, and (ToRs)
/// the interval's traffic matrix.
pub struct ControllerSwitch {
    pub switch_id: u32,
    pub cache: Lru,
    /// (outer source PIP, gateway PIP, destination VIP) → packets from local servers this interval.
    pub traffic: innet_sim::rng::FastMap<(u32, u32, u32), u64>,
    facts: Arc<FabricFacts>,
    stats: SharedStats,
    host_ports: Vec<Option<u32>>,
    l3: L3Forward,
}

impl ControllerSwitch {
    pub fn new(switch_id: u32, capacity: usize, facts: Arc<FabricFacts>, stats: SharedStats, host_ports: Vec<Option<u32>>) -> Self {
        ControllerSwitch { switch_id, cache: Lru::new(capacity), traffic: Default::default(), facts, stats, host_ports, l3: L3Forward::default() }
    }
}

impl Program for ControllerSwitch {
    fn name(&self) -> &str {
        "controller_cache"
    }

    fn ingress(&mut self, pkt: &mut Packet, meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        let to_gw = match pkt.tunnel.as_ref() {
            Some(t) if tunnel_tags(&t.encap).is_some() => self.facts.gateways.contains(&t.outer.dst),
            _ => false,
        };
        if to_gw {
            let vdst = pkt.ip.dst;
            if self.host_ports.get(meta.ingress_port as usize).copied().flatten().is_some() {
                let t = pkt.tunnel.as_ref().expect("tunnelled");
                *self.traffic.entry((t.outer.src, t.outer.dst, vdst)).or_insert(0) += 1;
            }
            if let Some(pip) = self.cache.get(vdst) {
                pkt.tunnel.as_mut().expect("tunnelled").outer.dst = pip;
                let mut s = self.stats.borrow_mut();
                s.hits[self.switch_id as usize] += 1;
            }
        }
        self.l3.forward(pkt, ctx)
    }

    fn resources(&self) -> ResourceReport {
        let mut r = ResourceReport::new(self.name());
        r.push(ResourceEntry::new("controller_cache", ResourceKind::Exact, self.cache.capacity() as u64, 32, 32));
        r
    }
}

/// One placement problem: packet groups with the switches on their way to the gateway.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlacementProblem {
    /// (switches on the path, destination VIP, packets).
    pub groups: Vec<(Vec<u32>, u32, u64)>,
    /// Mappings each switch may hold.
    pub capacity: u32,
}

impl PlacementProblem {
    /// Packets served by a placement (Σ count of groups with a chosen switch on their path).
    pub fn covered(&self, placement: &[(u32, u32)]) -> u64 {
        let set: std::collections::HashSet<(u32, u32)> = placement.iter().copied().collect();
        self.groups.iter().filter(|(path, d, _)| path.iter().any(|s| set.contains(&(*s, *d)))).map(|g| g.2).sum()
    }

    /// The program in CPLEX LP format, with the (switch, VIP) of each `x` column.
    pub fn to_lp(&self) -> (String, Vec<(u32, u32)>) {
        let mut xs: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        for (path, d, _) in &self.groups {
            for &s in path {
                let n = xs.len();
                xs.entry((s, *d)).or_insert(n);
            }
        }
        let mut cols = vec![(0, 0); xs.len()];
        for (&k, &i) in &xs {
            cols[i] = k;
        }
        let mut lp = String::from("Maximize\n obj:");
        for (g, (_, _, count)) in self.groups.iter().enumerate() {
            let _ = write!(lp, " + {count} y{g}");
        }
        lp.push_str("\nSubject To\n");
        for (g, (path, d, _)) in self.groups.iter().enumerate() {
            let _ = write!(lp, " c{g}: y{g}");
            for &s in path {
                let _ = write!(lp, " - x{}", xs[&(s, *d)]);
            }
            lp.push_str(" <= 0\n");
        }
        let mut per_switch: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (&(s, _), &i) in &xs {
            per_switch.entry(s).or_default().push(i);
        }
        for (s, v) in &per_switch {
            if v.len() as u64 > self.capacity as u64 {
                let _ = write!(lp, " m{s}:");
                for i in v {
                    let _ = write!(lp, " + x{i}");
                }
                let _ = writeln!(lp, " <= {}", self.capacity);
            }
        }
        lp.push_str("Bounds\n");
        for g in 0..self.groups.len() {
            let _ = writeln!(lp, " 0 <= y{g} <= 1");
        }
        lp.push_str("Binaries\n");
        for i in 0..cols.len() {
            let _ = write!(lp, " x{i}");
            if i % 16 == 15 {
                lp.push('\n');
            }
        }
        lp.push_str("\nEnd\n");
        (lp, cols)
    }
}

/// How a solve ended.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SolveStats {
    pub solves: u64,
    pub optimal: u64,
    pub time_limited: u64,
    #[serde(with = "innet_registry::exact_f64")]
    pub wall_seconds: f64,
    pub largest_columns: u64,
}

/// The HiGHS command-line solver.
#[derive(Debug, Clone)]
pub struct HighsCli {
    pub binary: PathBuf,
    pub lib_dir: Option<PathBuf>,
    pub time_limit_s: f64,
    pub stats: SolveStats,
    scratch: PathBuf,
}

impl HighsCli {
    /// Find HiGHS: `INNET_HIGHS` (path of the `highs` binary), else the `highsbox` package of
    /// the `python3` on PATH.
    pub fn locate(time_limit_s: f64) -> Result<Self, String> {
        let (binary, lib_dir) = if let Ok(p) = std::env::var("INNET_HIGHS") {
            let b = PathBuf::from(p);
            let lib = b.parent().and_then(|d| d.parent()).map(|d| d.join("lib"));
            (b, lib)
        } else {
            let out = Command::new("python3")
                .args(["-c", "import highsbox; print(highsbox.highs_bin_path()); print(highsbox.highs_lib_dir())"])
                .output()
                .map_err(|e| format!("the Controller baseline needs HiGHS, and python3 could not be run to find it: {e}"))?;
            if !out.status.success() {
                return Err("the Controller baseline needs HiGHS: `pip install highsbox` (scripts/setup.sh does), or set INNET_HIGHS to a `highs` binary".into());
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let mut lines = text.lines();
            let b = PathBuf::from(lines.next().unwrap_or_default().trim());
            let l = lines.next().map(|l| PathBuf::from(l.trim()));
            (b, l)
        };
        if !binary.is_file() {
            return Err(format!("HiGHS binary {} does not exist", binary.display()));
        }
        let scratch = std::env::temp_dir().join(format!("innet-ilp-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        Ok(HighsCli { binary, lib_dir, time_limit_s, stats: SolveStats::default(), scratch })
    }

    /// Solve; returns the chosen (switch, VIP) pairs.
    pub fn solve(&mut self, problem: &PlacementProblem) -> Result<Vec<(u32, u32)>, String> {
        if problem.groups.is_empty() || problem.capacity == 0 {
            return Ok(Vec::new());
        }
        let (lp, cols) = problem.to_lp();
        let model = self.scratch.join("placement.lp");
        let sol = self.scratch.join("placement.sol");
        std::fs::write(&model, lp).map_err(|e| format!("cannot write {}: {e}", model.display()))?;
        let _ = std::fs::remove_file(&sol);
        let mut cmd = Command::new(&self.binary);
        cmd.arg(&model).arg("--solution_file").arg(&sol).arg("--time_limit").arg(format!("{}", self.time_limit_s));
        cmd.args(["--threads", "1", "--random_seed", "1"]);
        // HiGHS writes Highs.log into its working directory: keep it in the scratch folder.
        cmd.current_dir(&self.scratch);
        if let Some(l) = &self.lib_dir {
            cmd.env("LD_LIBRARY_PATH", l);
        }
        let t = std::time::Instant::now();
        let out = cmd.output().map_err(|e| format!("cannot run HiGHS ({}): {e}", self.binary.display()))?;
        self.stats.wall_seconds += t.elapsed().as_secs_f64();
        self.stats.solves += 1;
        self.stats.largest_columns = self.stats.largest_columns.max(cols.len() as u64);
        let text = std::fs::read_to_string(&sol).map_err(|_| {
            format!("HiGHS wrote no solution (exit {}): {}", out.status, String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or(""))
        })?;
        let status = text.lines().skip_while(|l| l.trim() != "Model status").nth(1).unwrap_or("").trim().to_string();
        match status.as_str() {
            "Optimal" => self.stats.optimal += 1,
            s if s.contains("limit") => self.stats.time_limited += 1,
            other => return Err(format!("HiGHS ended with model status '{other}'")),
        }
        let mut chosen = Vec::new();
        let mut in_cols = false;
        for line in text.lines() {
            if line.starts_with("# Columns") {
                in_cols = true;
                continue;
            }
            if line.starts_with('#') {
                if in_cols {
                    break;
                }
                continue;
            }
            if !in_cols {
                continue;
            }
            let mut it = line.split_whitespace();
            let (Some(name), Some(v)) = (it.next(), it.next()) else { continue };
            if let Some(i) = name.strip_prefix('x') {
                let i: usize = i.parse().map_err(|_| format!("HiGHS solution names an unknown column '{name}'"))?;
                let v: f64 = v.parse().map_err(|_| format!("HiGHS solution value '{v}' for {name} is not a number"))?;
                if v > 0.5 {
                    chosen.push(*cols.get(i).ok_or_else(|| format!("HiGHS solution column {name} out of range"))?);
                }
            }
        }
        Ok(chosen)
    }
}

impl Drop for HighsCli {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use proptest::prelude::*;

    /// Exhaustive optimum for tiny problems.
    fn brute_force(p: &PlacementProblem) -> u64 {
        let (_, cols) = p.to_lp();
        let n = cols.len();
        assert!(n <= 16);
        let mut best = 0;
        for mask in 0u32..(1 << n) {
            let chosen: Vec<(u32, u32)> = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| cols[i]).collect();
            let mut per: HashMap<u32, u32> = HashMap::new();
            if chosen.iter().any(|(s, _)| {
                let c = per.entry(*s).or_insert(0);
                *c += 1;
                *c > p.capacity
            }) {
                continue;
            }
            best = best.max(p.covered(&chosen));
        }
        best
    }

    fn problem() -> impl Strategy<Value = PlacementProblem> {
        let group = (proptest::collection::btree_set(0u32..4, 1..3), 0u32..4, 1u64..50)
            .prop_map(|(path, d, c)| (path.into_iter().collect::<Vec<_>>(), d, c));
        (proptest::collection::vec(group, 1..6), 1u32..3).prop_map(|(groups, capacity)| PlacementProblem { groups, capacity })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// HiGHS finds the exhaustive optimum and never breaks a switch's capacity.
        #[test]
        fn highs_is_optimal_on_small_problems(p in problem()) {
            let mut h = HighsCli::locate(10.0).expect("HiGHS (pip install highsbox; scripts/setup.sh installs it)");
            let chosen = h.solve(&p).unwrap();
            let mut per: HashMap<u32, u32> = HashMap::new();
            for (s, _) in &chosen {
                *per.entry(*s).or_insert(0) += 1;
            }
            prop_assert!(per.values().all(|&c| c <= p.capacity));
            prop_assert_eq!(p.covered(&chosen), brute_force(&p));
        }
    }
}
