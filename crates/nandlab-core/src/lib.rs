//! nandlab-core: a trace-driven, reliability-aware NAND-flash SSD simulator.
//!
//! A host request read from a real block trace travels through one module per stage. Reading
//! the folders in this order follows one write from the trace to the flash array:
//!
//! ```text
//!  trace file ──► trace::   reader (MSR, SPC, DiskSim, MQSim, blkparse, ...) ─► HostRequest
//!                 host::    open loop at trace time (× time_scale) or closed loop at depth N
//!                 hil::     request → logical pages (LPNs)
//!                 scheme::  where and how each page goes: stream, region, program mode, ECC;
//!                           reactions to reads, ticks, refresh (baseline, diffecc_wa, agcr,
//!                           ida, efm, warm, hotis ...)
//!                 ftl::     page-level L2P, allocation (CWDP / dynamic), GC, wear, refresh
//!                           clocks, region pools
//!                 sched::   per-die queues: host reads first, then writes, then GC/refresh
//!                 exec::    the die/channel executor: phase runs, channel timeline, event queue
//!                           (knows no FTL: the object device runs on it too)
//!                 flash::   geometry, page types (LSB/CSB/MSB), sense/program/erase, channels
//!  reliability:: / ecc::    per-read RBER (Vth model tables) → soft levels, retries, decode
//!                 engine::  the discrete-event loop that owns time  ──► stats:: ─► JSON report
//! ```
//!
//! `docs/architecture.md` in the repository extends this picture with the object device
//! ([`osd`]), the cache layer ([`host::cache`]), DPA ([`dpa`]) and the Python front, names the
//! file where each concept lives, and shows how to add a scheme, a trace format or a
//! reproduction.
//!
//! One [`config::Config`] (TOML, units in key names) describes a run; one seed makes it
//! deterministic. [`api::simulate_source`] replays any [`host::RequestSource`]; [`api::run`]
//! does the same from a trace file. A minimal replay of three requests on a one-plane MLC
//! device with fixed latencies:
//!
//! ```
//! use nandlab_core::api::simulate_source;
//! use nandlab_core::config::load;
//! use nandlab_core::host::VecSource;
//! use nandlab_core::trace::{HostRequest, Op};
//!
//! let cfg = load(
//!     r#"
//! [device]
//! channels = 1
//! pages_per_block = 64
//! page_size_bytes = 8192
//! logical_capacity_bytes = 16777216
//! [timing]
//! read_us = [50.0, 90.0]
//! program_us = [1300.0]
//! ecc_decode_us = 0.0
//! "#,
//!     "<doc>",
//!     &[],
//! )
//! .unwrap();
//! let req = |t_ms: u64, op, lpn: u64| HostRequest {
//!     arrival_ns: t_ms * 1_000_000,
//!     op,
//!     offset_bytes: lpn * 8192,
//!     len_bytes: 8192,
//! };
//! let reqs = vec![req(0, Op::Write, 0), req(10, Op::Read, 0), req(20, Op::Read, 1)];
//! let mut open = || Ok(VecSource::new(reqs.clone()));
//! let report = simulate_source(cfg, &mut open, serde_json::Value::Null, &mut |_, _, _| {}).unwrap();
//! assert_eq!(report["host"]["requests"], 3);
//! // Requests 10 ms apart never queue: a read costs its page type's sense time plus the
//! // channel transfer, and the write one program plus its transfer.
//! let write_us = report["host"]["write_mean_us"].as_f64().unwrap();
//! let xfer_us = report["device"]["transfer_us"].as_f64().unwrap();
//! assert!((write_us - (1300.0 + xfer_us)).abs() < 1e-6);
//! ```
//!
//! What the model leaves out (cache-register pipelining, multi-plane operations, suspend,
//! DRAM write buffering, TRIM) is listed in the README; each model's module documentation
//! cites the paper section, table or equation its constants come from.
pub mod api;
pub mod config;
pub mod dpa;
pub mod ecc;
pub mod engine;
pub mod error;
pub mod exec;
pub mod flash;
pub mod ftl;
pub mod hil;
pub mod host;
pub mod mem;
pub mod osd;
mod prefetch;
pub mod reliability;
pub mod rng;
pub mod sched;
pub mod scheme;
pub mod stats;
pub mod trace;
