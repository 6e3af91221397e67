//! The application switch of Ito et al. (IEICE Trans. 2024): a transparent caching switch for a
//! key-value store (Cassandra over CQL v4/v5, and Redis over RESP) that answers cache hits
//! itself and migrates the TCP connection back and forth with α/β sequence-number offsets.
//! Protocol parsers, the cache, the per-connection TCP migration state and the data-plane
//! program are separate modules; docs/appswitch.md records every choice.

pub mod cql;
pub mod cql_statement;
pub mod resp;
pub mod cache;
pub mod migration;
