//! nandlab-core: trace-driven, reliability-aware NAND-flash SSD simulator.
pub mod api;
pub mod config;
pub mod ecc;
pub mod engine;
pub mod flash;
pub mod ftl;
pub mod hil;
pub mod host;
pub mod reliability;
pub mod sched;
pub mod scheme;
pub mod stats;
pub mod trace;
