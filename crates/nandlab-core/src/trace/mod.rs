//! Trace readers: a stream of [`HostRequest`]s from a block-trace file.
//!
//! Open a file with [`TraceReader::open`] and pull requests with
//! [`TraceReader::next_request`] (or iterate the reader). Reading is streaming: memory does
//! not grow with the trace length (one line buffer, a reorder window of
//! [`TraceOptions::reorder_window`] requests, and for merged multi-device traces one entry per
//! device). [`scan`] and [`stats`] summarise a trace, [`convert`] rewrites it as canonical CSV
//! and [`generate`] writes a synthetic one.
//!
//! # Formats
//!
//! Every request becomes `arrival_ns` (rebased so the first request is at 0), `op`,
//! `offset_bytes`, `len_bytes`. A sector is 512 bytes everywhere.
//!
//! | [`TraceFormat`] | columns (in order) | time unit | address / size units | op encoding |
//! |---|---|---|---|---|
//! | `Msr` (MSR Cambridge CSV) | `Timestamp,Hostname,DiskNumber,Type,Offset,Size[,ResponseTime]` | Windows FILETIME, 100 ns ticks | bytes / bytes | `Read` / `Write` (any case) |
//! | `Spc` (UMass SPC CSV) | `ASU,LBA,Size,Opcode,Timestamp` | seconds (fractional) | sectors / bytes | `r` `w` `R` `W` |
//! | `Disksim` (whitespace) | `time device lba size flags` | milliseconds (fractional) | sectors / sectors | `flags & 1 == 1` → read, else write |
//! | `Mqsim` (also SSDsim `.ascii`, whitespace) | `time device lba size op` | integer ns | sectors / sectors | `1` read, `0` write |
//! | `Blkparse` (blkparse default text) | `maj,min cpu seq time pid action RWBS sector + nsect [proc]` | seconds (fractional) | sectors / sectors | RWBS contains `R` → read, `W` → write |
//! | `Canonical` (nandlab) | `time_ns,op,offset_bytes,size_bytes` | integer ns | bytes / bytes | `R` / `W` (also `Read`/`Write`, any case) |
//! | `Systor` (SNIA SYSTOR'17) | `Timestamp,Response,IOType,LUN,Offset,Size` | epoch seconds (fractional) | bytes / bytes | `R` / `W` |
//! | `Tencent` (SNIA Tencent CBS) | `Timestamp,Offset,Size,IOType,VolumeID` | integer seconds | sectors / sectors | `0` read, `1` write |
//! | `Vscsi` (CloudPhysics CSV) | `version,time_us,op_hex,size_bytes,lbn` | microseconds | sectors / bytes | SCSI opcode: `28` `08` `88` read, `2a` `0a` `8a` write |
//!
//! The sample files these readers were written against, and where they come from, are listed
//! in `shared/traces/SOURCES.md` (MSR hm_0 sample; UMass Financial1 in SSDsim ascii and
//! WebSearch1 in MQSim ascii; MQSim's tpcc trace; SYSTOR'17, Tencent CBS and CloudPhysics
//! samples from caffeine / PyMimircache; DiskSim SSD-extension PostMark and IOzone traces).
//!
//! # Input policy: strict by default
//!
//! A trace is read exactly as written or refused with a one-line [`TraceError::Parse`] naming
//! the file, the 1-based line, the field, the value and what was expected. Nothing is dropped
//! or changed silently (issue 28). What is skipped is counted in [`ReaderCounters`] (and the
//! run report's `trace.counters`); everything else is an error.
//!
//! Skipped and counted:
//! * blank lines (`blank_lines_skipped`) and lines starting with `#` (`comment_lines_skipped`)
//!   — unless a request of the format is glued onto the end of the comment (a lost line
//!   break after it): that is an error;
//! * a header: the first non-blank, non-comment line, only when it names the format's columns
//!   (`header_lines_skipped`): the names of the table above, case-insensitive, with or without
//!   `_`, `-`, spaces, quotes and a unit in parentheses, and known variants (`time` for
//!   `Timestamp`, `disk` for `DiskNumber`, `type` / `iotype` / `op` / `opcode` for the op
//!   column…; `version,time,op,size,lbn` as CloudPhysics writes it). A first line that is not
//!   a header is data — a damaged first record is an error, never skipped as a header.
//!   `Blkparse` has no header;
//! * zero-length commands where the format defines them: blkparse flushes (`0` or no
//!   sectors) and vSCSI READ/WRITE with transfer length 0 (`zero_size_skipped`); in every other
//!   format a size of 0 is an error;
//! * known non-requests (`non_request_skipped`): the blkparse actions that are not the arrival
//!   event, discards (unless [`TraceOptions::discards`]), `D` events without data direction
//!   (RWBS `N`), and blkparse's own text, counted per action in
//!   [`ReaderCounters::non_request_by_action`] (see `Blkparse` below); vSCSI SCSI commands
//!   other than READ/WRITE.
//!
//! Errors:
//! * a missing, empty, non-numeric, negative or too large number, an unknown op, a zero size;
//! * **a line with more fields than the format has** (an error quoting the extra text: two
//!   records on one line, a record glued to the previous one by a lost line break). Every
//!   column is checked, also those nandlab does not use (MSR `ResponseTime`, SYSTOR
//!   `Response`, vSCSI `version`, blkparse `cpu`, `seq`, `pid`); MSR's `ResponseTime` is
//!   optional (6 or 7 columns); every other format has exactly the columns of the table;
//! * **a last line without a line ending whose last field may be a cut number** (the line
//!   ends in a digit or `.`: `1000,W,8192,16` may have been `…,16384`), or that holds only
//!   blanks (cut after the indentation of a record), unless
//!   [`TraceOptions::allow_unterminated`] (`--allow-unterminated`). A last line without a line
//!   ending is always counted in [`ReaderCounters::unterminated_last_line`] (and `nandlab run`
//!   / `trace stats` print a one-line warning); it is read when it cannot be a cut number:
//!   MQSim's last field is the one-digit op (a cut leaves it empty: an error), a blkparse
//!   event ends in its process name (cut there, the request is whole), a comment.
//!
//! **Line endings** are decided per line, as Python's universal newlines do: `\n`, `\r\n`
//! and a lone `\r` each end a line, in any mix within one file (a file that is LF at the
//! start and CR-only further on is read line by line, and line numbers in errors count every
//! ending). A UTF-8 byte-order mark at the start is skipped.
//!
//! `Blkparse`: only `D` (issue) events are used, or `Q` (queue) events with
//! [`BlkparseEvent::Queue`]. An event line is `maj,min cpu seq time pid action RWBS …` with
//! every header field checked: the action must be one blkparse writes ([`BLK_ACTIONS`]: `A B
//! C D F G I M P Q R S U UT X m ZP ZU`), the RWBS letters of `F D E W R N A S M`. Events of the
//! other actions are skipped and counted per action. An arrival event must read `sector +
//! nsectors`, then optionally `(elapsed)` and `[process]` (at most 16 characters) and
//! nothing else; no sector (a flush) or 0 sectors is a zero-length command. A line holding a
//! second event (`maj,min` followed by numbers) is an error, whatever its action. Lines that
//! are not events are blkparse's own text only if they are `Input file … added` or belong to
//! its summary (from a line `CPU<n> (maj,min):`, `Total (maj,min):` or `name (pid)` up to the
//! next event), counted under `text`; any other line is an error. Devices are merged as they
//! are (blkparse sectors are already per-device; traces are normally of one device).
//!
//! //! # Sniffing
//!
//! With [`TraceOptions::format`] `None` the format is guessed from the first (up to 32)
//! non-blank, non-comment lines; set the format explicitly to override. Rules, in order:
//! 1. a header line picks the format: a header of a format (as the reader accepts it, see
//!    above), or a line starting `Timestamp,Hostname…` → Msr, `Timestamp,Response,IOType…` →
//!    Systor, `version,time…` → Vscsi, `time_ns,op…` → Canonical, `ASU,…` → Spc
//!    (case-insensitive);
//! 2. otherwise (an unknown header, i.e. a first line not starting with a digit, is passed
//!    over for the guess; the reader then refuses it as a bad first line) the first data
//!    line: comma-separated with ≥ 7 fields and field 4 `Read`/`Write`
//!    → Msr; 6 fields with field 3 `R`/`W` → Systor; 5 fields with field 4 `r`/`w` → Spc;
//!    5 integer fields with field 4 ∈ {0,1} → Tencent; 5 fields with a 1–2 digit hex
//!    field 3 → Vscsi; 4 fields with field 2 `R`/`W` → Canonical;
//! 3. whitespace-separated with first token `maj,min` → Blkparse; 5 numeric tokens →
//!    Disksim if any sniffed line has a `.` in its first column (fractional ms), Mqsim if all
//!    first columns are integers and all ops are 0 or 1, else Disksim.
//!
//! A file that matches none is an error quoting its first line and listing the known formats.
//!
//! # Out-of-order timestamps
//!
//! Requests are re-sorted within a window of [`TraceOptions::reorder_window`] (*w*) requests:
//! the reader keeps up to *w* parsed requests pending and emits the earliest (ties in file
//! order) when one more arrives, so output `arrival_ns` never decreases.
//! * A request emitted after a request that follows it in the file is counted in
//!   [`ReaderCounters::requests_reordered`].
//! * A request whose time is earlier than the last emitted time (it is more than *w*
//!   requests late) gets the last emitted time and is counted in
//!   [`ReaderCounters::requests_clamped`]; requests it overtakes count as reordered.
//! * `w = 0` turns any out-of-order timestamp into [`TraceError::OutOfOrder`], naming the line
//!   and both timestamps.
//!
//! Times are rebased to the first emitted request, i.e. the smallest time within the first
//! window.
//!
//! # Multi-device traces
//!
//! `Spc` (ASU), `Disksim` and `Mqsim` (device) and `Tencent` (VolumeID) carry a device number.
//! * [`TraceOptions::device`] `Some(n)` keeps only device `n` at its own offsets; the other
//!   requests are counted in [`ReaderCounters::dropped_device_filter`].
//! * `None` (the default) **merges** all devices onto one address space: device *d* is moved to
//!   `base(d)` = the sum, over devices *e* < *d* seen in the file (ascending id), of *e*'s
//!   largest end offset rounded up to 1 MiB. This needs one extra pass over the file inside
//!   [`TraceReader::open`] (only for these formats). Merging is the default because e.g.
//!   Financial1's 22 ASUs are one application's volumes, and the papers replay them onto one
//!   SSD. [`TraceReader::device_bases`] reports the bases used.
//!
//! `Msr` (DiskNumber) and `Systor` (LUN) honour `device = Some(n)` as a filter but are not
//! merged (published files hold one disk each); the other formats have no device column and
//! reject `device = Some(_)`.
//!
//! # Compression
//!
//! gzip (magic `1f 8b`, also concatenated members) and zstd (magic `28 b5 2f fd`) are
//! decompressed transparently, detected by content, not by extension. A truncated or corrupt
//! stream is a [`TraceError::Io`] naming the file and the line reached.

use std::path::PathBuf;

mod convert;
pub mod fsjsonl;
mod gen;
mod input;
mod parse;
mod reader;
mod sniff;
mod summary;

pub use convert::{convert, write_canonical};
pub use fsjsonl::{fs_stats, FsJsonlReader, FsOp, FsReaderCounters, FsRecord, FsTraceStats};
pub use gen::{generate, GenParams};
pub use parse::BLK_ACTIONS;
pub use reader::{ReaderCounters, TraceReader};
pub use sniff::sniff_format;
pub use summary::{scan, stats, TraceStats, TraceSummary, DENSE_MAX_PAGES};

/// Direction of a host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Host read.
    Read,
    /// Host write.
    Write,
    /// Discard / TRIM of the range (blkparse `D` in RWBS, op `D`/`T`/`trim`/`discard` in the
    /// canonical CSV and SYSTOR's IOType). Readers yield it only with
    /// [`TraceOptions::discards`]; otherwise such lines are skipped and counted as before.
    Trim,
}

impl Op {
    /// Count one request of this op moving `len` bytes: into `reads` (requests, bytes) for a
    /// read, `writes` for a write (bytes saturating); a discard moves no data and counts in
    /// neither.
    #[inline]
    pub(crate) fn tally(self, len: u64, reads: (&mut u64, &mut u64), writes: (&mut u64, &mut u64)) {
        let (n, bytes) = match self {
            Op::Read => reads,
            Op::Write => writes,
            Op::Trim => return,
        };
        *n += 1;
        *bytes = bytes.saturating_add(len);
    }
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
    /// A field of a line is missing or invalid. `msg` quotes the value and says what was
    /// expected.
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
    /// A timestamp earlier than the previous request's with `reorder_window = 0`.
    /// Times are in ns as read from the file (not rebased).
    #[error(
        "{file}: line {line}: field `{field}`: time {time_ns} ns is earlier than {prev_ns} ns of \
         the previous request (line {prev_line}); reorder_window = 0 forbids out-of-order \
         requests (use a reorder window > 0 to re-sort them)"
    )]
    OutOfOrder {
        file: PathBuf,
        line: u64,
        field: &'static str,
        time_ns: u64,
        prev_ns: u64,
        prev_line: u64,
    },
    /// The file holds no requests (empty, only header/comments, or all filtered out).
    #[error("{file}: no requests: {detail}")]
    NoRequests { file: PathBuf, detail: String },
    /// The format could not be sniffed from the file's first lines. `first_line` is quoted,
    /// escaped and cut to 40 characters.
    #[error(
        "{file}: unrecognised trace format; first line: {first_line}; known formats: \
         {known} (set the format explicitly to override sniffing)"
    )]
    UnknownFormat {
        file: PathBuf,
        first_line: String,
        known: String,
    },
    /// A request addresses more than the device model can (`request`: its 1-based number in
    /// the trace, after filtering).
    #[error("{file}: request {request}: {msg}")]
    Address {
        file: PathBuf,
        request: u64,
        msg: String,
    },
    /// An option or parameter is invalid (`option` names it).
    #[error("{file}: option `{option}`: {msg}")]
    InvalidOption {
        file: PathBuf,
        option: &'static str,
        msg: String,
    },
}

/// Trace file formats nandlab reads. Chosen explicitly or sniffed from the first lines.
/// See the [module documentation](self) for columns and units.
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
    /// SNIA SYSTOR'17 CSV: `Timestamp,Response,IOType,LUN,Offset,Size`
    /// (epoch seconds with fraction; R/W; bytes).
    Systor,
    /// SNIA Tencent CBS CSV: `Timestamp,Offset,Size,IOType,VolumeID`
    /// (seconds; 512 B sectors; 0 = read, 1 = write).
    Tencent,
    /// CloudPhysics vSCSI CSV: `version,time_us,op_hex,size_bytes,lbn` (µs; SCSI opcode in hex;
    /// bytes; 512 B sectors).
    Vscsi,
}

impl TraceFormat {
    /// All formats, in documentation order.
    pub const ALL: [TraceFormat; 9] = [
        TraceFormat::Msr,
        TraceFormat::Spc,
        TraceFormat::Disksim,
        TraceFormat::Mqsim,
        TraceFormat::Blkparse,
        TraceFormat::Canonical,
        TraceFormat::Systor,
        TraceFormat::Tencent,
        TraceFormat::Vscsi,
    ];

    /// Lower-case name, as accepted by `--format` and serde.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Msr => "msr",
            TraceFormat::Spc => "spc",
            TraceFormat::Disksim => "disksim",
            TraceFormat::Mqsim => "mqsim",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Canonical => "canonical",
            TraceFormat::Systor => "systor",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Vscsi => "vscsi",
        }
    }

    /// Parse a lower-case name (case-insensitive); `None` if unknown.
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Formats whose devices are merged (or filtered) by [`TraceOptions::device`].
    pub fn is_multi_device(self) -> bool {
        matches!(
            self,
            TraceFormat::Spc | TraceFormat::Disksim | TraceFormat::Mqsim | TraceFormat::Tencent
        )
    }

    /// Formats with a device column (multi-device ones plus `Msr` and `Systor`).
    pub fn has_device_column(self) -> bool {
        self.is_multi_device() || matches!(self, TraceFormat::Msr | TraceFormat::Systor)
    }

    /// Comma-separated list of all names, for messages.
    pub fn known_list() -> String {
        TraceFormat::ALL
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
    /// For multi-device formats (SPC ASU, DiskSim/MQSim device, Tencent volume): keep only this
    /// device. `None` merges all devices into disjoint, consecutive address ranges.
    pub device: Option<u32>,
    /// Out-of-order timestamps are re-sorted within a window of this many requests
    /// (0: out-of-order timestamps are an error).
    pub reorder_window: usize,
    /// blkparse arrival event.
    pub blkparse_event: BlkparseEvent,
    /// Yield discards as [`Op::Trim`] requests (the simulator sets it from `ftl.trim`);
    /// `false`: skip them and count them in `non_request_skipped`.
    pub discards: bool,
    /// Read a last line without a line ending as written even when its last field is a
    /// number that may have been cut short with the file (`--allow-unterminated`); `false`
    /// (the default): such a line is an error. Either way the line is counted in
    /// [`ReaderCounters::unterminated_last_line`].
    pub allow_unterminated: bool,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            format: None,
            device: None,
            reorder_window: 1024,
            blkparse_event: BlkparseEvent::Issue,
            discards: false,
            allow_unterminated: false,
        }
    }
}
