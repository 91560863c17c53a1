//! Object commands: what a host (the `objfs` translator of a file-level trace, or the DMMbench
//! generator) sends to the object device. Table 15 of the thesis (§4.5.1) plus FLUSH (spec
//! `dmm.md` §5: an fsync drains the object's tail buffer at the device).

/// Object identifier (the OSD's user-object id). Assigned by the host; never reused within one
/// run (a removed object's id is not handed out again).
pub type ObjectId = u64;

/// One object command. Offsets and lengths are in bytes; `len_bytes` may be any size (not
/// page-aligned: partial-page writes are part of the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsdOp {
    /// CREATE_OBJECT: a new, empty object (an onode write).
    Create { oid: ObjectId },
    /// REMOVE_OBJECT: the object and its data are invalidated.
    Remove { oid: ObjectId },
    /// READ: `len_bytes` from `offset_bytes`; the host clips it to the object size.
    Read {
        oid: ObjectId,
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// WRITE: `len_bytes` at `offset_bytes`; extends the object when it writes past its end.
    Write {
        oid: ObjectId,
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// GET_ATTRIBUTE: read the onode.
    GetAttr { oid: ObjectId },
    /// SET_ATTRIBUTE: update the onode (atime, mtime, ctime, size).
    SetAttr { oid: ObjectId },
    /// Truncate (`nand_truncate_obj`): the object's size becomes `size_bytes`; data past it is
    /// invalidated.
    Truncate { oid: ObjectId, size_bytes: u64 },
    /// FLUSH: make the object's buffered (tail) data durable (an fsync at the device).
    Flush { oid: ObjectId },
}

impl OsdOp {
    /// The object the command addresses.
    pub fn oid(&self) -> ObjectId {
        match *self {
            OsdOp::Create { oid }
            | OsdOp::Remove { oid }
            | OsdOp::Read { oid, .. }
            | OsdOp::Write { oid, .. }
            | OsdOp::GetAttr { oid }
            | OsdOp::SetAttr { oid }
            | OsdOp::Truncate { oid, .. }
            | OsdOp::Flush { oid } => oid,
        }
    }

    /// The command's name in reports (`create`, `remove`, `read`, `write`, `get_attr`,
    /// `set_attr`, `truncate`, `flush`).
    pub fn name(&self) -> &'static str {
        match self {
            OsdOp::Create { .. } => "create",
            OsdOp::Remove { .. } => "remove",
            OsdOp::Read { .. } => "read",
            OsdOp::Write { .. } => "write",
            OsdOp::GetAttr { .. } => "get_attr",
            OsdOp::SetAttr { .. } => "set_attr",
            OsdOp::Truncate { .. } => "truncate",
            OsdOp::Flush { .. } => "flush",
        }
    }
}

/// A command with its arrival time. `precondition` commands (files that exist before the trace,
/// spec §5 "Preconditioning") are executed untimed before the replay and are not counted in
/// the replay's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsdCommand {
    /// Arrival time in ns since the start of the trace (open-loop replay; ignored in closed loop).
    pub arrival_ns: u64,
    pub op: OsdOp,
    /// Part of the untimed preconditioning, not of the measured replay.
    pub precondition: bool,
}
