//! SwitchVM (NSDI'24): a multitenant virtual machine for data-plane filters (DPFs) on an RMT
//! switch. `isa` is the instruction set, `machine` the data plane (permissions, prolog, VLIW
//! execution units with per-lane virtualized memory, epilog, steering), `control` the control
//! plane (authorization, memory allocation, deployment with linking, steering rules, in-place
//! replacement). docs/switchvm.md records every choice the paper leaves open.

pub mod asm;
pub mod build;
pub mod control;
pub mod encoding;
pub mod experiments;
pub mod isa;
pub mod kvs;
pub mod lb;
pub mod machine;
pub mod memory;
pub mod program;
pub mod real;
pub mod resources;
pub mod sandbox;
pub mod tenants;
pub mod testbed;
pub mod traffic;
pub use experiments::experiments;
pub use real::switch_programs;
