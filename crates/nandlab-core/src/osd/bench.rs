//! DMMbench (§4.6.1): one large file (object) accessed directly through the OSD, no page
//! cache. Four access types — sequential write, sequential read, random write, random read —
//! each moving the same total amount of data; sequential requests of 4 KiB … 1 MiB, random
//! ones of 4 KiB. Like synchronous file I/O, every access is preceded by an inode read
//! (GET_ATTRIBUTE) and followed by an inode write (SET_ATTRIBUTE: mtime, or atime for reads).
//!
//! Readings the thesis leaves open (\[N\]): the total per type (not stated; a parameter), the
//! file size (= the total, so one sequential pass covers the file once: sequential writes
//! overwrite nothing and cause no GC, as F39(b) reports), and that reads and random writes run
//! on a file written beforehand in untimed preconditioning (1 MiB writes). Random offsets are
//! request-aligned, uniform over the file, from the config's seed.

use rand::Rng;

use super::command::{ObjectId, OsdCommand, OsdOp};
use crate::rng::rng_stream;

/// The access type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    SeqWrite,
    SeqRead,
    RandWrite,
    RandRead,
}

impl Pattern {
    /// Name (`seq_write`, `seq_read`, `rand_write`, `rand_read`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::SeqWrite => "seq_write",
            Pattern::SeqRead => "seq_read",
            Pattern::RandWrite => "rand_write",
            Pattern::RandRead => "rand_read",
        }
    }

    /// Parse a name.
    pub fn parse(s: &str) -> Option<Pattern> {
        [
            Pattern::SeqWrite,
            Pattern::SeqRead,
            Pattern::RandWrite,
            Pattern::RandRead,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }

    fn is_write(self) -> bool {
        matches!(self, Pattern::SeqWrite | Pattern::RandWrite)
    }

    fn is_random(self) -> bool {
        matches!(self, Pattern::RandWrite | Pattern::RandRead)
    }
}

/// One DMMbench run.
#[derive(Clone, Debug)]
pub struct DmmBench {
    pub pattern: Pattern,
    /// Bytes per access.
    pub request_bytes: u64,
    /// Bytes moved by the measured accesses (the same for every type).
    pub total_bytes: u64,
    /// File size; 0 = `total_bytes`.
    pub file_bytes: u64,
    /// Seed of the random offsets.
    pub seed: u64,
    /// The file's object id.
    pub oid: ObjectId,
}

impl DmmBench {
    /// A run of `pattern` with `request_bytes` accesses moving `total_bytes`.
    pub fn new(pattern: Pattern, request_bytes: u64, total_bytes: u64, seed: u64) -> DmmBench {
        DmmBench {
            pattern,
            request_bytes,
            total_bytes,
            file_bytes: 0,
            seed,
            oid: 1,
        }
    }

    /// The command stream: preconditioning (create, and for reads and random writes the
    /// whole file), then GET_ATTRIBUTE, the access, SET_ATTRIBUTE per access. Arrival times
    /// are 0: DMMbench is synchronous (replay it closed-loop at queue depth 1).
    pub fn commands(&self) -> impl Iterator<Item = OsdCommand> {
        let req = self.request_bytes.max(1);
        let file = if self.file_bytes > 0 {
            self.file_bytes
        } else {
            self.total_bytes
        }
        .max(req);
        let oid = self.oid;
        let pattern = self.pattern;
        let pre_fill = !(pattern == Pattern::SeqWrite);
        let fill_chunk = 1u64 << 20;
        let n_fill = if pre_fill {
            file.div_ceil(fill_chunk)
        } else {
            0
        };
        let accesses = self.total_bytes / req;
        let slots = (file / req).max(1);
        let mut rng = rng_stream(self.seed, 0x444d_4d62);
        let pre = std::iter::once(OsdOp::Create { oid }).chain((0..n_fill).map(move |k| {
            let off = k * fill_chunk;
            OsdOp::Write {
                oid,
                offset_bytes: off,
                len_bytes: fill_chunk.min(file - off),
            }
        }));
        let pre = pre.map(|op| OsdCommand {
            arrival_ns: 0,
            op,
            precondition: true,
        });
        let measured = (0..accesses).flat_map(move |i| {
            let off = if pattern.is_random() {
                rng.gen_range(0..slots) * req
            } else {
                (i % slots) * req
            };
            let access = if pattern.is_write() {
                OsdOp::Write {
                    oid,
                    offset_bytes: off,
                    len_bytes: req,
                }
            } else {
                OsdOp::Read {
                    oid,
                    offset_bytes: off,
                    len_bytes: req,
                }
            };
            [OsdOp::GetAttr { oid }, access, OsdOp::SetAttr { oid }]
                .into_iter()
                .map(|op| OsdCommand {
                    arrival_ns: 0,
                    op,
                    precondition: false,
                })
        });
        pre.chain(measured)
    }
}
