//! The object-based flash device (OSD) front end: object commands in, flash transactions out,
//! on the shared flash executor ([`crate::exec`]) and per-die scheduler ([`crate::sched`]).
//!
//! Source: Guo's dissertation, chapter 4 (`papers/guo-dissertation-dpa-flexlevel-dmm.txt`), and
//! the implementation spec `specs/dmm.md`. The command set is the thesis's Table 15.
//!
//! ```text
//!  file-level trace (fsjsonl) ─► host objfs (namespace, page cache) ─┐
//!  DMMbench generator ───────────────────────────────────────────────┼─► OsdCommand stream
//!                                                                    ▼
//!                       osd device (onodes, extent / virtual B+ tree, chunks, GC, MLGC, diff cache)
//!                                                                    ▼
//!                                        exec::Executor + sched::Sched (dies, channels)
//! ```
//!
//! This module holds the seam every part shares: [`OsdCommand`]. [`objfs`] is the host layer
//! that turns a file-level trace into object commands (spec `dmm.md` §5).

pub mod command;
pub mod objfs;

pub use command::{ObjectId, OsdCommand, OsdOp};
