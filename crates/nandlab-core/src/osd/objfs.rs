//! `objfs`: the host side of the object device. It turns a file-level trace
//! ([`crate::trace::fsjsonl`]) into [`OsdCommand`]s the way EXOFS over an OSD initiator does
//! in the thesis's platform (Guo §4.5.1, F35), following spec `dmm.md` §5.
//!
//! # Mapping (spec §5 "Mapping")
//!
//! | trace op | object commands |
//! |---|---|
//! | `create` | a new oid (never reused), `CREATE` |
//! | `open` | `GET_ATTRIBUTE` per [`OpenPolicy`]: `first` = when the inode is not in the host inode cache (every inode stays cached once read or created; the cache starts cold, as the capture dropped caches), `always` (DMMbench), `never` |
//! | `read` | `READ` clipped to the object's size (a 0-byte result sends nothing), then an atime `SET_ATTRIBUTE` per [`AtimePolicy`] |
//! | `write` | `WRITE`, then a size/mtime `SET_ATTRIBUTE` |
//! | `truncate` | `TRUNCATE` (Table 15's `SET_ATTRIBUTE` + `nand_truncate_obj`; the device writes the onode) |
//! | `delete` | `REMOVE`; a path not in the namespace is counted and skipped, or (with [`ObjfsConfig::unknown_delete`] = `precondition`) preconditioned |
//! | `rename` | namespace only, plus a ctime `SET_ATTRIBUTE`; a rename over an existing target `REMOVE`s the target (also for `"via":"link"`) |
//! | `fsync` | write back the object's host-dirty data, then its inode, then `FLUSH` (drains the object's tail buffer at the device) |
//!
//! # Host page cache (spec §5 "Host page cache"; EXOFS ASYNC, Guo §4.5.1, §4.4.4)
//!
//! With [`HostCache::Writeback`] (the default) a `write` only dirties the host page cache and
//! every attribute change only dirties the inode. An object is written back — its dirty byte
//! ranges as `WRITE`s in offset order (at most [`MAX_COMMAND_BYTES`] each), then one
//! `SET_ATTRIBUTE` if its inode is dirty — when
//! * the trace fsyncs it (`fdatasync` writes the inode only when the size changed, as Linux
//!   does; `fsync` whenever it is dirty), then `FLUSH`;
//! * it has been dirty for `dirty_expire_s` (Linux `dirty_expire_centisecs` = 30 s), at exactly
//!   the expiry time (Linux checks every 5 s; the model writes back at the expiry instant);
//! * the host-dirty data of all objects exceeds `dirty_limit_bytes`: the objects dirtied
//!   longest ago are written back until the total is at or below the limit;
//! * the trace ends, with `sync_at_end` (an unmount's sync; otherwise the dirty data is
//!   counted in [`ObjfsCounters::host_dirty_at_end_bytes`] and never reaches the device).
//!
//! [`HostCache::Sync`] bypasses the cache: each `write` is sent at once as `WRITE` +
//! `SET_ATTRIBUTE`, each atime/ctime update as `SET_ATTRIBUTE` (DMMbench's "inode write after
//! every access", Guo §4.6.1).
//!
//! Data acknowledged to the application but still host-dirty is lost at a power cut; it is not
//! the device's loss. [`Objfs::host_dirty_bytes`] is that amount at any moment (the crash test
//! reports it at each cut) and [`ObjfsCounters::host_dirty_peak_bytes`] its maximum.
//!
//! # Preconditioning (spec §5 "Preconditioning")
//!
//! Every path whose first record is not `create` (and that is not first named as a rename
//! target) existed before the trace: it is created untimed (`precondition = true` commands,
//! before the replay), with size = its largest read or write end offset anywhere in the trace,
//! written in [`MAX_COMMAND_BYTES`] `WRITE`s. "Its" offsets are those of the records that
//! address that file: the first pass follows renames and deletes as the replay does (spec
//! §5 says "anywhere in the trace" per path; a pre-existing name that is later renamed over
//! or deleted and re-created would otherwise get the new file's offsets). Finding those paths needs one pass over the
//! file before the replay ([`ObjfsSource::open`]), which keeps one entry per path. A path
//! whose first record is `delete` is preconditioned only with `unknown_delete =
//! "precondition"` (then with size 0 unless the trace reads or writes it); with `"skip"` its
//! delete is counted and dropped. With `precondition = false` nothing is created before the
//! replay and the first record of an unknown path creates it (a timed `CREATE`, counted in
//! [`ObjfsCounters::implicit_creates`]).
//!
//! # Readings the spec leaves open (nandlab choices)
//!
//! * Reads are not served by a host read cache (the model keeps no clean pages), except a read
//!   that lies wholly inside host-dirty ranges of its object, which the page cache answers
//!   without a device command ([`ObjfsCounters::reads_from_host_cache`]).
//! * `relatime`: atime is updated when it is not newer than mtime or ctime, or is at least
//!   24 h old (Linux `relatime`). Objects that exist before the trace start with atime = mtime
//!   = ctime = trace time 0.
//! * A `create` of a path already in the namespace (O_CREAT|O_EXCL after a failed unlink the
//!   converter dropped, …) is treated as an `open` and counted.
//! * Writeback and preconditioning send at most [`MAX_COMMAND_BYTES`] = 1 MiB per `WRITE`, the
//!   thesis's largest DMMbench request (§4.6.1).
//! * Optional EXOFS directory objects (spec §5) are not modelled: directories opened by the
//!   trace are objects like files, and dirents are not written.
//!
//! Memory: the namespace (one entry per path and per object) and the dirty ranges, which the
//! dirty limit bounds; nothing grows with the number of records.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::command::{ObjectId, OsdCommand, OsdOp};
use crate::config::error::ConfigError;
use crate::trace::{FsJsonlReader, FsOp, FsRecord, TraceError};

/// Largest `WRITE` objfs sends in writeback and preconditioning (the largest DMMbench request,
/// Guo §4.6.1).
pub const MAX_COMMAND_BYTES: u64 = 1 << 20;

/// Linux `relatime`: an atime at least this old is updated on read.
const RELATIME_MAX_AGE_NS: u64 = 24 * 3600 * 1_000_000_000;

/// When an `open` reads the inode (`GET_ATTRIBUTE`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OpenPolicy {
    /// When the inode is not in the host inode cache (first open of a pre-existing object).
    #[default]
    First,
    /// On every open (DMMbench: inode read before every access).
    Always,
    /// Never.
    Never,
}

/// When a read updates atime (`SET_ATTRIBUTE`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum AtimePolicy {
    /// Every read (the thesis's setting, §4.6.2, §4.6.3.1).
    #[default]
    Strict,
    /// Linux `relatime` (the capture's mount option).
    Relatime,
    /// Never.
    Noatime,
}

/// The host page cache.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum HostCache {
    /// Write-back (EXOFS ASYNC): data and inodes are written on fsync, expiry, dirty limit.
    #[default]
    Writeback,
    /// No cache: every write and attribute change is sent at once.
    Sync,
}

/// What a `delete` of a path that is not in the namespace does.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum UnknownDelete {
    /// Count it ([`ObjfsCounters::deletes_skipped`]) and send nothing.
    #[default]
    Skip,
    /// Precondition the path (it existed before the trace) and send `REMOVE`.
    Precondition,
}

/// `[objfs]`: the host layer between a file-level trace and the object device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ObjfsConfig {
    /// `first`, `always` or `never`: when an open reads the inode.
    pub open_policy: OpenPolicy,
    /// `strict`, `relatime` or `noatime`.
    pub atime: AtimePolicy,
    /// `writeback` or `sync`.
    pub host_cache: HostCache,
    /// An object dirty for this long is written back, seconds (Linux default 30).
    pub dirty_expire_s: f64,
    /// Host-dirty data above this triggers writeback of the oldest dirty objects, bytes.
    pub dirty_limit_bytes: u64,
    /// Write back everything still dirty when the trace ends.
    pub sync_at_end: bool,
    /// Create the files that exist before the trace, untimed, before the replay.
    pub precondition: bool,
    /// `skip` or `precondition`: a delete of a path not in the namespace.
    pub unknown_delete: UnknownDelete,
}

impl Default for ObjfsConfig {
    fn default() -> Self {
        ObjfsConfig {
            open_policy: OpenPolicy::First,
            atime: AtimePolicy::Strict,
            host_cache: HostCache::Writeback,
            dirty_expire_s: 30.0,
            // Linux dirty_background_ratio (10 %) of the capture's 512 MiB memory cgroup
            dirty_limit_bytes: 52_428_800,
            sync_at_end: true,
            precondition: true,
            unknown_delete: UnknownDelete::Skip,
        }
    }
}

impl ObjfsConfig {
    /// The defaults (left out of serialized configs while unchanged).
    pub fn is_default(&self) -> bool {
        *self == ObjfsConfig::default()
    }

    /// Check the ranges.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the key, the value and the allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.dirty_expire_s.is_finite()
            && self.dirty_expire_s > 0.0
            && self.dirty_expire_s <= 1e7)
        {
            return Err(ConfigError::Invalid {
                key: "objfs.dirty_expire_s".into(),
                value: self.dirty_expire_s.to_string(),
                msg: "must be > 0 and ≤ 1e7 s (use objfs.host_cache = \"sync\" for no host \
                      cache)"
                    .into(),
            });
        }
        Ok(())
    }

    fn expire_ns(&self) -> u64 {
        (self.dirty_expire_s * 1e9).round() as u64
    }
}

/// What objfs did, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjfsCounters {
    /// Trace records translated.
    pub records: u64,
    /// Timed commands sent, by command name (`create`, `remove`, `read`, `write`, `get_attr`,
    /// `set_attr`, `truncate`, `flush`).
    pub commands: BTreeMap<&'static str, u64>,
    /// Bytes of timed `READ` / `WRITE` commands.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Objects created untimed before the replay, and their bytes.
    pub preconditioned_objects: u64,
    pub preconditioned_bytes: u64,
    /// Deletes of a path not in the namespace, skipped.
    pub deletes_skipped: u64,
    /// Renames whose source is not in the namespace, skipped.
    pub renames_skipped: u64,
    /// Renames that replaced an existing target (`REMOVE` of the target).
    pub renames_over_existing: u64,
    /// Objects created by the first record of an unknown path (not `create`).
    pub implicit_creates: u64,
    /// `create` of a path already in the namespace (treated as `open`).
    pub creates_of_existing: u64,
    /// Reads that sent nothing: at or past the end of the object, or of 0 bytes.
    pub reads_empty: u64,
    /// Reads answered from host-dirty data without a device command.
    pub reads_from_host_cache: u64,
    /// Object writebacks by cause.
    pub writebacks_fsync: u64,
    pub writebacks_expire: u64,
    pub writebacks_dirty_limit: u64,
    pub writebacks_end: u64,
    /// Most host-dirty data at any moment, bytes.
    pub host_dirty_peak_bytes: u64,
    /// Host-dirty data when the trace ended (0 with `sync_at_end`), bytes.
    pub host_dirty_at_end_bytes: u64,
    /// Dirty data dropped because its object was deleted or truncated, bytes.
    pub host_dirty_discarded_bytes: u64,
}

/// Host state of one object.
#[derive(Default)]
struct Obj {
    live: bool,
    size: u64,
    atime_ns: u64,
    mtime_ns: u64,
    ctime_ns: u64,
    inode_cached: bool,
    /// Dirty data ranges, start → end (disjoint, not adjacent).
    dirty: BTreeMap<u64, u64>,
    dirty_bytes: u64,
    /// Any attribute changed since the inode was last written.
    inode_dirty: bool,
    /// The size changed since the inode was last written.
    size_dirty: bool,
    /// Time the object became dirty (data or inode), if it is.
    dirty_since: Option<u64>,
    /// Bumped on each writeback, to spot stale expiry-queue entries.
    generation: u32,
}

impl Obj {
    fn is_dirty(&self) -> bool {
        self.dirty_bytes > 0 || self.inode_dirty
    }
}

/// Why an object is written back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cause {
    Fsync { datasync: bool },
    Expire,
    DirtyLimit,
    End,
}

/// The translator. Feed it records in time order ([`Objfs::record`]); it appends commands to
/// the queue given. [`ObjfsSource`] drives it from a file.
pub struct Objfs {
    cfg: ObjfsConfig,
    expire_ns: u64,
    names: HashMap<Box<str>, ObjectId>,
    /// Indexed by oid − 1.
    objs: Vec<Obj>,
    /// (dirty since, oid, generation), in dirtying order.
    expiry: VecDeque<(u64, ObjectId, u32)>,
    host_dirty: u64,
    last_t: u64,
    counters: ObjfsCounters,
    cmd_counts: [u64; 8],
}

fn op_index(op: &OsdOp) -> usize {
    match op {
        OsdOp::Create { .. } => 0,
        OsdOp::Remove { .. } => 1,
        OsdOp::Read { .. } => 2,
        OsdOp::Write { .. } => 3,
        OsdOp::GetAttr { .. } => 4,
        OsdOp::SetAttr { .. } => 5,
        OsdOp::Truncate { .. } => 6,
        OsdOp::Flush { .. } => 7,
    }
}

const OP_NAMES: [&str; 8] = [
    "create", "remove", "read", "write", "get_attr", "set_attr", "truncate", "flush",
];

impl Objfs {
    /// A translator with an empty namespace.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when the configuration is out of range.
    pub fn new(cfg: &ObjfsConfig) -> Result<Objfs, ConfigError> {
        cfg.validate()?;
        Ok(Objfs {
            expire_ns: cfg.expire_ns(),
            cfg: cfg.clone(),
            names: HashMap::new(),
            objs: Vec::new(),
            expiry: VecDeque::new(),
            host_dirty: 0,
            last_t: 0,
            counters: ObjfsCounters::default(),
            cmd_counts: [0; 8],
        })
    }

    /// The counters so far (command counts filled in).
    pub fn counters(&self) -> ObjfsCounters {
        let mut c = self.counters.clone();
        c.commands = OP_NAMES
            .iter()
            .zip(self.cmd_counts)
            .map(|(n, v)| (*n, v))
            .collect();
        c
    }

    /// Host-dirty data now: what a power cut at this moment loses above the device.
    pub fn host_dirty_bytes(&self) -> u64 {
        self.host_dirty
    }

    /// The oid `path` names now, if any.
    pub fn oid_of(&self, path: &str) -> Option<ObjectId> {
        self.names.get(path).copied()
    }

    /// The host's size of object `oid` (0 for an unknown or removed object).
    pub fn size_of(&self, oid: ObjectId) -> u64 {
        self.obj(oid).filter(|o| o.live).map_or(0, |o| o.size)
    }

    /// Objects in the namespace now.
    pub fn live_objects(&self) -> u64 {
        self.names.len() as u64
    }

    fn obj(&self, oid: ObjectId) -> Option<&Obj> {
        self.objs.get((oid as usize).wrapping_sub(1))
    }

    fn obj_mut(&mut self, oid: ObjectId) -> &mut Obj {
        &mut self.objs[oid as usize - 1]
    }

    /// [`Self::emit`] a WRITE of `len` bytes at `off` of `oid`.
    fn emit_write(
        &mut self,
        out: &mut VecDeque<OsdCommand>,
        t: u64,
        oid: ObjectId,
        off: u64,
        len: u64,
    ) {
        let op = OsdOp::Write {
            oid,
            offset_bytes: off,
            len_bytes: len,
        };
        self.emit(out, t, op);
    }

    fn emit(&mut self, out: &mut VecDeque<OsdCommand>, t: u64, op: OsdOp) {
        self.cmd_counts[op_index(&op)] += 1;
        match op {
            OsdOp::Read { len_bytes, .. } => self.counters.read_bytes += len_bytes,
            OsdOp::Write { len_bytes, .. } => self.counters.write_bytes += len_bytes,
            _ => {}
        }
        out.push_back(OsdCommand {
            arrival_ns: t,
            op,
            precondition: false,
        });
    }

    fn new_object(&mut self, path: &str) -> ObjectId {
        self.objs.push(Obj {
            live: true,
            ..Obj::default()
        });
        let oid = self.objs.len() as ObjectId;
        self.names.insert(path.into(), oid);
        oid
    }

    /// Create `path` untimed with `size_bytes` of data (a file that exists before the trace).
    /// Does nothing if the path is already in the namespace.
    pub fn precondition(&mut self, path: &str, size_bytes: u64, out: &mut VecDeque<OsdCommand>) {
        if self.names.contains_key(path) {
            return;
        }
        let oid = self.new_object(path);
        self.obj_mut(oid).size = size_bytes;
        self.counters.preconditioned_objects += 1;
        self.counters.preconditioned_bytes += size_bytes;
        let pre = |op| OsdCommand {
            arrival_ns: 0,
            op,
            precondition: true,
        };
        out.push_back(pre(OsdOp::Create { oid }));
        let mut off = 0;
        while off < size_bytes {
            let len = (size_bytes - off).min(MAX_COMMAND_BYTES);
            out.push_back(pre(OsdOp::Write {
                oid,
                offset_bytes: off,
                len_bytes: len,
            }));
            off += len;
        }
    }

    /// Translate one record (records must come in time order).
    pub fn record(&mut self, r: &FsRecord<'_>, out: &mut VecDeque<OsdCommand>) {
        self.counters.records += 1;
        let t = r.t_ns.max(self.last_t);
        self.last_t = t;
        self.expire_until(t, out);
        let known = self.names.get(r.path).copied();
        let oid = match (known, r.op) {
            (Some(oid), FsOp::Create) => {
                self.counters.creates_of_existing += 1;
                self.open(oid, t, out);
                return;
            }
            (Some(oid), _) => oid,
            (None, FsOp::Create) => {
                let oid = self.new_object(r.path);
                let o = self.obj_mut(oid);
                (o.atime_ns, o.mtime_ns, o.ctime_ns, o.inode_cached) = (t, t, t, true);
                self.emit(out, t, OsdOp::Create { oid });
                return;
            }
            (None, FsOp::Delete) => {
                self.counters.deletes_skipped += 1;
                return;
            }
            (None, FsOp::Rename) => {
                self.counters.renames_skipped += 1;
                return;
            }
            (None, _) => {
                self.counters.implicit_creates += 1;
                let oid = self.new_object(r.path);
                let o = self.obj_mut(oid);
                (o.atime_ns, o.mtime_ns, o.ctime_ns, o.inode_cached) = (t, t, t, true);
                self.emit(out, t, OsdOp::Create { oid });
                oid
            }
        };
        match r.op {
            FsOp::Create => unreachable!("handled above"),
            FsOp::Open => self.open(oid, t, out),
            FsOp::Read => self.read(oid, t, r.offset_bytes, r.size_bytes, out),
            FsOp::Write => self.write(oid, t, r.offset_bytes, r.size_bytes, out),
            FsOp::Truncate => self.truncate(oid, t, r.size_bytes, out),
            FsOp::Delete => {
                self.names.remove(r.path);
                self.remove(oid, t, out);
            }
            FsOp::Fsync => {
                self.writeback(
                    oid,
                    t,
                    Cause::Fsync {
                        datasync: r.fdatasync,
                    },
                    out,
                );
                self.emit(out, t, OsdOp::Flush { oid });
            }
            FsOp::Rename => {
                let Some(new_path) = r.new_path else { return };
                if new_path == r.path {
                    return;
                }
                if let Some(target) = self.names.remove(new_path) {
                    self.counters.renames_over_existing += 1;
                    self.remove(target, t, out);
                }
                self.names.remove(r.path);
                self.names.insert(new_path.into(), oid);
                self.obj_mut(oid).ctime_ns = t;
                self.attr_changed(oid, t, false, out);
            }
        }
    }

    /// The trace ended at `t_ns`: write back (with `sync_at_end`) or count what is dirty.
    pub fn finish(&mut self, out: &mut VecDeque<OsdCommand>) {
        let t = self.last_t;
        if self.cfg.sync_at_end {
            while let Some((_, oid, generation)) = self.expiry.pop_front() {
                if self
                    .obj(oid)
                    .is_some_and(|o| o.generation == generation && o.is_dirty())
                {
                    self.writeback(oid, t, Cause::End, out);
                }
            }
        }
        self.counters.host_dirty_at_end_bytes = self.host_dirty;
    }

    fn open(&mut self, oid: ObjectId, t: u64, out: &mut VecDeque<OsdCommand>) {
        let send = match self.cfg.open_policy {
            OpenPolicy::Always => true,
            OpenPolicy::Never => false,
            OpenPolicy::First => !self.obj_mut(oid).inode_cached,
        };
        self.obj_mut(oid).inode_cached = true;
        if send {
            self.emit(out, t, OsdOp::GetAttr { oid });
        }
    }

    fn read(&mut self, oid: ObjectId, t: u64, off: u64, len: u64, out: &mut VecDeque<OsdCommand>) {
        let o = self.obj_mut(oid);
        let len = len.min(o.size.saturating_sub(off));
        if len == 0 {
            self.counters.reads_empty += 1;
            return;
        }
        let cached = o
            .dirty
            .range(..=off)
            .next_back()
            .is_some_and(|(_, &end)| end >= off + len);
        if cached {
            self.counters.reads_from_host_cache += 1;
        } else {
            self.emit(
                out,
                t,
                OsdOp::Read {
                    oid,
                    offset_bytes: off,
                    len_bytes: len,
                },
            );
        }
        let atime = self.cfg.atime;
        let o = self.obj_mut(oid);
        let update = match atime {
            AtimePolicy::Strict => true,
            AtimePolicy::Noatime => false,
            AtimePolicy::Relatime => {
                o.atime_ns <= o.mtime_ns
                    || o.atime_ns <= o.ctime_ns
                    || t.saturating_sub(o.atime_ns) >= RELATIME_MAX_AGE_NS
            }
        };
        if update {
            o.atime_ns = t;
            self.attr_changed(oid, t, false, out);
        }
    }

    fn write(&mut self, oid: ObjectId, t: u64, off: u64, len: u64, out: &mut VecDeque<OsdCommand>) {
        let end = off + len;
        let host_cache = self.cfg.host_cache;
        let o = self.obj_mut(oid);
        let grew = end > o.size;
        o.size = o.size.max(end);
        o.mtime_ns = t;
        o.ctime_ns = t;
        if len == 0 {
            return;
        }
        match host_cache {
            HostCache::Sync => {
                self.emit_write(out, t, oid, off, len);
                self.emit(out, t, OsdOp::SetAttr { oid });
            }
            HostCache::Writeback => {
                let added = add_range(&mut o.dirty, off, end);
                o.dirty_bytes += added;
                self.host_dirty += added;
                self.counters.host_dirty_peak_bytes =
                    self.counters.host_dirty_peak_bytes.max(self.host_dirty);
                self.attr_changed(oid, t, grew, out);
                if self.host_dirty > self.cfg.dirty_limit_bytes {
                    self.enforce_dirty_limit(t, out);
                }
            }
        }
    }

    fn truncate(&mut self, oid: ObjectId, t: u64, size: u64, out: &mut VecDeque<OsdCommand>) {
        let o = self.obj_mut(oid);
        let dropped = cut_ranges(&mut o.dirty, size);
        o.dirty_bytes -= dropped;
        o.size = size;
        o.mtime_ns = t;
        o.ctime_ns = t;
        self.host_dirty -= dropped;
        self.counters.host_dirty_discarded_bytes += dropped;
        self.emit(
            out,
            t,
            OsdOp::Truncate {
                oid,
                size_bytes: size,
            },
        );
    }

    fn remove(&mut self, oid: ObjectId, t: u64, out: &mut VecDeque<OsdCommand>) {
        let o = self.obj_mut(oid);
        let dropped = o.dirty_bytes;
        o.dirty.clear();
        o.dirty_bytes = 0;
        o.inode_dirty = false;
        o.size_dirty = false;
        o.dirty_since = None;
        o.live = false;
        o.generation = o.generation.wrapping_add(1);
        self.host_dirty -= dropped;
        self.counters.host_dirty_discarded_bytes += dropped;
        self.emit(out, t, OsdOp::Remove { oid });
    }

    /// An attribute of `oid` changed (`size` too when `size_changed`).
    fn attr_changed(
        &mut self,
        oid: ObjectId,
        t: u64,
        size_changed: bool,
        out: &mut VecDeque<OsdCommand>,
    ) {
        match self.cfg.host_cache {
            HostCache::Sync => self.emit(out, t, OsdOp::SetAttr { oid }),
            HostCache::Writeback => {
                let o = self.obj_mut(oid);
                o.inode_dirty = true;
                o.size_dirty |= size_changed;
                self.mark_dirty(oid, t);
            }
        }
    }

    fn mark_dirty(&mut self, oid: ObjectId, t: u64) {
        let o = self.obj_mut(oid);
        if o.dirty_since.is_none() {
            o.dirty_since = Some(t);
            let generation = o.generation;
            self.expiry.push_back((t, oid, generation));
        }
    }

    /// Write back every object whose dirty time expired by `t`, at its expiry time.
    fn expire_until(&mut self, t: u64, out: &mut VecDeque<OsdCommand>) {
        while let Some(&(since, oid, generation)) = self.expiry.front() {
            let due = since.saturating_add(self.expire_ns);
            if due > t {
                break;
            }
            self.expiry.pop_front();
            if self
                .obj(oid)
                .is_some_and(|o| o.generation == generation && o.is_dirty())
            {
                self.writeback(oid, due, Cause::Expire, out);
            }
        }
    }

    fn enforce_dirty_limit(&mut self, t: u64, out: &mut VecDeque<OsdCommand>) {
        while self.host_dirty > self.cfg.dirty_limit_bytes {
            let Some((_, oid, generation)) = self.expiry.pop_front() else {
                break;
            };
            if self
                .obj(oid)
                .is_some_and(|o| o.generation == generation && o.is_dirty())
            {
                self.writeback(oid, t, Cause::DirtyLimit, out);
            }
        }
    }

    /// Send `oid`'s dirty data (offset order) and then, if needed, its inode.
    fn writeback(&mut self, oid: ObjectId, t: u64, cause: Cause, out: &mut VecDeque<OsdCommand>) {
        let o = self.obj_mut(oid);
        if !o.is_dirty() {
            return;
        }
        let ranges = std::mem::take(&mut o.dirty);
        let bytes = o.dirty_bytes;
        o.dirty_bytes = 0;
        let write_inode = match cause {
            Cause::Fsync { datasync: true } => o.size_dirty,
            _ => o.inode_dirty,
        };
        if write_inode {
            o.inode_dirty = false;
            o.size_dirty = false;
        }
        let still_dirty = o.inode_dirty;
        o.generation = o.generation.wrapping_add(1);
        o.dirty_since = None;
        self.host_dirty -= bytes;
        match cause {
            Cause::Fsync { .. } => self.counters.writebacks_fsync += 1,
            Cause::Expire => self.counters.writebacks_expire += 1,
            Cause::DirtyLimit => self.counters.writebacks_dirty_limit += 1,
            Cause::End => self.counters.writebacks_end += 1,
        }
        for (&start, &end) in &ranges {
            let mut off = start;
            while off < end {
                let len = (end - off).min(MAX_COMMAND_BYTES);
                self.emit_write(out, t, oid, off, len);
                off += len;
            }
        }
        // hand the (now empty) map back to keep its allocation
        let o = self.obj_mut(oid);
        o.dirty = ranges;
        o.dirty.clear();
        if write_inode {
            self.emit(out, t, OsdOp::SetAttr { oid });
        }
        if still_dirty {
            // fdatasync left timestamps dirty: they expire from now
            self.mark_dirty(oid, t);
        }
    }
}

/// Add `[start, end)` to a set of disjoint, non-adjacent ranges; returns the bytes newly
/// covered.
fn add_range(set: &mut BTreeMap<u64, u64>, start: u64, end: u64) -> u64 {
    let (mut s, mut e) = (start, end);
    let mut covered = 0;
    // a range starting before `start` that reaches it
    if let Some((&ps, &pe)) = set.range(..=start).next_back() {
        if pe >= start {
            s = ps;
            e = e.max(pe);
            covered += pe - ps;
            set.remove(&ps);
        }
    }
    // ranges starting inside [start, e]
    while let Some((&ns, &ne)) = set.range(start..=e).next() {
        e = e.max(ne);
        covered += ne - ns;
        set.remove(&ns);
    }
    set.insert(s, e);
    (e - s) - covered
}

/// Drop everything at or past `size`; returns the bytes dropped.
fn cut_ranges(set: &mut BTreeMap<u64, u64>, size: u64) -> u64 {
    let mut dropped = 0;
    let tail = set.split_off(&size);
    for (s, e) in tail {
        dropped += e - s;
    }
    if let Some((&s, e)) = set.range_mut(..size).next_back() {
        if *e > size {
            dropped += *e - size;
            *e = size;
        }
        debug_assert!(s < size);
    }
    dropped
}

/// A file-level trace translated by [`Objfs`]: preconditioning commands first
/// (`precondition = true`), then the timed replay. An iterator of
/// `Result<OsdCommand, TraceError>`.
pub struct ObjfsSource {
    rd: FsJsonlReader,
    fs: Objfs,
    out: VecDeque<OsdCommand>,
    /// Paths to precondition (in order of first appearance) with their sizes.
    pre: Vec<(Box<str>, u64)>,
    next_pre: usize,
    finished: bool,
    failed: bool,
}

impl ObjfsSource {
    /// Open `path`. With `cfg.precondition` this reads the whole file once to find the paths
    /// that exist before the trace (one entry per path).
    ///
    /// # Errors
    /// The reader's errors (from the first pass: a malformed line names file, line and
    /// field) and [`TraceError::InvalidOption`] for an invalid `cfg`.
    pub fn open(path: &Path, cfg: &ObjfsConfig) -> Result<ObjfsSource, TraceError> {
        let fs = Objfs::new(cfg).map_err(|e| TraceError::InvalidOption {
            file: path.to_path_buf(),
            option: "objfs",
            msg: e.to_string(),
        })?;
        let pre = if cfg.precondition {
            preexisting_paths(path, cfg.unknown_delete)?
        } else {
            Vec::new()
        };
        Ok(ObjfsSource {
            rd: FsJsonlReader::open(path)?,
            fs,
            out: VecDeque::with_capacity(64),
            pre,
            next_pre: 0,
            finished: false,
            failed: false,
        })
    }

    /// The translator (namespace, counters, host-dirty bytes).
    pub fn objfs(&self) -> &Objfs {
        &self.fs
    }

    /// The reader (file, line reached).
    pub fn reader(&self) -> &FsJsonlReader {
        &self.rd
    }

    /// The next command, or `None` at the end.
    ///
    /// # Errors
    /// The reader's errors; after one, the source returns `None`.
    pub fn next_command(&mut self) -> Result<Option<OsdCommand>, TraceError> {
        loop {
            if let Some(c) = self.out.pop_front() {
                return Ok(Some(c));
            }
            if self.finished || self.failed {
                return Ok(None);
            }
            if self.next_pre < self.pre.len() {
                let (p, size) = &self.pre[self.next_pre];
                self.next_pre += 1;
                self.fs.precondition(p, *size, &mut self.out);
                if self.next_pre == self.pre.len() {
                    self.pre = Vec::new();
                    self.next_pre = 0;
                }
                continue;
            }
            match self.rd.next_record() {
                Ok(Some(r)) => self.fs.record(&r, &mut self.out),
                Ok(None) => {
                    self.fs.finish(&mut self.out);
                    self.finished = true;
                }
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            }
        }
    }
}

impl Iterator for ObjfsSource {
    type Item = Result<OsdCommand, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_command().transpose()
    }
}

/// First pass: the paths whose first record is not `create` (and that are not first named as a
/// rename target), in order of first appearance, each with the largest read/write end offset
/// of the file it names. The pass follows the namespace as the replay will (a rename moves the
/// file to its new name, a delete or a rename over a name ends the file there), so a
/// pre-existing file's size comes from the records that address that file, under whichever
/// name. Paths first seen in a `delete` are included only with `UnknownDelete::Precondition`.
fn preexisting_paths(
    path: &Path,
    unknown_delete: UnknownDelete,
) -> Result<Vec<(Box<str>, u64)>, TraceError> {
    const NOT_PRE: usize = usize::MAX;
    // name → the file it names now: an index into `order`, or NOT_PRE
    let mut live: HashMap<Box<str>, usize> = HashMap::new();
    // every name seen so far (a name's first appearance decides whether it pre-exists)
    let mut seen: std::collections::HashSet<Box<str>> = std::collections::HashSet::new();
    let mut order: Vec<(Box<str>, u64)> = Vec::new();
    let mut rd = FsJsonlReader::open(path)?;
    while let Some(r) = rd.next_record()? {
        let id = match live.get(r.path) {
            Some(&i) => Some(i),
            None => {
                let first = !seen.contains(r.path);
                if first {
                    seen.insert(r.path.into());
                }
                let pre = first
                    && match r.op {
                        FsOp::Create => false,
                        FsOp::Delete => unknown_delete == UnknownDelete::Precondition,
                        _ => true,
                    };
                if pre {
                    order.push((r.path.into(), 0));
                    live.insert(r.path.into(), order.len() - 1);
                    Some(order.len() - 1)
                } else if r.op == FsOp::Delete || r.op == FsOp::Rename {
                    None // skipped by the replay
                } else {
                    live.insert(r.path.into(), NOT_PRE); // created (or implicitly) now
                    Some(NOT_PRE)
                }
            }
        };
        match r.op {
            FsOp::Read | FsOp::Write => {
                if let Some(i) = id.filter(|&i| i != NOT_PRE) {
                    order[i].1 = order[i].1.max(r.offset_bytes + r.size_bytes);
                }
            }
            FsOp::Delete => {
                live.remove(r.path);
            }
            FsOp::Rename => {
                if let (Some(np), Some(i)) = (r.new_path, id) {
                    if np != r.path {
                        live.remove(r.path);
                        if !seen.contains(np) {
                            seen.insert(np.into());
                        }
                        live.insert(np.into(), i);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_cut() {
        let mut s = BTreeMap::new();
        assert_eq!(add_range(&mut s, 10, 20), 10);
        assert_eq!(add_range(&mut s, 30, 40), 10);
        assert_eq!(add_range(&mut s, 15, 35), 10);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(&10, &40)]);
        assert_eq!(add_range(&mut s, 40, 50), 10);
        assert_eq!(add_range(&mut s, 0, 10), 10);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(&0, &50)]);
        assert_eq!(add_range(&mut s, 5, 6), 0);
        assert_eq!(add_range(&mut s, 60, 70), 10);
        assert_eq!(cut_ranges(&mut s, 45), 15);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(&0, &45)]);
        assert_eq!(cut_ranges(&mut s, 0), 45);
        assert!(s.is_empty());
    }
}
