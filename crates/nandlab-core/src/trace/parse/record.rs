//! What the line parsers produce and name: the parsed record ([`Raw`], [`Rec`]), the field
//! error, blkparse's actions (`blkparse.c` of blktrace 1.3) and the columns of each format as
//! its errors name them (the formats' table is in the [`crate::trace`] module documentation).
//! Kept apart from the parsers so that each of them imports it without importing the dispatch
//! in `mod.rs` back.

use crate::trace::Op;

/// A sector, bytes (the unit of the sector-addressed formats).
pub(crate) const SECTOR: u64 = 512;

/// A parsed request before device mapping, reordering and rebasing. `time_ns` is absolute
/// (as in the file, converted to ns).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Raw {
    pub time_ns: u64,
    pub op: Op,
    pub offset: u64,
    pub len: u64,
    pub device: u32,
}

/// What a data line turned out to be.
pub(crate) enum Rec {
    Req(Raw),
    /// A documented zero-length command (blkparse flush, vSCSI with transfer length 0).
    ZeroSize,
    /// Not a request: a vSCSI command other than READ/WRITE, or a blkparse event that is not a
    /// request (`Some(i)`: its action is [`BLK_ACTIONS`]`[i]`; a discard or a `D` event
    /// without data direction counts under its own action).
    NonRequest(Option<u8>),
    /// blkparse: a line that is not an event (its first token is not `maj,min`); the reader
    /// decides whether it is blkparse's own text
    /// ([`super::blkparse::blk_text_starts_summary`]) or an error.
    Text,
}

/// blkparse's actions (`blkparse.c`, `dump_trace_fs` / `handle_notify`, blktrace 1.3): `A`
/// remap, `B` bounce, `C` complete, `D` issue, `F` front merge, `G` get request, `I` insert,
/// `M` back merge, `P` plug, `Q` queue, `R` requeue, `S` sleep, `U` unplug, `UT` unplug on
/// timer, `X` split, `m` message, `ZP` / `ZU` zone plug / unplug. Index
/// [`BLK_TEXT`] counts blkparse's own text lines (`Input file … added`, the summary).
pub const BLK_ACTIONS: [&str; 19] = [
    "A", "B", "C", "D", "F", "G", "I", "M", "P", "Q", "R", "S", "U", "UT", "X", "m", "ZP", "ZU",
    "text",
];
/// Index of blkparse's own text lines in [`BLK_ACTIONS`].
pub(crate) const BLK_TEXT: u8 = 18;

/// A field-level error; the reader adds file and line.
#[derive(Debug)]
pub(crate) struct FieldError {
    pub field: &'static str,
    pub msg: String,
}

/// The columns of each format, as its errors name them.
pub(super) const MSR_COLS: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";
pub(super) const SPC_COLS: &str = "ASU,LBA,Size,Opcode,Timestamp";
pub(super) const DISKSIM_COLS: &str = "time_ms device lba_sectors size_sectors flags";
pub(super) const MQSIM_COLS: &str = "time_ns device lba_sectors size_sectors op";
pub(super) const BLK_COLS: &str =
    "maj,min cpu seq time pid action RWBS sector + nsectors [process]";
pub(super) const CANON_COLS: &str = "time_ns,op,offset_bytes,size_bytes";
pub(super) const SYSTOR_COLS: &str = "Timestamp,Response,IOType,LUN,Offset,Size";
pub(super) const TENCENT_COLS: &str = "Timestamp,Offset,Size,IOType,VolumeID";
pub(super) const VSCSI_COLS: &str = "version,time_us,op_hex,size_bytes,lbn";
