//! The application switch of Ito et al. (IEICE Trans. 2024): a transparent caching switch for a
//! key-value store (Cassandra over CQL v4/v5, and Redis over RESP) that answers cache hits
//! itself and migrates the TCP connection back and forth with α/β sequence-number offsets.
//! The cache, the schema knowledge, the per-connection TCP migration state and the data-plane
//! program (one submodule per protocol) are separate modules; the protocols' byte formats are
//! `innet_wire::{cql, resp, memcache}`. docs/appswitch.md records every choice.

pub mod bench_capture;
pub mod cache;
pub mod cql_schema;
pub mod experiments;
pub mod fixed_fields;
pub mod migration;
pub mod program;
pub mod state;
pub mod throughput;

pub use experiments::experiments;
pub use program::{AppSwitch, Config, Counters, Protocol};

use innet_switch::real::{FrameSwitch, ProgramSpec, RealConfig, RealSwitch, Settings};
use innet_switch::NoControl;

/// Build the application switch for the real runtime from `--set` knobs.
pub fn build_appswitch(s: &mut Settings, num_ports: u16) -> Result<Box<dyn FrameSwitch>, String> {
    let protocol = match s.str("protocol", "cql").as_str() {
        "cql" => Protocol::Cql,
        "redis" => Protocol::Redis,
        "memcached" => Protocol::Memcached,
        other => {
            return Err(format!(
                "--set protocol={other}: expected cql, redis or memcached"
            ))
        }
    };
    let default_port = match protocol {
        Protocol::Cql => 9042,
        Protocol::Redis => 6379,
        Protocol::Memcached => 11211,
    };
    let port = s.u64("server_port", default_port)?;
    let server_port =
        u16::try_from(port).map_err(|_| format!("--set server_port={port}: expected 1..=65535"))?;
    let cache_entries = s.u64("cache_entries", 64)? as usize;
    let mut program = AppSwitch::new(Config {
        protocol,
        server_port,
        cache_entries,
    });
    // 0 (the default): no bound on how old a served answer may be.
    let max_age_ms = s.u64("max_age_ms", 0)?;
    if max_age_ms > 0 {
        let ns = max_age_ms.checked_mul(1_000_000).ok_or_else(|| {
            format!(
                "--set max_age_ms={max_age_ms}: expected at most {}",
                u64::MAX / 1_000_000
            )
        })?;
        program.cache.set_max_age_ns(Some(ns));
    }
    // Volatile keys and tables (and CQL prepared ids) kept across restarts (issue 36).
    // Unset or `off`: none (embedders: tests, capture replays). `innet switch run` gives a
    // durable default path (python/innet/cli/switch.py, docs/appswitch.md).
    let state_file = s.str("state_file", "");
    if !state_file.is_empty() && state_file != "off" {
        program.use_state_file(std::path::Path::new(&state_file))?;
    }
    match s.str("parser", "lexical").as_str() {
        "lexical" => {}
        "fixed" => {
            let span = |s: &mut Settings, k: &str| match s.str(k, "").as_str() {
                "" => Err(format!("--set parser=fixed needs --set {k}=OFFSET:LENGTH")),
                v => fixed_fields::Span::parse(v, k),
            };
            program.fixed_layout = Some(fixed_fields::FixedLayout {
                table: span(s, "fixed_table")?,
                key: span(s, "fixed_key")?,
            });
        }
        other => return Err(format!("--set parser={other}: expected lexical or fixed")),
    }
    let sw = RealSwitch::new(program, NoControl, RealConfig::ports(num_ports))?.with_report(
        |p: &AppSwitch, _| {
            let c = &p.counters;
            vec![
                ("hits".into(), c.hits.to_string()),
                ("misses".into(), c.misses.to_string()),
                ("writes".into(), c.writes.to_string()),
                ("learned".into(), c.learned.to_string()),
                ("bypassed".into(), c.bypassed.to_string()),
                (
                    "migrated_request_bytes".into(),
                    c.migrated_request_bytes.to_string(),
                ),
                (
                    "migrated_reply_bytes".into(),
                    c.migrated_reply_bytes.to_string(),
                ),
                ("replays".into(), c.replays.to_string()),
                ("reply_retransmits".into(), c.reply_retransmits.to_string()),
                ("acks_suppressed".into(), c.acks_suppressed.to_string()),
                (
                    "out_of_order_dropped".into(),
                    c.out_of_order_dropped.to_string(),
                ),
                ("protocol_errors".into(), c.protocol_errors.to_string()),
                (
                    "unsupported_versions".into(),
                    c.unsupported_versions.to_string(),
                ),
                ("connections".into(), c.connections.to_string()),
                ("unseen_resets".into(), c.unseen_resets.to_string()),
                ("cache_entries".into(), p.cache.len().to_string()),
                ("expired".into(), p.cache.stats.expired.to_string()),
            ]
        },
    );
    Ok(Box::new(sw))
}

/// The programs this crate adds to the real switch's registry.
pub fn switch_programs() -> Vec<ProgramSpec> {
    vec![ProgramSpec {
        name: "appswitch",
        description: "The application switch (Ito et al.): a transparent cache for Cassandra (CQL v4/v5), Redis or memcached (text protocol) with TCP migration. \
                      Settings: protocol=cql|redis|memcached, server_port=N (9042 / 6379 / 11211), cache_entries=N (64), max_age_ms=N (0: no bound on a served answer's age), state_file=PATH|off (volatile keys/tables and prepared ids kept across restarts; `innet switch run` defaults to $INNET_STATE_DIR, $XDG_STATE_HOME/innet or ~/.local/state/innet/appswitch-PROTOCOL-PORT-IFACES.state; off: a restarted switch may serve a value the server has expired), parser=lexical|fixed (fixed: fixed_table=OFF:LEN fixed_key=OFF:LEN, Fig. 19's baseline).",
        build: build_appswitch,
    }]
}
