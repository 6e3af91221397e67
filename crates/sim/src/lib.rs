//! innet's packet-level discrete-event simulator.
//!
//! Time is integer picoseconds, events are ordered by (time, sequence), and every source of
//! randomness is a seeded RNG, so a run is a pure function of its inputs.

pub mod experiment;
