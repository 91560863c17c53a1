//! Trace readers: a stream of [`HostRequest`]s from a block-trace file.
//!
//! (module doc to be completed by the trace reader implementation)

use std::path::PathBuf;

/// Direction of a host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Host read.
    Read,
    /// Host write.
    Write,
}

/// One host I/O request, as replayed by the simulator.
///
/// Units: `arrival_ns` in nanoseconds since the first request of the trace (rebased to 0),
/// `offset_bytes` and `len_bytes` in bytes. `len_bytes` is never 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostRequest {
    /// Arrival time, ns since the trace's first request.
    pub arrival_ns: u64,
    /// Read or write.
    pub op: Op,
    /// Byte offset on the logical device.
    pub offset_bytes: u64,
    /// Request length in bytes (> 0).
    pub len_bytes: u64,
}

/// Errors raised while reading a trace. Every variant names the file and, where there is one,
/// the 1-based line number and the field.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Placeholder; the trace implementation defines the full set.
    #[error("{file}: line {line}: field `{field}`: {msg}")]
    Parse {
        file: PathBuf,
        line: u64,
        field: &'static str,
        msg: String,
    },
    /// I/O failure (including a truncated compressed stream).
    #[error("{file}: {msg}")]
    Io { file: PathBuf, msg: String },
}

/// Trace file formats nandlab reads. Chosen explicitly or sniffed from the first lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`
    /// (Windows FILETIME 100 ns ticks; bytes).
    Msr,
    /// UMass SPC: `ASU,LBA,Size,Opcode,Timestamp` (512 B sectors; bytes; R/W; seconds).
    Spc,
    /// DiskSim ASCII: `time_ms device lba_sectors size_sectors flags` (flags bit 0 = read).
    Disksim,
    /// MQSim / SSDsim ASCII: `time_ns device lba_sectors size_sectors op` (op 1 = read, 0 = write).
    Mqsim,
    /// blkparse text output (blktrace); D (issue) or Q (queue) events.
    Blkparse,
    /// Canonical CSV `time_ns,op,offset_bytes,size_bytes` (op R/W), nandlab's own.
    Canonical,
}

/// Which blkparse event stands for a request's arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlkparseEvent {
    /// `D`: issued to the driver (default).
    #[default]
    Issue,
    /// `Q`: queued at the block layer.
    Queue,
}

/// How to read a trace file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceOptions {
    /// Format; `None` sniffs it from content.
    pub format: Option<TraceFormat>,
    /// For multi-device formats (SPC ASU, DiskSim/MQSim device): keep only this device.
    /// `None` merges all devices into disjoint, consecutive address ranges.
    pub device: Option<u32>,
    /// Out-of-order timestamps are re-sorted within a window of this many requests.
    pub reorder_window: usize,
    /// blkparse arrival event.
    pub blkparse_event: BlkparseEvent,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            format: None,
            device: None,
            reorder_window: 1024,
            blkparse_event: BlkparseEvent::Issue,
        }
    }
}
