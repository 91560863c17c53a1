//! The object device's functional model: what every object command does to flash and DRAM
//! state, and the flash operations it costs, in stages (see the module doc of [`crate::osd`]).
//!
//! [`Device::execute`] applies one command at once and leaves its cost in [`Device::plan`]: a
//! list of stages, each a set of flash operations that may run in parallel, a stage starting
//! when the one before it has finished (A2's order: onode and index reads, data, index,
//! onode; GC stages before the program that needed space). The replay
//! ([`crate::osd::replay()`]) runs the stages on the shared executor.
//!
//! The model is split by the thesis's pieces (Guo, ch. 4; `specs/dmm.md`), each file one
//! `impl Device` block over the state declared here:
//!
//! | file | what | source |
//! |---|---|---|
//! | `chunks` | pages, OOB, chunks, allocation, programs and reads | §4.1.2, §4.5.4.1, F34 |
//! | `objects` | onodes in DRAM, the data path, mappings, tail buffers | §4.5.4.1–2, A2 |
//! | `index` | the B+ trees' flash side, the virtual tree's page table | §4.4.3, T13 |
//! | `mlgc` | onode pages, onode writes, the byte-level GC table | §4.2, §4.4.2, F29 |
//! | `diffcache` | the diff cache's LRU and eviction | §4.4.4, F32 |
//! | `gc` | chunk GC | §4.5.4.1, A2 l.10/26/42 |
//! | `commands` | the object commands (T15) and A2's end of command | §4.5.2, A2 |
//! | `recovery` | power loss, the capacitor flush, the rebuilt device | §4.4.5, A1, F33 |
//! | `scan` | Algorithm 1's scan of a flash image | §4.4.5.1, A1 |
//! | `check` | read-back and the consistency checks | spec §7 item 6 |

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde::Serialize;

use super::command::{ObjectId, OsdOp};
use super::config::{Design, OsdConfig};
use super::tree::{ext_page, ext_page_len, ext_pages, leaf_parts, leaf_val, Change, Geo, Nodes};
use crate::config::Config;
use crate::exec::NONE;

/// Page types (OOB `type`, §4.4.5.1 / F34).
pub const DATA: usize = 0;
pub const INDEX: usize = 1;
pub const ONODE: usize = 2;
/// Their names in reports.
pub const TYPE_NAMES: [&str; 3] = ["data", "index", "onode"];
/// Page-write sources, in report order.
pub const SRC_NAMES: [&str; 5] = ["host", "gc", "mlgc", "cache_evict", "recovery"];

/// Why a flash operation happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Src {
    /// The command itself (A2's data → index → onode flow).
    Host = 0,
    /// Chunk GC (moves and erases).
    Gc = 1,
    /// MLGC eviction: the valid bytes of the page with most invalid bytes move.
    Mlgc = 2,
    /// Diff-cache eviction: leaves, internal nodes and onode committed.
    CacheEvict = 3,
    /// Power-failure recovery.
    Recovery = 4,
}

/// What a flash operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Program,
    Erase,
}

/// One flash operation of a plan.
#[derive(Clone, Copy, Debug)]
pub struct FlashOp {
    pub kind: OpKind,
    /// Page (read, program) or first page of the block (erase).
    pub ppn: u32,
    pub die: u32,
    pub src: Src,
}

/// The stages of one command: stage `k` is `ops[ends[k-1] .. ends[k]]`.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub ops: Vec<FlashOp>,
    pub ends: Vec<u32>,
}

impl Plan {
    /// Empty it (keeping the capacity).
    pub fn clear(&mut self) {
        self.ops.clear();
        self.ends.clear();
    }
    /// Number of stages.
    pub fn stages(&self) -> usize {
        self.ends.len()
    }
    /// Stage `k`.
    pub fn stage(&self, k: usize) -> &[FlashOp] {
        let a = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        &self.ops[a..self.ends[k] as usize]
    }
    fn push_stage(&mut self, ops: &mut Vec<FlashOp>) {
        if !ops.is_empty() {
            self.ops.append(ops);
            self.ends.push(self.ops.len() as u32);
        }
    }
}

mod check;
mod chunks;
mod commands;
mod diffcache;
mod gc;
mod index;
mod mlgc;
mod objects;
mod recovery;
mod scan;
mod stripes;

pub use check::LogicalObject;
pub use chunks::{clip, overlay, Contents, FlashImage, FlashPage, OnodeRec, PageContent, BACKUP};
use chunks::{
    ChunkMeta, ChunkPages, SparsePages, C_FREE, C_FULL, C_OPEN, FREE, INVALID, TORN, VALID,
};
pub use recovery::BackupStats;
pub use scan::{recover, RecObject, Recovered, Variant};
pub use stripes::{Stripes, STRIPED};

impl Geo for Stripes {
    #[inline]
    fn addr(&self, ppn: u32) -> u32 {
        Stripes::addr(self, ppn)
    }
    #[inline]
    fn next(&self, a: u32, j: u64) -> Option<u32> {
        Stripes::next(self, a, j)
    }
    #[inline]
    fn ppn(&self, a: u32) -> Option<u32> {
        Stripes::ppn(self, a)
    }
}

/// The stream of data pages GC moves (one open chunk per die, outside the host stripes).
pub(crate) const GC_DATA: usize = 3;

/// Errors of the object device.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OsdError {
    #[error("object command {cmd} on object {oid}: no such object (CREATE it first)")]
    UnknownObject { oid: ObjectId, cmd: &'static str },
    #[error("CREATE of object {oid}: the object exists (object ids are never reused)")]
    ObjectExists { oid: ObjectId },
    #[error(
        "object device full: die {die} has no clean chunk and no chunk GC could reclaim; \
         raise device.blocks_per_plane or lower the data written"
    )]
    OutOfSpace { die: u32 },
    #[error(
        "virtual B+ tree page table full: more than osd.page_table_max_vas = {max} index \
         nodes; raise it"
    )]
    PageTableFull { max: u32 },
    #[error("object {oid}: offset {offset_bytes} is beyond the 2^32 pages an object may span")]
    TooLarge { oid: ObjectId, offset_bytes: u64 },
    /// The crash harness cut the power at this flash operation.
    #[error("power cut at flash operation {op}")]
    PowerCut { op: u64 },
}

impl From<OsdError> for crate::error::NandlabError {
    fn from(e: OsdError) -> Self {
        crate::error::NandlabError::Sim(e.to_string())
    }
}

/// Operation counts.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Counters {
    /// Page programs by type × source.
    pub writes: [[u64; 5]; 3],
    /// Page reads by type × source.
    pub reads: [[u64; 5]; 3],
    /// Block erases.
    pub erases: u64,
    /// Chunks reclaimed by GC.
    pub gc_chunks: u64,
    /// MLGC evictions and the valid bytes they moved.
    pub mlgc_evictions: u64,
    pub mlgc_moved_bytes: u64,
    /// OBFS survivor migrations: onodes moved because another onode of their page changed.
    pub survivor_onodes: u64,
    /// Index operations (a command that looks up or updates an object's B+ tree) and those
    /// served without reading an index page from flash (spec \[N\] hit).
    pub index_ops: u64,
    pub index_hits: u64,
    /// Diff-cache evictions: objects committed, clean internal pages dropped.
    pub cache_evicted_objects: u64,
    pub cache_dropped_pages: u64,
    /// Partial-page writes: read-before-write, and tail buffers flushed.
    pub rmw: u64,
    pub tail_flushes: u64,
    /// Pinned index pages GC copied before erasing their chunk (virtual tree; issue 30).
    pub pinned_moves: u64,
    /// Onode versions put into the onode write buffer, and buffer pages programmed before
    /// they were full (FLUSH, GC under the extent tree, recovery, power loss).
    pub onodes_buffered: u64,
    pub onode_buffer_early: u64,
    /// Of those, programmed because GC under the extent tree needed the pins they hold.
    pub onode_buffer_gc: u64,
}

/// Peak DRAM use of each table, bytes.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DramUse {
    /// Byte-level GC table: entries × 8 B (§4.4.2).
    pub gc_table_bytes: u64,
    /// Diff cache (after each command's eviction).
    pub diff_cache_bytes: u64,
    /// Virtual B+ tree page table: allocated second-level tables × 4 KiB + directory.
    pub page_table_bytes: u64,
    /// Global index: live objects × 16 B (oid, onode page, slot; spec \[N\]).
    pub global_index_bytes: u64,
    /// YAFFS2's RAM file index (tnodes): entries × 4 B (spec §3 \[N\]).
    pub ram_index_bytes: u64,
    /// Tail buffers in use × page size.
    pub tail_buffer_bytes: u64,
}

/// A pinned page ([`Device::pin`]): its object, and the OOB fields a relocated copy keeps
/// (VA or node id, content SN), held apart from the chunk's per-page state (which a full
/// chunk in a performance run keeps for valid pages only).
#[derive(Clone, Copy, Debug)]
struct Pin {
    slot: u32,
    aux: u32,
    csn: u64,
}

/// An onode version in the onode write buffer ([`Device::obuf_append`]).
#[derive(Clone, Copy, Debug)]
struct OEnt {
    slot: u32,
    src: Src,
    tomb: bool,
    /// A new version of the DRAM onode; else a move of its flash version (OBFS survivor,
    /// MLGC eviction).
    commit: bool,
    /// Its content SN.
    csn: u64,
    /// The object's pins taken before it was buffered.
    pin_mark: u32,
    /// Which append it is (the object's newest is `Obj::obuf_seq`).
    seq: u64,
    /// Record mode: the onode as written.
    rec: Option<OnodeRec>,
}

/// An onode page's contents: the object slot of each onode in it.
#[derive(Clone, Debug, Default)]
struct OPage {
    slots: Vec<u32>,
    live: u32,
}

#[derive(Clone, Debug)]
struct Obj {
    oid: ObjectId,
    live: bool,
    size: u64,
    onode_ppn: u32,
    onode_idx: u32,
    onode_dirty: bool,
    onode_read: bool,
    root: u32,
    n_inline: u8,
    inline: [(u64, u64); 2],
    tail_page: u64,
    tail_fill: u32,
    dirty: Vec<u32>,
    clean_cached: Vec<u32>,
    lru_prev: u32,
    lru_next: u32,
    in_lru: bool,
    touched: bool,
    touched_host: bool,
    pend_mark: bool,
    /// SN of the last onode version written to flash; 0 = none yet.
    onode_csn: u64,
    /// The object's last consistent state (LCS, §4.4.5.1) as the SN up to which flash holds
    /// its committed metadata: its last committed onode's, or later, under the virtual tree,
    /// the SN at the end of a flush that left its tree clean without an onode write (the root
    /// VA is in the onode and does not change: §4.4.3.1 "updates to onode can be also
    /// reduced"). The capacitor flush records it in IC_OBJ.
    lcs: u64,
    /// The onode is being moved (OBFS survivor, MLGC eviction) from this page: its flash
    /// version is copied, not the DRAM one.
    move_from: u32,
    /// Tail-buffer contents (record mode).
    tail_segs: Vec<(u32, u32, u64)>,
    /// Something of the object (data mapping, attributes, buffered data) is newer than its
    /// last committed onode: it belongs in IC_OBJ at power loss.
    uncommitted: bool,
    /// Which entry of [`Device::uncommitted_q`] is current (the count of `uncommitted`
    /// false → true transitions when it was queued).
    unc_seq: u32,
    /// Index pages superseded since its last onode write ([`Device::pin`]).
    pins: Vec<u32>,
    /// Its DRAM onode is queued to be committed (not only moved): when an OBFS survivor
    /// migration or an MLGC eviction moves it in the same batch, the DRAM version is written.
    commit_req: bool,
    /// YAFFS2-like: a truncate shrank it; its next object header is a shrink header.
    shrink_pending: bool,
    /// YAFFS2-like: its object header on flash is a shrink header (kept when GC moves it).
    onode_shrink: bool,
    /// Its newest onode version waits in the onode write buffer: that entry's `seq` (0: none).
    obuf_seq: u64,
}

impl Obj {
    fn new(oid: ObjectId) -> Obj {
        Obj {
            oid,
            live: true,
            size: 0,
            onode_ppn: NONE,
            onode_idx: 0,
            onode_dirty: false,
            onode_read: false,
            root: NONE,
            n_inline: 0,
            inline: [(0, 0); 2],
            tail_page: u64::MAX,
            tail_fill: 0,
            dirty: Vec::new(),
            clean_cached: Vec::new(),
            lru_prev: NONE,
            lru_next: NONE,
            in_lru: false,
            touched: false,
            touched_host: false,
            pend_mark: false,
            onode_csn: 0,
            lcs: 0,
            move_from: NONE,
            tail_segs: Vec::new(),
            uncommitted: false,
            unc_seq: 0,
            pins: Vec::new(),
            commit_req: false,
            shrink_pending: false,
            onode_shrink: false,
            obuf_seq: 0,
        }
    }
}

/// A fast hasher for object ids (SplitMix64 finaliser).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = v as u64;
    }
}

pub(crate) type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// The object device. See the module documentation. `Clone` snapshots it whole (flash and
/// DRAM state): the crash harness cuts from clones of a preconditioned device.
#[derive(Clone)]
pub struct Device {
    pub(crate) o: OsdConfig,
    page: u32,
    dies: u32,
    ppc: u32,
    cpd: u32,
    ppb: u32,
    chunk_blocks: u32,
    onodes_per_page: u32,
    separate: bool,
    yaffs: bool,
    cache_on: bool,
    // flash + chunk metadata
    chunks: Vec<ChunkMeta>,
    /// Per-page state of each opened chunk (dense), `None` for a chunk never opened, one
    /// with nothing valid whose state was dropped, or a sparse one.
    pages: Vec<Option<Box<ChunkPages>>>,
    /// Per-page state of the full chunks kept sparse ([`SparsePages`]; performance runs).
    sparse: Vec<Option<Box<SparsePages>>>,
    free: Vec<Vec<u32>>,
    /// Open chunk of each stream on each die: data (host; stripe members), index, onode, and
    /// data moved by GC ([`GC_DATA`]).
    open: Vec<[u32; 4]>,
    rr: [u32; 3],
    /// Stripe numbering of the host data stream ([`Stripes`]).
    stripes: Stripes,
    /// Scratch extent lists (inline extents).
    ext_keys: Vec<u64>,
    ext_vals: Vec<u64>,
    /// Erase count per block.
    pub erase_count: Vec<u32>,
    sn: u64,
    /// Pinned pages by PPN ([`Device::pin`]).
    pinned: BTreeMap<u32, Pin>,
    // objects
    objs: Vec<Obj>,
    index: IdMap<ObjectId, u32>,
    nodes: Nodes,
    opages: Vec<OPage>,
    opages_free: Vec<u32>,
    // virtual tree page table (two-level)
    pt_dir: Vec<Option<Box<[u32]>>>,
    va_free: Vec<u32>,
    va_next: u32,
    va_live: u32,
    // MLGC table
    gct: IdMap<u32, (u32, u32)>,
    gct_order: BTreeSet<(u32, u32)>,
    gct_entries: u64,
    gct_max_entries: u64,
    /// The onode write buffer: onode versions waiting for a page ([`Device::obuf_append`]).
    obuf: Vec<OEnt>,
    obuf_seq: u64,
    // diff cache
    lru_head: u32,
    lru_tail: u32,
    clean_pages: u64,
    dirty_onodes: u64,
    // tail buffers
    tails: VecDeque<(u32, u64)>,
    tails_used: u32,
    // back-up set bound (§4.4.5: the capacitor flush must always fit)
    /// Objects with `uncommitted` set: an upper bound on the IC_OBJ set of
    /// [`Device::power_loss`] (which also needs live or tombstone-less objects).
    uncommitted_objs: u64,
    /// Objects in the order their `uncommitted` was set, with their `unc_seq` (stale entries
    /// are skipped, and dropped when the queue grows).
    uncommitted_q: VecDeque<(u32, u32)>,
    // per-command scratch
    cur: Vec<FlashOp>,
    gc_reads: Vec<FlashOp>,
    gc_progs: Vec<FlashOp>,
    gc_erases: Vec<FlashOp>,
    in_gc: bool,
    /// Recovery (§4.4.5) is writing back: GC keeps the capacitor flush's pages.
    recovering: bool,
    touched: Vec<u32>,
    pending: Vec<(u32, Src, bool)>,
    pend_scratch: Vec<(u32, Src, bool)>,
    path: Vec<u32>,
    path_reads: Vec<(u8, u32)>,
    buckets: Vec<Vec<u32>>,
    bucket_scratch: Vec<u32>,
    entries_scratch: Vec<(u64, u64)>,
    nodes_scratch: Vec<u32>,
    /// Object lists of [`Device::finish`]'s rounds, kept to save two allocations per command.
    finish_list: Vec<u32>,
    finish_again: Vec<u32>,
    index_reads_cmd: u64,
    index_used_cmd: bool,
    /// Data pages mapped (YAFFS2's RAM index size).
    mapped: u64,
    /// YAFFS2-like: pages holding a shrink header, valid or superseded (the OOB flag).
    shrink_ppns: BTreeSet<u32>,
    /// YAFFS2-like: superseded shrink headers GC copied before erasing their chunk
    /// (`carry_shrink_headers`; not in the report).
    pub shrink_carried: u64,
    /// Page contents (record mode only), by PPN.
    contents: Option<Contents>,
    next_content: Option<PageContent>,
    next_csn: u64,
    /// Write id of the command being executed (record mode: what its data bytes carry).
    pub write_id: u64,
    /// Flash operations (programs and erases) so far.
    pub flash_ops: u64,
    /// Cut the power at this flash operation (`u64::MAX`: never).
    pub cut_at: u64,
    /// Record mode: the class of each flash operation (type × 8 + source for programs, 255
    /// for erases).
    pub op_log: Option<Vec<u8>>,
    /// The cost of the last command.
    pub plan: Plan,
    /// Operation counts.
    pub counters: Counters,
    /// Peak DRAM use.
    pub dram: DramUse,
}

impl Device {
    /// A fresh (erased) device for `cfg`, which must have an `[osd]` section.
    pub fn new(cfg: &Config) -> Result<Device, crate::config::ConfigError> {
        let o = cfg
            .osd
            .clone()
            .ok_or_else(|| crate::config::ConfigError::Invalid {
                key: "osd".into(),
                value: "(missing)".into(),
                msg: "the object device needs an [osd] section (see configs/dmm.toml)".into(),
            })?;
        o.validate(&cfg.device, &cfg.sched, &cfg.timing, &cfg.dram)?;
        let d = &cfg.device;
        let dies = d.channels * d.chips_per_channel * d.dies_per_chip;
        let ppb = d.pages_per_block;
        let ppc = o.chunk_blocks * ppb;
        let cpd = d.blocks_per_plane / o.chunk_blocks;
        let page = d.page_size_bytes;
        let yaffs = o.design == Design::Yaffs2;
        let leaf_cap = (page / o.leaf_entry_bytes) as usize;
        let ie = if o.virtual_tree {
            o.internal_entry_va_bytes
        } else {
            o.internal_entry_pa_bytes
        };
        let mut nodes = Nodes::new(leaf_cap, (page / ie) as usize);
        nodes.entry_bytes = o.diff_cache_entry_bytes as u64;
        nodes.page_bytes = page as u64;
        nodes.whole_after = o.diff_cache_leaf_threshold;
        let nchunks = (dies * cpd) as usize;
        let free = (0..dies)
            .map(|die| (0..cpd).rev().map(|k| die * cpd + k).collect())
            .collect();
        Ok(Device {
            page,
            dies,
            ppc,
            cpd,
            ppb,
            chunk_blocks: o.chunk_blocks,
            onodes_per_page: if yaffs { 1 } else { page / o.onode_bytes },
            separate: !yaffs,
            yaffs,
            cache_on: o.diff_cache_bytes > 0,
            chunks: vec![
                ChunkMeta {
                    state: C_FREE,
                    stream: 0,
                    valid: 0,
                    wp: 0,
                    pins: 0,
                    shrink: false,
                    first_sn: 0,
                };
                nchunks
            ],
            pages: vec![None; nchunks],
            sparse: vec![None; nchunks],
            free,
            open: vec![[NONE; 4]; dies as usize],
            rr: [0; 3],
            stripes: Stripes::new(dies, ppc, cpd, nchunks),
            ext_keys: Vec::new(),
            ext_vals: Vec::new(),
            erase_count: vec![0; (dies * d.blocks_per_plane) as usize],
            sn: 0,
            pinned: BTreeMap::new(),
            objs: Vec::new(),
            index: IdMap::default(),
            nodes,
            opages: Vec::new(),
            opages_free: Vec::new(),
            pt_dir: Vec::new(),
            va_free: Vec::new(),
            va_next: 0,
            va_live: 0,
            gct: IdMap::default(),
            gct_order: BTreeSet::new(),
            gct_entries: 0,
            gct_max_entries: o.mlgc_table_bytes / 8,
            obuf: Vec::new(),
            obuf_seq: 0,
            lru_head: NONE,
            lru_tail: NONE,
            clean_pages: 0,
            dirty_onodes: 0,
            tails: VecDeque::new(),
            tails_used: 0,
            uncommitted_objs: 0,
            uncommitted_q: VecDeque::new(),
            cur: Vec::new(),
            gc_reads: Vec::new(),
            gc_progs: Vec::new(),
            gc_erases: Vec::new(),
            in_gc: false,
            recovering: false,
            touched: Vec::new(),
            pending: Vec::new(),
            pend_scratch: Vec::new(),
            path: Vec::new(),
            path_reads: Vec::new(),
            buckets: vec![Vec::new(); 64],
            bucket_scratch: Vec::new(),
            entries_scratch: Vec::new(),
            nodes_scratch: Vec::new(),
            finish_list: Vec::new(),
            finish_again: Vec::new(),
            index_reads_cmd: 0,
            index_used_cmd: false,
            mapped: 0,
            shrink_ppns: BTreeSet::new(),
            shrink_carried: 0,
            contents: None,
            next_content: None,
            next_csn: 0,
            write_id: 0,
            flash_ops: 0,
            cut_at: u64::MAX,
            op_log: None,
            plan: Plan::default(),
            counters: Counters::default(),
            dram: DramUse::default(),
            o,
        })
    }

    /// Keep every programmed page's contents (the crash harness reads flash back).
    pub fn record_contents(&mut self) {
        if self.contents.is_none() {
            self.contents = Some(Contents::new(self.pages.len(), self.ppc));
        }
    }

    /// Dies.
    pub fn dies(&self) -> u32 {
        self.dies
    }

    /// Pages per block.
    pub fn pages_per_block(&self) -> u32 {
        self.ppb
    }
}
