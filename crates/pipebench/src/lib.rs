//! Pipebench: the paper's benchmark inputs (§6.1). The five pipelines of Table 1 re-created as
//! table specs with rule slots (`pipelines`), ClassBench-style rules (`classbench`) mapped
//! along the pipelines' traversals into flow files (`ruleset`), and CAIDA-like traffic with high
//! or low locality (`traffic`). Everything is deterministic from a seed.

pub mod classbench;
pub mod commands;
pub mod model;
pub mod pipelines;
pub mod ruleset;
pub mod traffic;

pub use classbench::Profile;
pub use model::PipelineSpec;
pub use ruleset::{Chain, Ruleset};
pub use traffic::{Locality, Timing, Traffic, TrafficConfig};

/// The flow file for `(pipeline, profile, rules, seed)`; `rules` ClassBench rules are mapped.
pub fn render_pipeline(pipeline: &str, profile: Profile, n_rules: usize, seed: u64) -> Result<Ruleset, String> {
    ruleset::generate(&pipelines::pipeline(pipeline)?, profile, n_rules, seed)
}

/// Traffic for a generated pipeline.
pub fn generate_traffic(rs: &Ruleset, cfg: &TrafficConfig) -> Result<Traffic, String> {
    traffic::generate(rs, cfg)
}
