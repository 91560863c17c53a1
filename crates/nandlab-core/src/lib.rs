//! nandlab-core: trace-driven, reliability-aware NAND-flash SSD simulator.
pub mod api;
pub mod config;
pub mod trace;
