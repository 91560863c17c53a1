//! The object device's functional model: what every object command does to flash and DRAM
//! state, and the flash operations it costs, in stages (see the module doc of [`crate::osd`]).
//!
//! [`Device::execute`] applies one command at once and leaves its cost in [`Device::plan`]: a
//! list of stages, each a set of flash operations that may run in parallel, a stage starting
//! when the one before it has finished (A2's order: onode and index reads, data, index,
//! onode; GC stages before the program that needed space). The replay
//! ([`crate::osd::replay()`]) runs the stages on the shared executor.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde::Serialize;

use super::command::{ObjectId, OsdOp};
use super::config::{Design, OsdConfig};
use super::tree::{leaf_parts, leaf_val, Change, Nodes};
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

/// What a page holds (recorded only when [`Device::record_contents`] is on: the crash
/// harness reads flash back; a performance run keeps no page contents).
#[derive(Clone, Debug, PartialEq)]
pub enum PageContent {
    /// Byte ranges of the page (page-relative `[start, end)`) and the write id that wrote each.
    Data(Vec<(u32, u32, u64)>),
    /// A B+ tree node: leaf values are PA | length << 32; internal values are child PAs
    /// (extent tree) or VAs (virtual tree).
    Index {
        level: u8,
        keys: Vec<u64>,
        vals: Vec<u64>,
    },
    /// Packed onodes.
    Onode(Vec<OnodeRec>),
    /// The capacitor-backed flush at power loss (§4.4.5.1): IC_OBJ = ⟨oid, SN of the last
    /// committed onode⟩ and the dirty onodes of the diff cache.
    Backup {
        epoch: u64,
        ic: Vec<(u64, u64)>,
        onodes: Vec<OnodeRec>,
    },
}

/// One onode as written to flash.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnodeRec {
    pub oid: ObjectId,
    /// SN of this onode version (kept when GC, MLGC or OBFS migration copies it).
    pub csn: u64,
    pub size: u64,
    /// Root of the index: PA (extent tree) or VA (virtual tree); [`NONE`] = inline extents.
    pub root: u32,
    pub n_inline: u8,
    pub inline: [(u64, u64); 2],
    /// Tombstone of a removed object.
    pub tomb: bool,
    /// YAFFS2-like: the header of a truncate (YAFFS2's shrink header): at recovery, data
    /// pages older than it are cut to its size.
    pub shrink: bool,
}

/// Overlay byte range `[a, b)` written by `wid` on a page's ranges.
pub fn overlay(segs: &mut Vec<(u32, u32, u64)>, a: u32, b: u32, wid: u64) {
    let mut out = Vec::with_capacity(segs.len() + 2);
    for &(x, y, w) in segs.iter() {
        if y <= a || x >= b {
            out.push((x, y, w));
        } else {
            if x < a {
                out.push((x, a, w));
            }
            if y > b {
                out.push((b, y, w));
            }
        }
    }
    out.push((a, b, wid));
    out.sort_unstable();
    *segs = out;
}

/// `segs` cut to `[0, len)`.
pub fn clip(segs: &[(u32, u32, u64)], len: u32) -> Vec<(u32, u32, u64)> {
    segs.iter()
        .filter(|s| s.0 < len)
        .map(|&(a, b, w)| (a, b.min(len), w))
        .collect()
}

/// What the capacitor-backed flush wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackupStats {
    /// Pages programmed (tail buffers and backup records).
    pub pages: u32,
    /// Objects listed in IC_OBJ.
    pub ic_objects: u32,
    /// The flush needed more pages than `osd.backup_flush_pages`: the rest was lost.
    pub over_budget: bool,
}

/// Recorded page contents (record mode), one list per chunk indexed by page offset. A chunk's
/// list is shared between clones of a device (copy on write, [`Arc::make_mut`]): the crash
/// harness clones a device holding a whole trace footprint once per cut and copies one
/// pointer per chunk, then only the chunks the cut's run programs or erases (issue 17).
#[derive(Clone, Debug)]
pub struct Contents {
    ppc: u32,
    chunks: Vec<Option<Arc<Vec<Option<PageContent>>>>>,
}

impl Contents {
    fn new(nchunks: usize, ppc: u32) -> Contents {
        Contents {
            ppc: ppc.max(1),
            chunks: vec![None; nchunks],
        }
    }

    /// What page `ppn` holds, if recorded.
    #[inline]
    pub fn get(&self, ppn: u32) -> Option<&PageContent> {
        let c = (ppn / self.ppc) as usize;
        self.chunks.get(c)?.as_ref()?[(ppn % self.ppc) as usize].as_ref()
    }

    /// Set (or, `None`, clear) what page `ppn` holds.
    fn set(&mut self, ppn: u32, v: Option<PageContent>) {
        let (c, off) = ((ppn / self.ppc) as usize, (ppn % self.ppc) as usize);
        if c >= self.chunks.len() {
            if v.is_none() {
                return;
            }
            self.chunks.resize(c + 1, None);
        }
        let slot = &mut self.chunks[c];
        match slot {
            None if v.is_none() => {}
            None => {
                let mut list = vec![None; self.ppc as usize];
                list[off] = v;
                *slot = Some(Arc::new(list));
            }
            Some(list) => {
                if v.is_none() && list[off].is_none() {
                    return;
                }
                Arc::make_mut(list)[off] = v;
            }
        }
    }
}

/// Flash after power loss: every page's state and OOB, and (record mode) its contents. No
/// DRAM state of the device survives in it.
#[derive(Clone)]
pub struct FlashImage {
    pub page_bytes: u32,
    pub pages_per_chunk: u32,
    pub dies: u32,
    pub virtual_tree: bool,
    pub yaffs: bool,
    pages: Vec<Option<Box<ChunkPages>>>,
    contents: Contents,
    /// Erase count per block (kept on flash by real devices).
    erase_count: Vec<u32>,
}

/// One readable page of a [`FlashImage`].
#[derive(Clone, Copy, Debug)]
pub struct FlashPage<'a> {
    pub ppn: u32,
    pub ptype: usize,
    pub oid: u64,
    pub sn: u64,
    pub csn: u64,
    pub aux: u32,
    pub len: u32,
    pub content: Option<&'a PageContent>,
}

impl FlashImage {
    /// Every programmed, readable page (torn pages and erased pages are skipped), in PPN
    /// order (Algorithm 1's scan).
    pub fn scan(&self) -> impl Iterator<Item = FlashPage<'_>> {
        let ppc = self.pages_per_chunk;
        self.pages
            .iter()
            .enumerate()
            .filter_map(|(c, p)| p.as_deref().map(|p| (c, p)))
            .flat_map(move |(c, p)| {
                let cont = self.contents.chunks.get(c).and_then(|x| x.as_deref());
                (0..ppc as usize).filter_map(move |off| {
                    let content = cont.and_then(|v| v[off].as_ref());
                    p.flash_page(off, c as u32 * ppc + off as u32, content)
                })
            })
    }

    /// (PPN, page type, object id) of every programmed, readable page, in PPN order: the
    /// scan of [`FlashImage::scan`] reading only the OOB fields that pick the pages a pass
    /// needs (then [`FlashImage::page`] reads the rest).
    pub fn scan_types(&self) -> impl Iterator<Item = (u32, usize, u64)> + '_ {
        let ppc = self.pages_per_chunk;
        self.pages
            .iter()
            .enumerate()
            .filter_map(|(c, p)| p.as_deref().map(|p| (c, p)))
            .flat_map(move |(c, p)| {
                (0..ppc as usize).filter_map(move |off| {
                    let st = p.state[off];
                    (st == VALID || st == INVALID).then(|| {
                        (
                            c as u32 * ppc + off as u32,
                            p.ptype[off] as usize,
                            p.oid[off],
                        )
                    })
                })
            })
    }

    /// Page `ppn`, if programmed and readable.
    pub fn page(&self, ppn: u32) -> Option<FlashPage<'_>> {
        let (c, off) = (
            (ppn / self.pages_per_chunk) as usize,
            (ppn % self.pages_per_chunk) as usize,
        );
        let p = self.pages.get(c)?.as_ref()?;
        p.flash_page(off, ppn, self.contents.get(ppn))
    }

    /// Pages programmed or torn (what a full recovery scan reads).
    pub fn programmed_pages(&self) -> u64 {
        self.pages
            .iter()
            .flatten()
            .map(|p| p.state.iter().filter(|&&s| s != FREE).count() as u64)
            .sum()
    }
}

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

const FREE: u8 = 0;
const VALID: u8 = 1;
const INVALID: u8 = 2;
/// A program or erase the power cut interrupted: unreadable.
const TORN: u8 = 3;
/// Page type of the capacitor-backed flush.
pub const BACKUP: usize = 3;

const C_FREE: u8 = 0;
const C_OPEN: u8 = 1;
const C_FULL: u8 = 2;

/// Per-page state of one chunk, allocated when the chunk is first opened. `state`, `ptype`,
/// `oid`, `sn`, `aux`, `len` are what flash holds (the page and its OOB, F34; `state` FREE =
/// erased); `back` is the device's DRAM reverse map (data: object slot; index: node id;
/// onode: onode-page record).
#[derive(Clone, Debug)]
struct ChunkPages {
    state: Vec<u8>,
    ptype: Vec<u8>,
    oid: Vec<u64>,
    sn: Vec<u64>,
    /// SN of the content (kept by GC moves: the spec's `data_sn`, for every page type).
    csn: Vec<u64>,
    /// Data: page index in the object; index: VA (or node id without the virtual tree);
    /// onode: onodes in the page.
    aux: Vec<u32>,
    /// Data: valid bytes.
    len: Vec<u32>,
    back: Vec<u32>,
}

impl ChunkPages {
    fn new(n: usize) -> ChunkPages {
        ChunkPages {
            state: vec![FREE; n],
            ptype: vec![0; n],
            oid: vec![0; n],
            sn: vec![0; n],
            csn: vec![0; n],
            aux: vec![0; n],
            len: vec![0; n],
            back: vec![NONE; n],
        }
    }
}

/// One programmed page's flash state, OOB fields and reverse map: the fields of
/// [`ChunkPages`] at one offset except the program SN (read only by the recovery scan of a
/// [`FlashImage`], which never holds a sparse chunk).
#[derive(Clone, Copy, Debug)]
struct PageRec {
    oid: u64,
    csn: u64,
    aux: u32,
    len: u32,
    back: u32,
    ptype: u8,
    state: u8,
}

impl ChunkPages {
    /// Page `off` (PPN `ppn`) as a readable [`FlashPage`]: `None` if erased or torn.
    #[inline]
    fn flash_page<'a>(
        &self,
        off: usize,
        ppn: u32,
        content: Option<&'a PageContent>,
    ) -> Option<FlashPage<'a>> {
        let st = self.state[off];
        if st != VALID && st != INVALID {
            return None;
        }
        Some(FlashPage {
            ppn,
            ptype: self.ptype[off] as usize,
            oid: self.oid[off],
            sn: self.sn[off],
            csn: self.csn[off],
            aux: self.aux[off],
            len: self.len[off],
            content,
        })
    }

    #[inline]
    fn rec(&self, off: usize) -> PageRec {
        PageRec {
            oid: self.oid[off],
            csn: self.csn[off],
            aux: self.aux[off],
            len: self.len[off],
            back: self.back[off],
            ptype: self.ptype[off],
            state: self.state[off],
        }
    }
}

/// The per-page state of a full chunk in a performance run (no recorded contents), kept for
/// its valid pages only: nothing reads an invalid page of such a chunk again (no recovery
/// scan runs; GC moves valid pages only), so memory follows the live data rather than the
/// pages ever written (issue 17: memory flat in trace length). A bitmap says which pages are
/// valid (an invalidation is one bit, as in the dense form); rows, sorted by offset, hold the
/// valid pages' fields, and a row whose page was invalidated since the last compaction stays
/// until more than 1/8 of the rows are such. A dense chunk becomes sparse once its valid
/// pages are at most 7/8 of it (a row takes 36 B, a dense page 38 B), so a full chunk costs
/// at most ≈ 43 B per valid page plus 1 bit per page. Chunks holding a shrink header stay
/// dense (GC copies superseded shrink headers); the crash harness records contents and never
/// makes a chunk sparse.
#[derive(Clone, Debug, Default)]
struct SparsePages {
    valid: Vec<u64>,
    offs: Vec<u32>,
    recs: Vec<PageRec>,
    dead: u32,
}

impl SparsePages {
    /// The valid pages of a dense full chunk.
    fn from_dense(p: &ChunkPages) -> SparsePages {
        let n = p.state.iter().filter(|&&st| st == VALID).count();
        let mut s = SparsePages {
            valid: vec![0; p.state.len().div_ceil(64)],
            offs: Vec::with_capacity(n),
            recs: Vec::with_capacity(n),
            dead: 0,
        };
        for off in 0..p.state.len() {
            if p.state[off] == VALID {
                s.valid[off / 64] |= 1 << (off % 64);
                s.offs.push(off as u32);
                s.recs.push(p.rec(off));
            }
        }
        s
    }

    #[inline]
    fn is_valid(&self, off: usize) -> bool {
        self.valid[off / 64] & (1 << (off % 64)) != 0
    }

    /// The page at `off`: its row, or an invalid page without OOB fields.
    #[inline]
    fn rec(&self, off: usize) -> PageRec {
        if self.is_valid(off) {
            if let Ok(i) = self.offs.binary_search(&(off as u32)) {
                return self.recs[i];
            }
        }
        PageRec {
            oid: 0,
            csn: 0,
            aux: 0,
            len: 0,
            back: NONE,
            ptype: 0,
            state: INVALID,
        }
    }

    /// Invalidate the page at `off`; returns whether it was valid.
    #[inline]
    fn invalidate(&mut self, off: usize) -> bool {
        if !self.is_valid(off) {
            return false;
        }
        self.valid[off / 64] &= !(1 << (off % 64));
        self.dead += 1;
        if self.dead as usize * 8 > self.recs.len() {
            self.compact();
        }
        true
    }

    /// Drop the rows of invalidated pages.
    fn compact(&mut self) {
        let mut k = 0;
        for j in 0..self.recs.len() {
            if self.is_valid(self.offs[j] as usize) {
                self.recs[k] = self.recs[j];
                self.offs[k] = self.offs[j];
                k += 1;
            }
        }
        self.recs.truncate(k);
        self.offs.truncate(k);
        if self.recs.capacity() > k + k / 8 {
            self.recs.shrink_to_fit();
            self.offs.shrink_to_fit();
        }
        self.dead = 0;
    }
}

#[derive(Clone, Copy, Debug)]
struct ChunkMeta {
    state: u8,
    stream: u8,
    valid: u32,
    wp: u32,
    /// Superseded index pages in it that an object's last committed onode may still reach
    /// (see [`Device::pin`]): GC does not take the chunk while any is left.
    pins: u32,
    /// YAFFS2-like: it holds a shrink header (a truncate's object header), valid or not
    /// (YAFFS2's `has_shrink_hdr`); see [`Device::carry_shrink_headers`].
    shrink: bool,
    /// SN of its first page programmed since its last erase ([`Device::chunk_sn`]).
    first_sn: u64,
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
    open: Vec<[u32; 3]>,
    rr: [u32; 3],
    /// Erase count per block.
    pub erase_count: Vec<u32>,
    sn: u64,
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
        o.validate(cfg)?;
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
            open: vec![[NONE; 3]; dies as usize],
            rr: [0; 3],
            erase_count: vec![0; (dies * d.blocks_per_plane) as usize],
            sn: 0,
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

    /// Power is lost (after a [`OsdError::PowerCut`], or between commands): the
    /// capacitor-backed flush (§4.4.5.1) programs, within `osd.backup_flush_pages`, the tail
    /// buffers of new data (spec §5 \[N\]) and then IC_OBJ = ⟨oid, LCS⟩ of every object with
    /// metadata only in DRAM, with their dirty onodes. `capacitor = false` writes nothing
    /// (the negative control).
    pub fn power_loss(&mut self, capacitor: bool) -> BackupStats {
        self.cut_at = u64::MAX;
        self.cur.clear();
        self.gc_reads.clear();
        self.gc_progs.clear();
        self.gc_erases.clear();
        self.next_content = None;
        self.next_csn = 0;
        let mut st = BackupStats::default();
        if !capacitor {
            return st;
        }
        // No GC on back-up power: the flush goes to the open chunks' free pages.
        self.in_gc = true;
        let budget = self.o.backup_flush_pages;
        let ic: Vec<u32> = (0..self.objs.len() as u32)
            .filter(|&s| {
                let ob = &self.objs[s as usize];
                // a removed object whose tombstone is not on flash yet may come back
                (ob.live || ob.onode_ppn == NONE)
                    && (ob.onode_dirty
                        || ob.uncommitted
                        || ob.tail_page != u64::MAX
                        || ob.dirty.iter().any(|&id| {
                            let n = &self.nodes.nodes[id as usize];
                            !n.free && n.dirty > 0 && n.obj == s
                        }))
            })
            .collect();
        st.ic_objects = ic.len() as u32;
        for &s in &ic {
            if self.objs[s as usize].tail_page == u64::MAX {
                continue;
            }
            if st.pages >= budget {
                st.over_budget = true;
                break;
            }
            let ob = &mut self.objs[s as usize];
            let (page, fill, oid) = (ob.tail_page, ob.tail_fill, ob.oid);
            let segs = std::mem::take(&mut ob.tail_segs);
            ob.tail_page = u64::MAX;
            let die = self.rr[DATA] % self.dies;
            self.rr[DATA] = (die + 1) % self.dies;
            self.next_content = self.contents.is_some().then_some(PageContent::Data(segs));
            if self.program_data_on(s, page, fill, die, oid).is_err() {
                st.over_budget = true;
                break;
            }
            st.pages += 1;
        }
        // Backup records, packed: 16 B per IC_OBJ entry, one onode each per dirty onode.
        let per_page = self.page as usize;
        let mut recs: Vec<(usize, u32)> = Vec::new();
        // Every IC_OBJ object's DRAM onode goes too: its attributes are newer than its last
        // committed onode whether it is dirty in the cache or queued for writing.
        for &s in &ic {
            recs.push((16, s));
            recs.push((self.o.onode_bytes as usize, s | 0x8000_0000));
        }
        let mut epoch = 0;
        let mut k = 0;
        while k < recs.len() {
            if st.pages >= budget {
                st.over_budget = true;
                break;
            }
            let mut used = 0;
            let mut ic_list = Vec::new();
            let mut onodes = Vec::new();
            let csn = self.sn + 1;
            if epoch == 0 {
                epoch = csn;
            }
            while k < recs.len() && used + recs[k].0 <= per_page {
                let (b, x) = recs[k];
                used += b;
                let s = x & 0x7FFF_FFFF;
                if x & 0x8000_0000 != 0 {
                    onodes.push(self.onode_rec(s, csn, false));
                } else {
                    let ob = &self.objs[s as usize];
                    ic_list.push((ob.oid, ob.lcs));
                }
                k += 1;
            }
            let die = self.rr[ONODE] % self.dies;
            self.rr[ONODE] = (die + 1) % self.dies;
            self.next_content = Some(PageContent::Backup {
                epoch,
                ic: ic_list,
                onodes,
            });
            if self
                .program(BACKUP, die, Src::Recovery, 0, 0, used as u32, NONE)
                .is_err()
            {
                st.over_budget = true;
                break;
            }
            st.pages += 1;
        }
        self.in_gc = false;
        st
    }

    /// Drop every DRAM structure: what is left is flash.
    pub fn into_image(self) -> FlashImage {
        // Sparse chunks arise only without recorded contents, which an image needs.
        debug_assert!(self.sparse.iter().all(Option::is_none));
        FlashImage {
            page_bytes: self.page,
            pages_per_chunk: self.ppc,
            dies: self.dies,
            virtual_tree: self.o.virtual_tree,
            yaffs: self.yaffs,
            pages: self.pages,
            contents: self.contents.unwrap_or_else(|| Contents::new(0, self.ppc)),
            erase_count: self.erase_count,
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

    // ------------------------------------------------------------------ inspection

    /// Height of `oid`'s B+ tree (0: no tree, its extents are inline in the onode).
    pub fn tree_height(&self, oid: ObjectId) -> u32 {
        match self.index.get(&oid) {
            Some(&s) if self.objs[s as usize].root != NONE => {
                self.nodes.height(self.objs[s as usize].root)
            }
            _ => 0,
        }
    }

    /// Index nodes of `oid`'s B+ tree.
    pub fn index_nodes(&self, oid: ObjectId) -> usize {
        match self.index.get(&oid) {
            Some(&s) if self.objs[s as usize].root != NONE => {
                let mut v = Vec::new();
                self.nodes.all_nodes(self.objs[s as usize].root, &mut v);
                v.len()
            }
            _ => 0,
        }
    }

    /// Where `oid`'s onode is on flash: (page, slot).
    pub fn onode_location(&self, oid: ObjectId) -> Option<(u32, u32)> {
        let &s = self.index.get(&oid)?;
        let ob = &self.objs[s as usize];
        (ob.onode_ppn != NONE).then_some((ob.onode_ppn, ob.onode_idx))
    }

    /// The byte-level GC table: (page, invalid bytes, entries) of every page in it, by page.
    pub fn gc_table(&self) -> Vec<(u32, u32, u32)> {
        let mut v: Vec<_> = self.gct.iter().map(|(&p, &(b, e))| (p, b, e)).collect();
        v.sort_unstable();
        v
    }

    /// Entries in the byte-level GC table.
    pub fn gc_table_entries(&self) -> u64 {
        self.gct_entries
    }

    /// Whether page `ppn` is valid.
    pub fn page_valid(&self, ppn: u32) -> bool {
        let (c, off) = self.split(ppn);
        match (self.pages[c].as_deref(), self.sparse[c].as_deref()) {
            (Some(p), _) => p.state[off] == VALID,
            (None, Some(sp)) => sp.is_valid(off),
            (None, None) => false,
        }
    }

    /// Page `off` of chunk `c` (dense or [`SparsePages`]); `None` for a chunk without
    /// per-page state (never opened, or dropped with nothing valid).
    #[inline]
    fn page_at(&self, c: usize, off: usize) -> Option<PageRec> {
        if let Some(p) = self.pages[c].as_deref() {
            return Some(p.rec(off));
        }
        self.sparse[c].as_deref().map(|s| s.rec(off))
    }

    /// Valid pages on the device (the live data, metadata included).
    pub fn valid_pages(&self) -> u64 {
        self.chunks.iter().map(|m| m.valid as u64).sum()
    }

    /// Bytes of per-page state held (dense chunks at 38 B per page, sparse rows at 36 B plus
    /// their validity bitmaps):
    /// what the sparse state of full chunks keeps proportional to [`Device::valid_pages`].
    pub fn page_state_bytes(&self) -> u64 {
        let dense = self.pages.iter().flatten().count() as u64 * self.ppc as u64 * 38;
        let sparse: u64 = self
            .sparse
            .iter()
            .flatten()
            .map(|s| s.recs.capacity() as u64 * 36 + s.valid.len() as u64 * 8)
            .sum();
        dense + sparse
    }

    /// Objects with state newer than their last commit (what IC_OBJ would list at a power
    /// loss), and chunks GC may not take because they hold superseded index pages an
    /// uncommitted object's last consistent state may still reach. Without
    /// the diff cache both are 0 between commands. Tests and diagnostics.
    pub fn uncommitted(&self) -> (u64, usize) {
        let pinned = self.chunks.iter().filter(|m| m.pins > 0).count();
        (self.uncommitted_objs, pinned)
    }

    /// Full chunks kept sparse, and the rows they hold (tests and diagnostics).
    pub fn sparse_chunks(&self) -> (usize, usize) {
        self.sparse
            .iter()
            .flatten()
            .fold((0, 0), |(n, r), s| (n + 1, r + s.recs.len()))
    }

    /// Data bytes of `oid` mapped to flash: (page index, PPN, valid length) per page.
    pub fn data_map(&mut self, oid: ObjectId) -> Vec<(u64, u32, u32)> {
        let Some(&s) = self.index.get(&oid) else {
            return Vec::new();
        };
        self.collect_entries(s);
        self.entries_scratch
            .iter()
            .map(|&(k, v)| {
                let (p, l) = leaf_parts(v);
                (k, p, l)
            })
            .collect()
    }

    /// Current diff-cache size, bytes.
    pub fn cache_bytes(&self) -> u64 {
        self.nodes.dirty_bytes
            + self.clean_pages * self.page as u64
            + self.dirty_onodes * self.o.onode_bytes as u64
    }

    /// Current page-table size, bytes.
    pub fn page_table_bytes(&self) -> u64 {
        let tables = self.pt_dir.iter().filter(|t| t.is_some()).count() as u64;
        self.pt_dir.len() as u64 * 8 + tables * 4096
    }

    /// Check the space accounting: each chunk's valid count equals its valid pages, and
    /// every live object's data, index and onode pages are valid (debug aid and test).
    pub fn check(&mut self) -> Result<(), String> {
        for (c, m) in self.chunks.iter().enumerate() {
            let n = match (self.pages[c].as_ref(), self.sparse[c].as_ref()) {
                (Some(p), _) => p.state.iter().filter(|&&s| s == VALID).count(),
                (None, Some(sp)) => sp.valid.iter().map(|w| w.count_ones() as usize).sum(),
                (None, None) => 0,
            };
            if n as u32 != m.valid {
                return Err(format!("chunk {c}: valid {} but {n} valid pages", m.valid));
            }
        }
        for s in 0..self.objs.len() as u32 {
            if !self.objs[s as usize].live {
                continue;
            }
            let ob = &self.objs[s as usize];
            if ob.onode_ppn != NONE && !self.page_valid(ob.onode_ppn) {
                return Err(format!("object {}: onode page invalid", ob.oid));
            }
            if ob.root != NONE && !self.yaffs {
                let mut all = Vec::new();
                self.nodes.all_nodes(ob.root, &mut all);
                for id in all {
                    let p = self.nodes.nodes[id as usize].ppn;
                    if p != NONE && !self.page_valid(p) {
                        return Err(format!("object {}: index node {id} page invalid", ob.oid));
                    }
                }
            }
            self.collect_entries(s);
            for &(k, v) in &self.entries_scratch {
                let (p, _) = leaf_parts(v);
                if !self.page_valid(p) {
                    return Err(format!(
                        "object {}: data page {k} at {p} invalid",
                        self.objs[s as usize].oid
                    ));
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ flash space

    #[inline]
    fn split(&self, ppn: u32) -> (usize, usize) {
        ((ppn / self.ppc) as usize, (ppn % self.ppc) as usize)
    }

    #[inline]
    fn die_of_chunk(&self, c: u32) -> u32 {
        c / self.cpd
    }

    fn invalidate(&mut self, ppn: u32) {
        if ppn == NONE {
            return;
        }
        let (c, off) = self.split(ppn);
        let was_valid = if let Some(p) = self.pages[c].as_mut() {
            let v = p.state[off] == VALID;
            if v {
                p.state[off] = INVALID;
            }
            v
        } else if let Some(sp) = self.sparse[c].as_mut() {
            sp.invalidate(off)
        } else {
            false
        };
        if !was_valid {
            return;
        }
        self.chunks[c].valid -= 1;
        self.trim_page_state(c);
    }

    /// Without recorded contents (a performance run; the crash harness reads every page
    /// back) nothing reads an invalid page of a full chunk again, so memory follows the live
    /// data, not the pages ever written (issue 17): a full chunk with nothing valid left
    /// drops its per-page state (not during GC, which walks its victim, nor with pins), and
    /// one with at most 7/8 valid keeps only its valid pages ([`SparsePages`]). Chunks holding
    /// a shrink header stay whole (GC reads their superseded headers). Called when a page of
    /// chunk `c` is invalidated and when `c` becomes full.
    fn trim_page_state(&mut self, c: usize) {
        let m = &self.chunks[c];
        if m.state != C_FULL || m.shrink || self.contents.is_some() {
            return;
        }
        if m.valid == 0 && m.pins == 0 && !self.in_gc {
            self.pages[c] = None;
            self.sparse[c] = None;
        } else if m.valid as u64 * 8 <= self.ppc as u64 * 7 {
            if let Some(p) = self.pages[c].take() {
                self.sparse[c] = Some(Box::new(SparsePages::from_dense(&p)));
            }
        }
    }

    /// The die the next page of `ty` goes to (round-robin over dies, §4.6.2), after GC made
    /// room on it.
    fn next_die(&mut self, ty: usize) -> Result<u32, OsdError> {
        let stream = if self.separate { ty } else { 0 };
        let die = self.rr[stream];
        self.rr[stream] = (die + 1) % self.dies;
        if !self.in_gc {
            let t = self.o.gc_clean_chunks as usize;
            while self.free[die as usize].len() < t {
                let before = self.free[die as usize].len();
                if !self.gc(die)? || self.free[die as usize].len() <= before {
                    break;
                }
            }
        }
        Ok(die)
    }

    /// Program a page of type `ty` on `die`; returns its PPN.
    #[allow(clippy::too_many_arguments)]
    fn program(
        &mut self,
        ty: usize,
        die: u32,
        src: Src,
        oid: u64,
        aux: u32,
        len: u32,
        back: u32,
    ) -> Result<u32, OsdError> {
        let stream = if !self.separate {
            0
        } else if ty == BACKUP {
            ONODE
        } else {
            ty
        };
        let mut c = self.open[die as usize][stream];
        if c == NONE || self.chunks[c as usize].wp == self.ppc {
            if c != NONE {
                self.chunks[c as usize].state = C_FULL;
                self.trim_page_state(c as usize);
                // A full chunk is no longer the stream's open chunk: GC may erase it, and it
                // must not be written again as if still open (issue 17: with no clean chunk
                // left, `open` kept pointing at it, GC erased it, and a later program wrote
                // into the erased chunk, which the free list also held).
                self.open[die as usize][stream] = NONE;
            }
            if let Some(f) = self.free[die as usize].pop() {
                c = f;
                let m = &mut self.chunks[c as usize];
                m.state = C_OPEN;
                m.stream = stream as u8;
                m.wp = 0;
                m.valid = 0;
                debug_assert!(self.sparse[c as usize].is_none());
                if self.pages[c as usize].is_none() {
                    self.pages[c as usize] = Some(Box::new(ChunkPages::new(self.ppc as usize)));
                }
                self.open[die as usize][stream] = c;
            } else {
                // No clean chunk left: a GC move (or the capacitor flush) goes to another
                // stream's open chunk on the die rather than fail (streams separate page
                // types for GC efficiency; nothing depends on it).
                let chunks = &self.chunks;
                let ppc = self.ppc;
                c = self.open[die as usize]
                    .iter()
                    .copied()
                    .find(|&o| {
                        self.in_gc
                            && o != NONE
                            && chunks[o as usize].state == C_OPEN
                            && chunks[o as usize].wp < ppc
                    })
                    .ok_or(OsdError::OutOfSpace { die })?;
            }
        }
        let m = &mut self.chunks[c as usize];
        let off = m.wp as usize;
        m.wp += 1;
        let op_index = self.flash_ops;
        self.flash_ops += 1;
        if let Some(log) = self.op_log.as_mut() {
            log.push((ty as u8) * 8 + src as u8);
        }
        if op_index == self.cut_at {
            let p = self.pages[c as usize]
                .as_mut()
                .expect("opened chunk has pages");
            p.state[off] = TORN;
            self.next_content = None;
            return Err(OsdError::PowerCut { op: op_index });
        }
        let m = &mut self.chunks[c as usize];
        m.valid += 1;
        self.sn += 1;
        let csn = if self.next_csn > 0 {
            std::mem::take(&mut self.next_csn)
        } else {
            self.sn
        };
        let p = self.pages[c as usize]
            .as_mut()
            .expect("opened chunk has pages");
        p.state[off] = VALID;
        p.csn[off] = csn;
        p.ptype[off] = ty as u8;
        p.oid[off] = oid;
        p.sn[off] = self.sn;
        if off == 0 {
            self.chunks[c as usize].first_sn = self.sn;
        }
        p.aux[off] = aux;
        p.len[off] = len;
        p.back[off] = back;
        if ty < 3 {
            self.counters.writes[ty][src as usize] += 1;
        }
        let ppn = c * self.ppc + off as u32;
        if let Some(map) = self.contents.as_mut() {
            map.set(ppn, self.next_content.take());
        }
        let op = FlashOp {
            kind: OpKind::Program,
            ppn,
            die,
            src,
        };
        if self.in_gc {
            self.gc_progs.push(op);
        } else {
            self.cur.push(op);
        }
        Ok(ppn)
    }

    fn read(&mut self, ty: usize, ppn: u32, src: Src) {
        self.counters.reads[ty][src as usize] += 1;
        let die = self.die_of_chunk(ppn / self.ppc);
        let op = FlashOp {
            kind: OpKind::Read,
            ppn,
            die,
            src,
        };
        if self.in_gc {
            self.gc_reads.push(op);
        } else {
            self.cur.push(op);
        }
    }

    fn close_stage(&mut self) {
        if !self.in_gc {
            self.plan.push_stage(&mut self.cur);
        }
    }

    fn content_of(&self, ppn: u32) -> Option<&PageContent> {
        self.contents.as_ref()?.get(ppn)
    }

    fn csn_of(&self, ppn: u32) -> u64 {
        let (c, off) = self.split(ppn);
        self.page_at(c, off).map_or(0, |p| p.csn)
    }

    /// Greedy chunk GC on `die` (§4.5.4.1): the full chunk with the fewest valid pages; its
    /// valid pages move to the die's open chunk of their type (only the valid bytes of an
    /// onode page, §4.4.2), then its blocks are erased. Returns whether a chunk was reclaimed.
    fn gc(&mut self, die: u32) -> Result<bool, OsdError> {
        let base = die * self.cpd;
        let mut best: Option<(u32, u32)> = None;
        for c in base..base + self.cpd {
            let m = &self.chunks[c as usize];
            if m.state == C_FULL && m.pins == 0 && best.is_none_or(|(v, _)| m.valid < v) {
                best = Some((m.valid, c));
            }
        }
        let Some((valid, victim)) = best else {
            return Ok(false);
        };
        if valid >= self.ppc {
            return Ok(false);
        }
        self.in_gc = true;
        let r = self.gc_chunk(die, victim);
        self.in_gc = false;
        r?;
        self.counters.gc_chunks += 1;
        // A2: GC stages run before the program that needed the space.
        self.plan.push_stage(&mut self.gc_reads);
        self.plan.push_stage(&mut self.gc_progs);
        self.plan.push_stage(&mut self.gc_erases);
        Ok(true)
    }

    /// SN of the first page programmed in chunk `c` (its age, as YAFFS2's block sequence
    /// number).
    fn chunk_sn(&self, c: u32) -> u64 {
        self.chunks[c as usize].first_sn
    }

    /// The age ([`Device::chunk_sn`]) of the oldest chunk other than `except` holding a
    /// discarded page (YAFFS2's oldest dirty sequence number); `u64::MAX` if none.
    fn oldest_dirty_sn(&self, except: u32) -> u64 {
        let mut o = u64::MAX;
        for (c, m) in self.chunks.iter().enumerate() {
            if c as u32 != except && m.state != C_FREE && m.valid < m.wp {
                o = o.min(self.chunk_sn(c as u32));
            }
        }
        o
    }

    /// YAFFS2-like, before GC erases `victim`: a superseded shrink header in it is still
    /// needed while a chunk older than the truncate it records holds discarded pages (an
    /// older page of the object past the shrunk size may be among them, and a scan would
    /// bring it back). YAFFS2 keeps such a block from GC until it is the oldest dirty one
    /// (`yaffs_block_ok_for_gc`); GC here is per die, where that rule can leave a die with
    /// no victim, so the header is copied instead (content SN and flag kept; the copy is
    /// not valid: no object reads it, only the scan) and dropped once no older discarded
    /// page is left.
    fn carry_shrink_headers(&mut self, die: u32, victim: u32) -> Result<(), OsdError> {
        if !self.chunks[victim as usize].shrink {
            return Ok(());
        }
        let lo = victim * self.ppc;
        let list: Vec<u32> = self.shrink_ppns.range(lo..lo + self.ppc).copied().collect();
        let oldest = self.oldest_dirty_sn(victim);
        for old in list {
            self.shrink_ppns.remove(&old);
            let (c, off) = self.split(old);
            let Some((st, csn, oid, aux, len)) = self
                .page_at(c, off)
                .map(|p| (p.state, p.csn, p.oid, p.aux, p.len))
            else {
                continue;
            };
            if st != INVALID || oldest > csn {
                continue;
            }
            self.read(ONODE, old, Src::Gc);
            self.next_content = self.content_of(old).cloned();
            self.next_csn = csn;
            let new = self.program(ONODE, die, Src::Gc, oid, aux, len, NONE)?;
            self.invalidate(new);
            self.shrink_ppns.insert(new);
            self.chunks[(new / self.ppc) as usize].shrink = true;
            self.shrink_carried += 1;
        }
        Ok(())
    }

    /// The values node `n` holds on flash: a leaf's extent entries; an internal node's
    /// children by VA (virtual tree, `vt`) or by PPN (extent tree).
    fn node_flash_vals(&self, n: &crate::osd::tree::Node, vt: bool) -> Vec<u64> {
        if n.level == 0 {
            return n.vals.clone();
        }
        n.vals
            .iter()
            .map(|&c| {
                let ch = &self.nodes.nodes[c as usize];
                (if vt { ch.va } else { ch.ppn }) as u64
            })
            .collect()
    }

    fn gc_chunk(&mut self, die: u32, victim: u32) -> Result<(), OsdError> {
        let base_ppn = victim * self.ppc;
        // Objects whose data or index pages this GC moves (`touched` cannot say: during a
        // command's final flush it has been handed over already).
        let mut moved_objs: Vec<u32> = Vec::new();
        for off in 0..self.ppc as usize {
            // A chunk with nothing valid may have dropped its per-page state already.
            let Some(p) = self.page_at(victim as usize, off) else {
                break;
            };
            let (state, ty, oid, aux, len, back) =
                (p.state, p.ptype as usize, p.oid, p.aux, p.len, p.back);
            if state != VALID {
                continue;
            }
            // With the virtual tree and the diff cache the moves are committed lazily, so each
            // one can add an object to the back-up set: commit those moved so far when it
            // would outgrow the capacitor's budget (issue 17, [`Device::bound_backup`]).
            if self.cache_on
                && self.o.virtual_tree
                && !moved_objs.is_empty()
                && self.backup_pages_bound() > self.backup_limit()
            {
                self.commit_moved(&mut moved_objs, true)?;
            }
            let old = base_ppn + off as u32;
            self.read(ty.min(ONODE), old, Src::Gc);
            if ty != ONODE {
                self.next_content = self.content_of(old).cloned();
                self.next_csn = self.csn_of(old);
            }
            match ty {
                BACKUP if self.recovering => {
                    // Recovery is not finished: the capacitor flush it works from must
                    // survive a cut, so GC copies it.
                    let new = self.program(BACKUP, die, Src::Recovery, 0, 0, len, NONE)?;
                    let _ = new;
                    self.invalidate(old);
                }
                BACKUP => {
                    // An old capacitor flush: superseded once recovery finished; drop it.
                    self.next_content = None;
                    self.next_csn = 0;
                    self.invalidate(old);
                }
                DATA => {
                    // The mapped length (a truncate may have cut the page since it was written).
                    let len = self
                        .map_get(back, aux as u64)
                        .map_or(len, |v| leaf_parts(v).1);
                    let new = self.program(DATA, die, Src::Gc, oid, aux, len, back)?;
                    self.invalidate(old);
                    self.map_set(back, aux as u64, leaf_val(new, len), false);
                    // The leaf may be dirty already (an outer flush owns it): list it anyway,
                    // so the commit before this erase writes it.
                    let root = self.objs[back as usize].root;
                    if root != NONE && !self.yaffs {
                        let mut path = std::mem::take(&mut self.path);
                        let leaf = self.nodes.find_leaf(root, aux as u64, &mut path);
                        self.path = path;
                        self.objs[back as usize].dirty.push(leaf);
                    }
                    moved_objs.push(back);
                    self.touch_obj(back, false);
                }
                INDEX => {
                    let id = back;
                    let new = self.program(INDEX, die, Src::Gc, oid, aux, 0, id)?;
                    self.invalidate(old);
                    let n = &mut self.nodes.nodes[id as usize];
                    n.ppn = new;
                    let (va, parent, obj) = (n.va, n.parent, n.obj);
                    if self.o.virtual_tree {
                        self.pt_set(va, new);
                    } else if parent != NONE {
                        self.nodes.touch(parent, 1);
                        self.drain_dirty();
                        self.objs[obj as usize].dirty.push(parent);
                    } else {
                        self.set_onode_dirty(obj, true);
                    }
                    moved_objs.push(obj);
                    self.touch_obj(obj, false);
                }
                _ => {
                    // Only the valid onodes move (for OBFS every onode of a valid page is).
                    let rec = back;
                    let mut slots = std::mem::take(&mut self.opages[rec as usize].slots);
                    let mut k = 0;
                    while k < slots.len() {
                        let s = slots[k];
                        let ob = &self.objs[s as usize];
                        if !(ob.onode_ppn == old && ob.onode_idx == k as u32) {
                            slots[k] = NONE;
                        }
                        k += 1;
                    }
                    slots.retain(|&s| s != NONE);
                    self.gct_drop(old);
                    if self.contents.is_some() {
                        let recs = self.onode_recs_from(old, &slots);
                        self.next_content = Some(PageContent::Onode(recs));
                    }
                    let nrec = self.alloc_opage();
                    let n = slots.len() as u32;
                    let first_oid = slots.first().map_or(oid, |&s| self.objs[s as usize].oid);
                    let new = self.program(
                        ONODE,
                        die,
                        Src::Gc,
                        first_oid,
                        n,
                        n * self.o.onode_bytes,
                        nrec,
                    )?;
                    for (i, &s) in slots.iter().enumerate() {
                        let ob = &mut self.objs[s as usize];
                        ob.onode_ppn = new;
                        ob.onode_idx = i as u32;
                    }
                    if self.shrink_ppns.remove(&old) {
                        self.shrink_ppns.insert(new);
                        self.chunks[(new / self.ppc) as usize].shrink = true;
                    }
                    self.opages[nrec as usize].live = n;
                    self.opages[nrec as usize].slots.extend_from_slice(&slots);
                    slots.clear();
                    self.opages[rec as usize].slots = slots;
                    self.free_opage(rec);
                    self.invalidate(old);
                }
            }
        }
        // The moved pages' new addresses must be on flash before their old copies are erased:
        // except with the virtual tree and the diff cache (the page table, the OOB and
        // recovery's data re-apply cover them, §4.4.5), commit the metadata of everything
        // the moves touched first (A2's "goto handle_data_queue").
        // With them, the moved objects stay uncommitted: when that would take the back-up set
        // over the capacitor's budget ([`Device::bound_backup`], issue 17), commit them too.
        if moved_objs.is_empty() {
            // Nothing reachable through an index or onode moved: nothing to commit (the
            // command's own queued onodes wait for its end).
        } else if self.yaffs {
            self.write_pending_onodes()?;
        } else if !(self.cache_on && self.o.virtual_tree)
            || self.backup_pages_bound() > self.backup_limit()
        {
            let dmm = self.cache_on && self.o.virtual_tree;
            self.commit_moved(&mut moved_objs, dmm)?;
        }
        if self.yaffs {
            self.carry_shrink_headers(die, victim)?;
        }
        // Erase the victim's blocks.
        for b in 0..self.chunk_blocks {
            let first = base_ppn + b * self.ppb;
            let op_index = self.flash_ops;
            self.flash_ops += 1;
            if let Some(log) = self.op_log.as_mut() {
                log.push(255);
            }
            if op_index == self.cut_at {
                if let Some(p) = self.pages[victim as usize].as_mut() {
                    let a = (b * self.ppb) as usize;
                    p.state[a..a + self.ppb as usize].fill(TORN);
                }
                return Err(OsdError::PowerCut { op: op_index });
            }
            if let Some(map) = self.contents.as_mut() {
                for q in first..first + self.ppb {
                    map.set(q, None);
                }
            }
            if let Some(p) = self.pages[victim as usize].as_mut() {
                let a = (b * self.ppb) as usize;
                p.state[a..a + self.ppb as usize].fill(FREE);
            }
            self.gc_erases.push(FlashOp {
                kind: OpKind::Erase,
                ppn: first,
                die,
                src: Src::Gc,
            });
            let blk = (victim * self.chunk_blocks + b) as usize;
            self.erase_count[blk] += 1;
            self.counters.erases += 1;
        }
        if let Some(p) = self.pages[victim as usize].as_mut() {
            p.state.fill(FREE);
        }
        self.sparse[victim as usize] = None;
        let m = &mut self.chunks[victim as usize];
        m.state = C_FREE;
        m.valid = 0;
        m.wp = 0;
        m.shrink = false;
        if self.yaffs {
            let lo = victim * self.ppc;
            let gone: Vec<u32> = self.shrink_ppns.range(lo..lo + self.ppc).copied().collect();
            for q in gone {
                self.shrink_ppns.remove(&q);
            }
        }
        self.free[die as usize].push(victim);
        Ok(())
    }

    /// Commit the metadata (index, then onode) of the live objects in `moved_objs` whose
    /// pages GC moved; empties the list. `all_onodes`: also write the onode of each that is
    /// still uncommitted (the virtual tree's index writes leave the onode clean, yet the
    /// object belongs to IC_OBJ until an onode of it is written).
    fn commit_moved(
        &mut self,
        moved_objs: &mut Vec<u32>,
        all_onodes: bool,
    ) -> Result<(), OsdError> {
        moved_objs.sort_unstable();
        moved_objs.dedup();
        let objs: Vec<u32> = moved_objs
            .iter()
            .copied()
            .filter(|&s| {
                let ob = &self.objs[s as usize];
                ob.live && (ob.onode_dirty || !ob.dirty.is_empty())
            })
            .collect();
        moved_objs.clear();
        // Commit a whole tree: an outer flush that this GC interrupted may hold some of the
        // object's dirty nodes in its buckets (not in `dirty`); the onode written here must
        // not reach nodes that are not on flash yet (a later cut would recover a torn tree).
        let mut all = std::mem::take(&mut self.nodes_scratch);
        for &s in &objs {
            let root = self.objs[s as usize].root;
            if root == NONE || self.yaffs {
                continue;
            }
            self.nodes.all_nodes(root, &mut all);
            for &id in &all {
                if self.nodes.nodes[id as usize].dirty > 0 {
                    self.objs[s as usize].dirty.push(id);
                }
            }
        }
        all.clear();
        self.nodes_scratch = all;
        self.flush_objects(&objs, |_| Src::Gc)?;
        if all_onodes {
            for &s in &objs {
                if self.objs[s as usize].uncommitted {
                    self.objs[s as usize].commit_req = true;
                    self.pending.push((s, Src::Gc, false));
                }
            }
        }
        self.write_pending_onodes()
    }

    /// The flash versions of the onodes of `slots` held in onode page `ppn`.
    fn onode_recs_from(&self, ppn: u32, slots: &[u32]) -> Vec<OnodeRec> {
        let Some(PageContent::Onode(recs)) = self.content_of(ppn) else {
            return Vec::new();
        };
        slots
            .iter()
            .filter_map(|&s| {
                let oid = self.objs[s as usize].oid;
                // a removed object's record there is its tombstone
                let tomb = !self.objs[s as usize].live;
                recs.iter()
                    .find(|r| r.oid == oid && r.tomb == tomb)
                    .copied()
            })
            .collect()
    }

    /// The DRAM onode of `s` as it would be written now.
    fn onode_rec(&self, s: u32, csn: u64, tomb: bool) -> OnodeRec {
        let ob = &self.objs[s as usize];
        let root = if ob.root == NONE || self.yaffs {
            NONE
        } else {
            let n = &self.nodes.nodes[ob.root as usize];
            if self.o.virtual_tree {
                n.va
            } else {
                n.ppn
            }
        };
        OnodeRec {
            oid: ob.oid,
            csn,
            size: ob.size,
            root,
            n_inline: ob.n_inline,
            inline: ob.inline,
            tomb,
            shrink: self.yaffs && !tomb && ob.shrink_pending,
        }
    }

    // ------------------------------------------------------------------ page table

    fn alloc_va(&mut self) -> Result<u32, OsdError> {
        let va = if let Some(v) = self.va_free.pop() {
            v
        } else {
            if self.va_next >= self.o.page_table_max_vas {
                return Err(OsdError::PageTableFull {
                    max: self.o.page_table_max_vas,
                });
            }
            self.va_next += 1;
            self.va_next - 1
        };
        self.va_live += 1;
        Ok(va)
    }

    fn pt_set(&mut self, va: u32, ppn: u32) {
        if va == NONE {
            return;
        }
        let (hi, lo) = ((va >> 10) as usize, (va & 1023) as usize);
        if self.pt_dir.len() <= hi {
            self.pt_dir.resize(hi + 1, None);
        }
        let t = self.pt_dir[hi].get_or_insert_with(|| vec![NONE; 1024].into_boxed_slice());
        t[lo] = ppn;
    }

    fn free_va(&mut self, va: u32) {
        if va == NONE {
            return;
        }
        self.pt_set(va, NONE);
        self.va_free.push(va);
        self.va_live -= 1;
    }

    /// The page-table entry of `va`.
    pub fn pt_get(&self, va: u32) -> u32 {
        let (hi, lo) = ((va >> 10) as usize, (va & 1023) as usize);
        self.pt_dir
            .get(hi)
            .and_then(|t| t.as_ref())
            .map_or(NONE, |t| t[lo])
    }

    // ------------------------------------------------------------------ onode pages, MLGC

    fn alloc_opage(&mut self) -> u32 {
        if let Some(r) = self.opages_free.pop() {
            r
        } else {
            self.opages.push(OPage::default());
            (self.opages.len() - 1) as u32
        }
    }

    fn free_opage(&mut self, r: u32) {
        let p = &mut self.opages[r as usize];
        p.slots.clear();
        p.live = 0;
        self.opages_free.push(r);
    }

    fn rec_of(&self, ppn: u32) -> u32 {
        let (c, off) = self.split(ppn);
        match (self.pages[c].as_deref(), self.sparse[c].as_deref()) {
            (Some(p), _) => p.back[off],
            (None, Some(sp)) => sp.rec(off).back,
            (None, None) => NONE,
        }
    }

    fn gct_drop(&mut self, ppn: u32) {
        if let Some((bytes, n)) = self.gct.remove(&ppn) {
            self.gct_order.remove(&(bytes, ppn));
            self.gct_entries -= n as u64;
        }
    }

    /// The onode of `s` leaves its page (a newer one is being written, or the object is
    /// removed). OBFS: the page's other valid onodes migrate now (§4.2). MLGC: the stale
    /// bytes are recorded in the byte-level GC table; when it is over its size, the page with
    /// the most invalid bytes gives up its valid bytes and is invalidated (§4.4.2).
    fn release_onode(&mut self, s: u32, src: Src) {
        let ob = &mut self.objs[s as usize];
        let ppn = ob.onode_ppn;
        if ppn == NONE {
            return;
        }
        ob.onode_ppn = NONE;
        let rec = self.rec_of(ppn);
        if rec == NONE {
            return;
        }
        self.opages[rec as usize].live -= 1;
        if self.opages[rec as usize].live == 0 {
            self.gct_drop(ppn);
            self.invalidate(ppn);
            self.free_opage(rec);
            return;
        }
        if !self.o.mlgc {
            let moved = self.evacuate_onode_page(ppn, rec, src);
            self.counters.survivor_onodes += moved as u64;
            return;
        }
        let ob_bytes = self.o.onode_bytes;
        let e = self.gct.entry(ppn).or_insert((0, 0));
        let old = *e;
        e.0 += ob_bytes;
        e.1 += 1;
        let new = *e;
        if old.1 > 0 {
            self.gct_order.remove(&(old.0, ppn));
        }
        self.gct_order.insert((new.0, ppn));
        self.gct_entries += 1;
        while self.gct_entries > self.gct_max_entries {
            let Some(&(bytes, victim)) = self.gct_order.iter().next_back() else {
                break;
            };
            let vrec = self.rec_of(victim);
            self.gct_drop(victim);
            self.counters.mlgc_evictions += 1;
            let moved = self.evacuate_onode_page(victim, vrec, Src::Mlgc);
            self.counters.mlgc_moved_bytes += moved as u64 * ob_bytes as u64;
            let _ = bytes;
        }
        self.dram.gc_table_bytes = self.dram.gc_table_bytes.max(self.gct_entries * 8);
    }

    /// Move the valid onodes of onode page `ppn` to the pending onode writes and invalidate
    /// the page. Returns how many moved.
    fn evacuate_onode_page(&mut self, ppn: u32, rec: u32, src: Src) -> u32 {
        let mut moved = 0;
        if rec != NONE {
            let n = self.opages[rec as usize].slots.len();
            for k in 0..n {
                let t = self.opages[rec as usize].slots[k];
                let ob = &mut self.objs[t as usize];
                if ob.onode_ppn == ppn && ob.onode_idx == k as u32 {
                    ob.onode_ppn = NONE;
                    ob.move_from = ppn;
                    self.pending.push((t, src, false));
                    moved += 1;
                }
            }
            self.free_opage(rec);
        }
        self.invalidate(ppn);
        moved
    }

    /// Write the pending onodes (A2 l.40–48), packed `page / onode_bytes` to a page (one per
    /// page in YAFFS2: the object header).
    fn write_pending_onodes(&mut self) -> Result<(), OsdError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut list = std::mem::take(&mut self.pend_scratch);
        list.clear();
        list.append(&mut self.pending);
        // Old locations first: OBFS survivors and MLGC evictions join the same pages.
        let n0 = list.len();
        for &(s, src, tomb) in &list[..n0] {
            if !tomb && self.objs[s as usize].live {
                self.release_onode(s, src);
            }
        }
        list.append(&mut self.pending);
        {
            let objs = &mut self.objs;
            list.retain(|&(s, _, tomb)| {
                let ob = &mut objs[s as usize];
                if tomb {
                    return true;
                }
                if (!ob.live && ob.move_from == NONE) || ob.pend_mark {
                    return false;
                }
                ob.pend_mark = true;
                true
            });
            for &(s, _, _) in list.iter() {
                objs[s as usize].pend_mark = false;
            }
        }
        let per = self.onodes_per_page as usize;
        for group in list.chunks(per) {
            let (s0, src, _) = group[0];
            let die = self.next_die(ONODE)?;
            let new_csn = self.sn + 1;
            if self.contents.is_some() {
                let mut recs = Vec::with_capacity(group.len());
                for &(s, _, tomb) in group {
                    let ob = &self.objs[s as usize];
                    let r = if !tomb && ob.move_from != NONE && !ob.commit_req {
                        self.onode_recs_from(ob.move_from, &[s])
                            .first()
                            .copied()
                            .unwrap_or_else(|| self.onode_rec(s, ob.onode_csn, !ob.live))
                    } else {
                        self.onode_rec(s, new_csn, tomb)
                    };
                    recs.push(r);
                }
                self.next_content = Some(PageContent::Onode(recs));
            }
            let rec = self.alloc_opage();
            let n = group.len() as u32;
            let oid = self.objs[s0 as usize].oid;
            let ppn = self.program(ONODE, die, src, oid, n, n * self.o.onode_bytes, rec)?;
            let mut live = 0;
            for (k, &(s, _, tomb)) in group.iter().enumerate() {
                self.opages[rec as usize].slots.push(s);
                if tomb {
                    // A tombstone stays valid (GC moves it) so that no older onode of the
                    // removed object can come back at recovery (spec §2 gap 4).
                    let ob = &mut self.objs[s as usize];
                    ob.onode_ppn = ppn;
                    ob.onode_idx = k as u32;
                    ob.onode_csn = new_csn;
                    ob.lcs = new_csn;
                    self.unpin_all(s);
                    let ob = &mut self.objs[s as usize];
                    if ob.tail_page != u64::MAX {
                        ob.tail_page = u64::MAX;
                        ob.tail_segs.clear();
                        self.tails_used -= 1;
                    }
                    self.set_uncommitted(s, false);
                    live += 1;
                } else {
                    let ob = &mut self.objs[s as usize];
                    // GC during `next_die` may have moved an older copy: drop it.
                    if ob.onode_ppn != NONE {
                        let (op, oi) = (ob.onode_ppn, ob.onode_idx);
                        let _ = oi;
                        let r = self.rec_of(op);
                        if r != NONE {
                            self.opages[r as usize].live -= 1;
                            if self.opages[r as usize].live == 0 {
                                self.gct_drop(op);
                                self.invalidate(op);
                                self.free_opage(r);
                            }
                        }
                    }
                    let ob = &mut self.objs[s as usize];
                    ob.onode_ppn = ppn;
                    ob.onode_idx = k as u32;
                    let mut clean = false;
                    let committed = ob.move_from == NONE || ob.commit_req;
                    if self.yaffs {
                        // A new header is a shrink header if a truncate asked for one; a moved
                        // one stays what it was.
                        if committed {
                            ob.onode_shrink = ob.shrink_pending;
                            ob.shrink_pending = false;
                        }
                        if ob.onode_shrink && committed {
                            let c = (ppn / self.ppc) as usize;
                            self.chunks[c].shrink = true;
                            self.shrink_ppns.insert(ppn);
                        }
                    }
                    let ob = &mut self.objs[s as usize];
                    ob.commit_req = false;
                    if committed {
                        ob.onode_csn = new_csn;
                        ob.lcs = new_csn;
                        if ob.tail_page == u64::MAX && !ob.onode_dirty {
                            let nodes = &self.nodes;
                            clean = ob.dirty.iter().all(|&id| {
                                let n = &nodes.nodes[id as usize];
                                n.free || n.dirty == 0 || n.obj != s
                            });
                        }
                    }
                    ob.move_from = NONE;
                    if committed {
                        self.unpin_all(s);
                    }
                    if clean {
                        self.set_uncommitted(s, false);
                    }
                    live += 1;
                }
            }
            self.opages[rec as usize].live = live;
            if live == 0 {
                self.invalidate(ppn);
                self.free_opage(rec);
            }
        }
        list.clear();
        self.pend_scratch = list;
        self.close_stage();
        Ok(())
    }

    // ------------------------------------------------------------------ mapping

    fn drain_dirty(&mut self) {
        for i in 0..self.nodes.newly_dirty.len() {
            let id = self.nodes.newly_dirty[i];
            let obj = self.nodes.nodes[id as usize].obj;
            self.objs[obj as usize].dirty.push(id);
            self.set_uncommitted(obj, true);
        }
        self.nodes.newly_dirty.clear();
    }

    fn drain_freed(&mut self) {
        while let Some((id, ppn, va)) = self.nodes.freed.pop() {
            self.invalidate(ppn);
            let obj = self.nodes.nodes[id as usize].obj;
            self.pin(obj, ppn);
            self.free_va(va);
        }
    }

    /// Index page `ppn` of object `s` was superseded (rewritten elsewhere, or its node
    /// freed): it is invalid, but the object's last committed state on flash may still reach
    /// it (the extent tree by PA from the committed onode; the virtual tree through the LCS
    /// version of a VA that recovery rolls back to) until the object's next commit (an onode
    /// write, or under the virtual tree a flush leaving its tree clean). Its chunk is not a GC
    /// victim until then, so a cut before that commit finds the committed tree whole.
    fn pin(&mut self, s: u32, ppn: u32) {
        if ppn == NONE {
            return;
        }
        let c = (ppn / self.ppc) as usize;
        self.chunks[c].pins += 1;
        self.objs[s as usize].pins.push(ppn);
    }

    /// `s` was committed (its onode written, or its virtual tree flushed clean): its
    /// superseded index pages are free to go.
    fn unpin_all(&mut self, s: u32) {
        let mut pins = std::mem::take(&mut self.objs[s as usize].pins);
        for &p in &pins {
            self.chunks[(p / self.ppc) as usize].pins -= 1;
        }
        pins.clear();
        self.objs[s as usize].pins = pins;
    }

    /// Set or clear an object's `uncommitted` flag, keeping [`Device::uncommitted_objs`] and
    /// [`Device::uncommitted_q`] up to date.
    fn set_uncommitted(&mut self, s: u32, u: bool) {
        let ob = &mut self.objs[s as usize];
        if ob.uncommitted == u {
            return;
        }
        ob.uncommitted = u;
        if u {
            ob.unc_seq = ob.unc_seq.wrapping_add(1);
            let seq = ob.unc_seq;
            self.uncommitted_objs += 1;
            self.uncommitted_q.push_back((s, seq));
            if self.uncommitted_q.len() as u64 > 4 * self.uncommitted_objs + 64 {
                let objs = &self.objs;
                self.uncommitted_q.retain(|&(t, q)| {
                    let ob = &objs[t as usize];
                    ob.uncommitted && ob.unc_seq == q
                });
            }
        } else {
            self.uncommitted_objs -= 1;
        }
    }

    fn set_onode_dirty(&mut self, s: u32, d: bool) {
        if d {
            self.set_uncommitted(s, true);
        }
        let ob = &mut self.objs[s as usize];
        if ob.onode_dirty != d {
            ob.onode_dirty = d;
            if d {
                self.dirty_onodes += 1;
            } else {
                self.dirty_onodes -= 1;
            }
        }
    }

    fn map_get(&self, s: u32, key: u64) -> Option<u64> {
        let ob = &self.objs[s as usize];
        if ob.root == NONE {
            ob.inline[..ob.n_inline as usize]
                .iter()
                .find(|e| e.0 == key)
                .map(|e| e.1)
        } else {
            self.nodes.get(ob.root, key)
        }
    }

    /// Map page `key` of `s` to `val`; returns the old value. Marks what it changed dirty.
    fn map_set(&mut self, s: u32, key: u64, val: u64, _host: bool) -> Option<u64> {
        let k = self.o.inline_extents as usize;
        let ob = &mut self.objs[s as usize];
        if ob.root == NONE {
            let n = ob.n_inline as usize;
            if let Some(e) = ob.inline[..n].iter_mut().find(|e| e.0 == key) {
                let old = e.1;
                e.1 = val;
                self.set_onode_dirty(s, true);
                return Some(old);
            }
            if n < k && !self.yaffs {
                ob.inline[n] = (key, val);
                ob.n_inline += 1;
                self.set_onode_dirty(s, true);
                self.mapped += 1;
                return None;
            }
            // Beyond K inline extents (or YAFFS2's RAM tnodes): a B+ tree.
            let root = self.nodes.alloc(s, 0);
            let inl = ob.inline;
            ob.n_inline = 0;
            ob.root = root;
            let mut root = root;
            let mut ch = Change::default();
            for &(ik, iv) in &inl[..n] {
                self.nodes.upsert(&mut root, ik, iv, &mut ch);
            }
            self.objs[s as usize].root = root;
            if !self.yaffs {
                self.set_onode_dirty(s, true);
            }
        }
        let mut root = self.objs[s as usize].root;
        let mut ch = Change::default();
        let old = self.nodes.upsert(&mut root, key, val, &mut ch);
        self.after_tree_op(s, root, ch);
        if old.is_none() {
            self.mapped += 1;
        }
        old
    }

    fn map_remove(&mut self, s: u32, key: u64) -> Option<u64> {
        let ob = &mut self.objs[s as usize];
        if ob.root == NONE {
            let n = ob.n_inline as usize;
            let i = ob.inline[..n].iter().position(|e| e.0 == key)?;
            let old = ob.inline[i].1;
            ob.inline[i] = ob.inline[n - 1];
            ob.n_inline -= 1;
            self.set_onode_dirty(s, true);
            self.mapped -= 1;
            return Some(old);
        }
        let mut root = ob.root;
        let mut ch = Change::default();
        let old = self.nodes.remove(&mut root, key, &mut ch);
        self.after_tree_op(s, root, ch);
        if old.is_some() {
            self.mapped -= 1;
        }
        old
    }

    fn after_tree_op(&mut self, s: u32, root: u32, ch: Change) {
        self.objs[s as usize].root = root;
        if self.yaffs {
            // YAFFS2's tnode tree is RAM only: nothing is ever written.
            for i in 0..self.nodes.newly_dirty.len() {
                let id = self.nodes.newly_dirty[i];
                self.nodes.clean(id);
            }
            self.nodes.newly_dirty.clear();
            self.nodes.freed.clear();
            return;
        }
        if ch.root_changed {
            self.set_onode_dirty(s, true);
        }
        self.drain_dirty();
        self.drain_freed();
    }

    fn collect_entries(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        if ob.root == NONE {
            self.entries_scratch.clear();
            self.entries_scratch
                .extend_from_slice(&ob.inline[..ob.n_inline as usize]);
            self.entries_scratch.sort_unstable_by_key(|e| e.0);
        } else {
            let mut v = std::mem::take(&mut self.entries_scratch);
            self.nodes.entries(ob.root, &mut v);
            self.entries_scratch = v;
        }
    }

    // ------------------------------------------------------------------ lookups (reads)

    fn touch_obj(&mut self, s: u32, host: bool) {
        let ob = &mut self.objs[s as usize];
        if !ob.touched {
            ob.touched = true;
            self.touched.push(s);
        }
        ob.touched_host |= host;
    }

    /// Read the onode unless DRAM holds it (dirty in the diff cache, or read already in
    /// this command).
    fn need_onode(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        if ob.onode_read || ob.onode_ppn == NONE || (self.cache_on && ob.onode_dirty) {
            return;
        }
        let p = ob.onode_ppn;
        self.objs[s as usize].onode_read = true;
        self.read(ONODE, p, Src::Host);
        self.close_stage();
    }

    /// Walk the tree of `s` to the leaf of `key`, noting the index pages that must be read
    /// from flash (root first). `update`: the walk is for an entry update (a diff-cache
    /// entry needs no leaf read).
    fn lookup(&mut self, s: u32, key: u64, update: bool) {
        let root = self.objs[s as usize].root;
        if root == NONE || self.yaffs {
            return;
        }
        self.index_used_cmd = true;
        let mut path = std::mem::take(&mut self.path);
        self.nodes.find_leaf(root, key, &mut path);
        for &id in &path {
            let n = &self.nodes.nodes[id as usize];
            if n.ppn == NONE {
                continue;
            }
            let cached = if !self.cache_on {
                false
            } else if n.level > 0 {
                n.dirty > 0 || self.objs[s as usize].clean_cached.contains(&id)
            } else {
                self.nodes.whole(id) || (update && n.dirty > 0)
            };
            if cached {
                continue;
            }
            self.path_reads.push((n.level, n.ppn));
            if self.cache_on && n.level > 0 {
                self.objs[s as usize].clean_cached.push(id);
                self.clean_pages += 1;
            }
        }
        self.path = path;
    }

    fn emit_path_reads(&mut self) {
        if self.path_reads.is_empty() {
            return;
        }
        let mut v = std::mem::take(&mut self.path_reads);
        v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.dedup();
        let mut level = v[0].0;
        for &(l, ppn) in &v {
            if l != level {
                self.close_stage();
                level = l;
            }
            self.read(INDEX, ppn, Src::Host);
            self.index_reads_cmd += 1;
        }
        self.close_stage();
        v.clear();
        self.path_reads = v;
    }

    // ------------------------------------------------------------------ writes

    fn program_data(
        &mut self,
        s: u32,
        i: u64,
        len: u32,
        content: Option<PageContent>,
    ) -> Result<(), OsdError> {
        let oid = self.objs[s as usize].oid;
        let die = self.next_die(DATA)?;
        self.next_content = content;
        self.next_csn = 0;
        self.program_data_on(s, i, len, die, oid)
    }

    /// Data content for page `i` of `s`: the old page's with `[a, b)` written.
    fn data_content(&self, s: u32, i: u64, a: u32, b: u32) -> Option<PageContent> {
        self.contents.as_ref()?;
        let mut segs = match self.map_get(s, i) {
            Some(v) => match self.content_of(leaf_parts(v).0) {
                // Bytes past the mapped length were cut by a truncate: they read as zeros.
                Some(PageContent::Data(d)) => clip(d, leaf_parts(v).1),
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        overlay(&mut segs, a, b, self.write_id);
        Some(PageContent::Data(segs))
    }

    fn program_data_on(
        &mut self,
        s: u32,
        i: u64,
        len: u32,
        die: u32,
        oid: u64,
    ) -> Result<(), OsdError> {
        let ppn = self.program(DATA, die, Src::Host, oid, i as u32, len, s)?;
        if let Some(old) = self.map_set(s, i, leaf_val(ppn, len), true) {
            self.invalidate(leaf_parts(old).0);
        }
        self.touch_obj(s, true);
        Ok(())
    }

    fn flush_tail(&mut self, s: u32) -> Result<(), OsdError> {
        let ob = &self.objs[s as usize];
        if ob.tail_page == u64::MAX {
            return Ok(());
        }
        let (page, fill, oid) = (ob.tail_page, ob.tail_fill, ob.oid);
        // The buffer stays in DRAM until its page is programmed (a power cut in between
        // leaves it to the capacitor flush).
        let die = self.next_die(DATA)?;
        let segs = self.objs[s as usize].tail_segs.clone();
        self.next_content = self.contents.is_some().then_some(PageContent::Data(segs));
        self.next_csn = 0;
        self.program_data_on(s, page, fill, die, oid)?;
        let ob = &mut self.objs[s as usize];
        ob.tail_page = u64::MAX;
        ob.tail_fill = 0;
        ob.tail_segs.clear();
        self.tails_used -= 1;
        self.counters.tail_flushes += 1;
        Ok(())
    }

    fn start_tail(&mut self, s: u32, page: u64, start: u32, fill: u32) -> Result<(), OsdError> {
        self.flush_tail(s)?;
        while self.tails_used >= self.o.tail_buffers {
            let Some((t, p)) = self.tails.pop_front() else {
                break;
            };
            if self.objs[t as usize].tail_page == p {
                if self.objs[t as usize].live {
                    self.flush_tail(t)?;
                } else {
                    let ob = &mut self.objs[t as usize];
                    ob.tail_page = u64::MAX;
                    ob.tail_segs.clear();
                    self.tails_used -= 1;
                }
            }
        }
        let rec = self.contents.is_some();
        let wid = self.write_id;
        let ob = &mut self.objs[s as usize];
        ob.tail_page = page;
        ob.tail_fill = fill;
        ob.tail_segs.clear();
        if rec {
            ob.tail_segs.push((start, fill, wid));
        }
        self.set_uncommitted(s, true);
        self.tails_used += 1;
        self.tails.push_back((s, page));
        if self.tails.len() > 4 * self.o.tail_buffers as usize {
            // Drop stale queue entries (flushed tails) so the queue stays bounded.
            let objs = &self.objs;
            self.tails.retain(|&(t, p)| objs[t as usize].tail_page == p);
        }
        self.dram.tail_buffer_bytes = self
            .dram
            .tail_buffer_bytes
            .max(self.tails_used as u64 * self.page as u64);
        Ok(())
    }

    /// Commit the dirty index nodes of the objects in `objs` (leaves first; in the extent tree
    /// each written node dirties its parent, the root its onode; one stage for all)
    /// and queue their dirty onodes. `evict`: a diff-cache eviction, which reads each old
    /// leaf it merges into (§4.4.4).
    fn flush_objects(
        &mut self,
        objs: &[u32],
        src_of: impl Fn(&Obj) -> Src,
    ) -> Result<(), OsdError> {
        let evict = self.cache_on;
        let mut buckets = std::mem::take(&mut self.buckets);
        if buckets.is_empty() {
            // re-entered from GC inside an outer flush (commit before erase)
            buckets = vec![Vec::new(); 64];
        }
        let mut cur = std::mem::take(&mut self.bucket_scratch);
        // A GC inside this flush may dirty nodes written already (a moved data page's leaf):
        // flush again until the objects' trees are clean, so the onode committed after it
        // never reaches a stale node (a cut would lose the moved pages: their copies are
        // older than that onode, so recovery does not re-apply them).
        for _round in 0..8 {
            for &s in objs {
                let ob = &mut self.objs[s as usize];
                for id in ob.dirty.drain(..) {
                    let n = &self.nodes.nodes[id as usize];
                    if !n.free && n.dirty > 0 && n.obj == s {
                        buckets[n.level as usize].push(id);
                    }
                }
            }
            for level in 0..buckets.len() {
                if buckets[level].is_empty() {
                    continue;
                }
                std::mem::swap(&mut cur, &mut buckets[level]);
                cur.sort_unstable();
                cur.dedup();
                if evict && level == 0 {
                    for &id in &cur {
                        let n = &self.nodes.nodes[id as usize];
                        if n.ppn != NONE && !self.nodes.whole(id) {
                            let p = n.ppn;
                            self.read(INDEX, p, Src::CacheEvict);
                        }
                    }
                    self.close_stage();
                }
                for &id in &cur {
                    let n = &self.nodes.nodes[id as usize];
                    if n.free || n.dirty == 0 {
                        continue;
                    }
                    let src = src_of(&self.objs[n.obj as usize]);
                    self.write_node(id, src)?;
                    // In the extent tree the parent now holds a stale PA: it is written in this
                    // flush even when it was dirty already (an outer flush that GC interrupted
                    // may own it; the erase after this flush must not orphan the new node).
                    let parent = self.nodes.nodes[id as usize].parent;
                    if !self.o.virtual_tree && parent != NONE {
                        let l = self.nodes.nodes[parent as usize].level as usize;
                        buckets[l].push(parent);
                    }
                    // Parents dirtied by the write go to their level's bucket.
                    for i in 0..self.nodes.newly_dirty.len() {
                        let p = self.nodes.newly_dirty[i];
                        let l = self.nodes.nodes[p as usize].level as usize;
                        buckets[l].push(p);
                    }
                    self.nodes.newly_dirty.clear();
                }
                cur.clear();
            }
            let again = objs.iter().any(|&s| {
                let nodes = &self.nodes;
                self.objs[s as usize].dirty.iter().any(|&id| {
                    let n = &nodes.nodes[id as usize];
                    !n.free && n.dirty > 0 && n.obj == s
                })
            });
            if !again {
                break;
            }
        }
        // A2 flushes an object's index as one operation (l.30): its pages, every level, are
        // programmed together (their addresses are allocated before, so a parent already
        // holds its children's new addresses).
        self.close_stage();
        self.bucket_scratch = cur;
        self.buckets = buckets;
        for &s in objs {
            if self.objs[s as usize].onode_dirty {
                let src = src_of(&self.objs[s as usize]);
                self.set_onode_dirty(s, false);
                self.objs[s as usize].commit_req = true;
                self.pending.push((s, src, false));
            } else if self.o.virtual_tree {
                // The virtual tree's root VA is in the onode and does not change when nodes
                // move (§4.4.3.1): a flush that leaves the tree clean, with no onode change and
                // no buffered data, is a consistent state without an onode write. Without
                // this, the object would stay uncommitted until its next onode write (rare
                // when the size does not change), its superseded index pages pinned from GC
                // all that time (issue 17: GC starved, Fig. 43's virtual tree wrote more).
                let ob = &self.objs[s as usize];
                let nodes = &self.nodes;
                let clean = ob.live
                    && ob.onode_ppn != NONE
                    && ob.tail_page == u64::MAX
                    && !ob.commit_req
                    && !self.pending.iter().any(|&(p, _, _)| p == s)
                    && ob.dirty.iter().all(|&id| {
                        let n = &nodes.nodes[id as usize];
                        n.free || n.dirty == 0 || n.obj != s
                    });
                if clean {
                    self.objs[s as usize].lcs = self.sn;
                    self.unpin_all(s);
                    self.set_uncommitted(s, false);
                }
            }
        }
        Ok(())
    }

    fn write_node(&mut self, id: u32, src: Src) -> Result<(), OsdError> {
        let obj = self.nodes.nodes[id as usize].obj;
        let oid = self.objs[obj as usize].oid;
        let vt = self.o.virtual_tree;
        let mut new_va = false;
        if vt && self.nodes.nodes[id as usize].va == NONE {
            let va = self.alloc_va()?;
            self.nodes.nodes[id as usize].va = va;
            new_va = true;
        }
        let die = self.next_die(INDEX)?;
        let n = &self.nodes.nodes[id as usize];
        if n.free || n.dirty == 0 {
            // GC during next_die cannot clean a node, but be safe.
            return Ok(());
        }
        let aux = if vt { n.va } else { id };
        if self.contents.is_some() {
            let vals = self.node_flash_vals(n, vt);
            self.next_content = Some(PageContent::Index {
                level: n.level,
                keys: n.keys.clone(),
                vals,
            });
        }
        let ppn = self.program(INDEX, die, src, oid, aux, 0, id)?;
        let n = &mut self.nodes.nodes[id as usize];
        let (old, va, parent) = (n.ppn, n.va, n.parent);
        n.ppn = ppn;
        self.nodes.clean(id);
        self.invalidate(old);
        self.pin(obj, old);
        if vt {
            self.pt_set(va, ppn);
            if parent == NONE && new_va {
                self.set_onode_dirty(obj, true);
            }
        } else if parent != NONE {
            self.nodes.touch(parent, 1);
        } else {
            self.set_onode_dirty(obj, true);
        }
        Ok(())
    }

    // ------------------------------------------------------------------ diff cache

    fn lru_remove(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        if !ob.in_lru {
            return;
        }
        let (p, n) = (ob.lru_prev, ob.lru_next);
        if p != NONE {
            self.objs[p as usize].lru_next = n;
        } else {
            self.lru_head = n;
        }
        if n != NONE {
            self.objs[n as usize].lru_prev = p;
        } else {
            self.lru_tail = p;
        }
        let ob = &mut self.objs[s as usize];
        ob.in_lru = false;
        ob.lru_prev = NONE;
        ob.lru_next = NONE;
    }

    fn lru_front(&mut self, s: u32) {
        self.lru_remove(s);
        let h = self.lru_head;
        let ob = &mut self.objs[s as usize];
        ob.in_lru = true;
        ob.lru_prev = NONE;
        ob.lru_next = h;
        if h != NONE {
            self.objs[h as usize].lru_prev = s;
        } else {
            self.lru_tail = s;
        }
        self.lru_head = s;
    }

    fn has_cache_state(&self, s: u32) -> bool {
        let ob = &self.objs[s as usize];
        ob.onode_dirty || !ob.clean_cached.is_empty() || !ob.dirty.is_empty()
    }

    /// Evict until the diff cache fits (§4.4.4): clean internal pages of the LRU objects,
    /// highest level first; then the LRU object's dirty metadata (leaves, internal nodes,
    /// onode last).
    fn evict(&mut self) -> Result<(), OsdError> {
        let cap = self.o.diff_cache_bytes;
        while self.cache_bytes() > cap {
            if self.clean_pages > 0 {
                let mut s = self.lru_tail;
                while s != NONE && self.objs[s as usize].clean_cached.is_empty() {
                    s = self.objs[s as usize].lru_prev;
                }
                if s != NONE {
                    let mut cc = std::mem::take(&mut self.objs[s as usize].clean_cached);
                    let nodes = &self.nodes;
                    cc.sort_unstable_by_key(|&id| nodes.nodes[id as usize].level);
                    while let Some(_id) = cc.pop() {
                        self.clean_pages -= 1;
                        self.counters.cache_dropped_pages += 1;
                        if self.cache_bytes() <= cap {
                            break;
                        }
                    }
                    self.objs[s as usize].clean_cached = cc;
                    if !self.has_cache_state(s) {
                        self.lru_remove(s);
                    }
                    continue;
                }
            }
            let mut s = self.lru_tail;
            while s != NONE && !self.has_cache_state(s) {
                let p = self.objs[s as usize].lru_prev;
                self.lru_remove(s);
                s = p;
            }
            if s == NONE {
                break;
            }
            self.counters.cache_evicted_objects += 1;
            self.flush_objects(&[s], |_| Src::CacheEvict)?;
            self.write_pending_onodes()?;
            let ob = &mut self.objs[s as usize];
            ob.dirty.clear();
            let n = ob.clean_cached.len() as u64;
            ob.clean_cached.clear();
            self.clean_pages -= n;
            self.lru_remove(s);
        }
        Ok(())
    }

    // ------------------------------------------------------------------ commands

    fn slot(&self, oid: ObjectId, cmd: &'static str) -> Result<u32, OsdError> {
        match self.index.get(&oid) {
            Some(&s) => Ok(s),
            None => Err(OsdError::UnknownObject { oid, cmd }),
        }
    }

    /// Apply one command; its cost is left in [`Device::plan`].
    pub fn execute(&mut self, op: &OsdOp) -> Result<(), OsdError> {
        self.execute_batch(std::slice::from_ref(op))
    }

    /// Apply several commands as one: the device runs its queues once for all of them (one
    /// data, index and onode pass, as A2 does for the object operations of one I/O), so their
    /// onodes pack into shared pages. Used to build packed onode pages in tests (F29).
    pub fn execute_batch(&mut self, ops: &[OsdOp]) -> Result<(), OsdError> {
        self.plan.clear();
        self.index_reads_cmd = 0;
        self.index_used_cmd = false;
        let mut r = Ok(());
        for op in ops {
            r = self.execute_inner(op);
            if r.is_err() {
                break;
            }
        }
        // finish: A2's index and onode stages, or the diff cache's eviction
        let r = r.and_then(|_| self.finish());
        for &s in &self.touched {
            let ob = &mut self.objs[s as usize];
            ob.touched = false;
            ob.touched_host = false;
            ob.onode_read = false;
        }
        self.touched.clear();
        r
    }

    /// Pages the capacitor-backed flush of [`Device::power_loss`] needs at most now: the tail
    /// buffers in use, then the IC_OBJ entries (16 B) and DRAM onodes (`osd.onode_bytes`) of
    /// the objects with uncommitted state, packed in order. An upper bound, kept in O(1): the
    /// object count is that of `uncommitted` flags (power_loss also skips removed objects
    /// whose tombstone is on flash), and every page of the packing but the last holds more
    /// than `page − max(16, onode_bytes)` bytes.
    fn backup_pages_bound(&self) -> u64 {
        let n = self.uncommitted_objs;
        let mut p = self.tails_used as u64;
        if n > 0 {
            let ob = self.o.onode_bytes as u64;
            let per = self.page as u64 - ob.max(16) + 1;
            p += (n * (16 + ob)).div_ceil(per);
        }
        p
    }

    /// The most pages [`Device::backup_pages_bound`] may reach after a command:
    /// `osd.backup_flush_pages` less a headroom of 3 pages (what the next command can add
    /// before a cut or the next check: one tail buffer, its object's records, and the records
    /// of one GC-moved object between two checks of the GC loop). `osd.backup_flush_pages`
    /// is at least 3 (config check).
    fn backup_limit(&self) -> u64 {
        (self.o.backup_flush_pages as u64).saturating_sub(3)
    }

    /// Keep the back-up set within the capacitor's budget (§4.4.5: the thesis's premise is
    /// that the DRAM state not on flash always fits the capacitor-backed flush; spec §7 item 6
    /// "the back-up flush stays ≤ budget"). While the bound of [`Device::backup_pages_bound`]
    /// exceeds [`Device::backup_limit`], the object whose state
    /// became uncommitted first is written back: its tail buffer, its dirty index nodes, its
    /// onode (costed as diff-cache eviction writes, `Src::CacheEvict`). The thesis gives no
    /// such rule: reading \[N\] (issue 17).
    fn bound_backup(&mut self) -> Result<(), OsdError> {
        let limit = self.backup_limit();
        let mut tries = self.uncommitted_q.len();
        while tries > 0 && self.backup_pages_bound() > limit {
            tries -= 1;
            let Some((s, q)) = self.uncommitted_q.pop_front() else {
                break;
            };
            let ob = &self.objs[s as usize];
            if !ob.uncommitted || ob.unc_seq != q {
                continue;
            }
            // A removed object's tombstone is queued by its command: leave it to that.
            if ob.live {
                self.flush_tail(s)?;
                self.flush_objects(&[s], |_| Src::CacheEvict)?;
                if self.objs[s as usize].uncommitted {
                    self.objs[s as usize].commit_req = true;
                    self.pending.push((s, Src::CacheEvict, false));
                }
                self.write_pending_onodes()?;
            }
            let ob = &self.objs[s as usize];
            if ob.uncommitted && ob.unc_seq == q {
                self.uncommitted_q.push_back((s, q));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), OsdError> {
        self.bound_backup()?;
        let mut done = std::mem::take(&mut self.touched);
        if self.cache_on {
            let mut round = done.clone();
            for _ in 0..16 {
                for &s in &round {
                    if self.objs[s as usize].live && self.has_cache_state(s) {
                        self.lru_front(s);
                    }
                }
                self.write_pending_onodes()?;
                self.evict()?;
                if self.touched.is_empty() {
                    break;
                }
                round.clear();
                round.append(&mut self.touched);
                done.extend_from_slice(&round);
            }
        } else {
            // A2: every touched object's index, then its onode; GC during those writes may
            // dirty more (extent-tree cascades of moved pages): commit those too.
            let mut list: Vec<u32> = done
                .iter()
                .copied()
                .filter(|&s| self.objs[s as usize].live)
                .collect();
            let mut host = true;
            for _ in 0..16 {
                self.flush_objects(&list, |ob| {
                    if host && ob.touched_host {
                        Src::Host
                    } else {
                        Src::Gc
                    }
                })?;
                self.write_pending_onodes()?;
                host = false;
                let mut again: Vec<u32> = std::mem::take(&mut self.touched);
                done.extend_from_slice(&again);
                again.extend(list.iter().copied().filter(|&s| {
                    let ob = &self.objs[s as usize];
                    ob.onode_dirty || !ob.dirty.is_empty()
                }));
                again.retain(|&s| self.objs[s as usize].live);
                again.sort_unstable();
                again.dedup();
                if again.is_empty() {
                    break;
                }
                list = again;
            }
        }
        self.touched = done;
        if self.index_used_cmd {
            self.counters.index_ops += 1;
            if self.index_reads_cmd == 0 {
                self.counters.index_hits += 1;
            }
        }
        let d = &mut self.dram;
        d.diff_cache_bytes = d.diff_cache_bytes.max(
            self.nodes.dirty_bytes
                + self.clean_pages * self.page as u64
                + self.dirty_onodes * self.o.onode_bytes as u64,
        );
        d.global_index_bytes = d.global_index_bytes.max(self.index.len() as u64 * 16);
        let pt = self.page_table_bytes();
        let d = &mut self.dram;
        d.page_table_bytes = d.page_table_bytes.max(pt);
        if self.yaffs {
            d.ram_index_bytes = d.ram_index_bytes.max(self.mapped * 4);
        }
        Ok(())
    }

    fn execute_inner(&mut self, op: &OsdOp) -> Result<(), OsdError> {
        let ps = self.page as u64;
        match *op {
            OsdOp::Create { oid } => {
                if self.index.contains_key(&oid) {
                    return Err(OsdError::ObjectExists { oid });
                }
                let s = self.objs.len() as u32;
                self.objs.push(Obj::new(oid));
                self.index.insert(oid, s);
                self.set_onode_dirty(s, true);
                self.touch_obj(s, true);
            }
            OsdOp::GetAttr { oid } => {
                let s = self.slot(oid, "get_attr")?;
                self.touch_obj(s, false);
                self.need_onode(s);
            }
            OsdOp::SetAttr { oid } => {
                let s = self.slot(oid, "set_attr")?;
                self.touch_obj(s, true);
                self.need_onode(s);
                self.set_onode_dirty(s, true);
            }
            OsdOp::Flush { oid } => {
                let s = self.slot(oid, "flush")?;
                self.touch_obj(s, false);
                self.flush_tail(s)?;
                self.close_stage();
            }
            OsdOp::Read {
                oid,
                offset_bytes,
                len_bytes,
            } => {
                let s = self.slot(oid, "read")?;
                self.touch_obj(s, false);
                self.need_onode(s);
                let size = self.objs[s as usize].size;
                if len_bytes == 0 || offset_bytes >= size {
                    return Ok(());
                }
                let end = (offset_bytes + len_bytes).min(size);
                let (p0, p1) = (offset_bytes / ps, (end - 1) / ps);
                let tail = self.objs[s as usize].tail_page;
                for i in p0..=p1 {
                    if i != tail {
                        self.lookup(s, i, false);
                    }
                }
                self.emit_path_reads();
                for i in p0..=p1 {
                    if i == tail {
                        continue;
                    }
                    if let Some(v) = self.map_get(s, i) {
                        self.read(DATA, leaf_parts(v).0, Src::Host);
                    }
                }
                self.close_stage();
            }
            OsdOp::Write {
                oid,
                offset_bytes,
                len_bytes,
            } => {
                let s = self.slot(oid, "write")?;
                self.touch_obj(s, true);
                self.need_onode(s);
                if len_bytes == 0 {
                    return Ok(());
                }
                let end = offset_bytes.saturating_add(len_bytes);
                let (p0, p1) = (offset_bytes / ps, (end - 1) / ps);
                if p1 >= u32::MAX as u64 {
                    return Err(OsdError::TooLarge { oid, offset_bytes });
                }
                let tail = self.objs[s as usize].tail_page;
                for i in p0..=p1 {
                    if i != tail {
                        self.lookup(s, i, true);
                    }
                }
                self.emit_path_reads();
                // Read-before-write of partial pages over existing data (§4.5.4.1).
                let edges = [p0, p1];
                let n_edges = if p0 == p1 { 1 } else { 2 };
                for &i in &edges[..n_edges] {
                    let b0 = offset_bytes.max(i * ps) - i * ps;
                    let b1 = end.min((i + 1) * ps) - i * ps;
                    let full = b0 == 0 && b1 == ps;
                    if !full && i != tail {
                        if let Some(v) = self.map_get(s, i) {
                            self.read(DATA, leaf_parts(v).0, Src::Host);
                            self.counters.rmw += 1;
                        }
                    }
                }
                self.close_stage();
                for i in p0..=p1 {
                    let b0 = offset_bytes.max(i * ps) - i * ps;
                    let b1 = (end.min((i + 1) * ps) - i * ps) as u32;
                    let full = b0 == 0 && b1 as u64 == ps;
                    let b0 = b0 as u32;
                    if full {
                        let c = self.data_content(s, i, 0, b1);
                        self.program_data(s, i, ps as u32, c)?;
                        if self.objs[s as usize].tail_page == i {
                            let ob = &mut self.objs[s as usize];
                            ob.tail_page = u64::MAX;
                            ob.tail_segs.clear();
                            self.tails_used -= 1;
                        }
                    } else if self.objs[s as usize].tail_page == i {
                        let rec = self.contents.is_some();
                        let wid = self.write_id;
                        let ob = &mut self.objs[s as usize];
                        ob.tail_fill = ob.tail_fill.max(b1);
                        if rec {
                            overlay(&mut ob.tail_segs, b0, b1, wid);
                        }
                        if ob.tail_fill as u64 == ps {
                            self.flush_tail(s)?;
                        }
                    } else if let Some(v) = self.map_get(s, i) {
                        let len = leaf_parts(v).1.max(b1);
                        let c = self.data_content(s, i, b0, b1);
                        self.program_data(s, i, len, c)?;
                    } else if self.yaffs {
                        // YAFFS2 writes partial chunks at once (its tags carry the byte count).
                        let c = self.data_content(s, i, b0, b1);
                        self.program_data(s, i, b1, c)?;
                    } else {
                        self.start_tail(s, i, b0, b1)?;
                    }
                }
                self.close_stage();
                let ob = &mut self.objs[s as usize];
                ob.size = ob.size.max(end);
                self.set_onode_dirty(s, true);
            }
            OsdOp::Truncate { oid, size_bytes } => {
                let s = self.slot(oid, "truncate")?;
                self.touch_obj(s, true);
                self.need_onode(s);
                let keep = size_bytes.div_ceil(ps);
                self.collect_entries(s);
                let doomed: Vec<(u64, u64)> = self
                    .entries_scratch
                    .iter()
                    .copied()
                    .filter(|e| e.0 >= keep)
                    .collect();
                if let Some(&(k, _)) = doomed.first() {
                    self.lookup(s, k, true);
                    self.emit_path_reads();
                }
                for &(k, _) in &doomed {
                    if let Some(v) = self.map_remove(s, k) {
                        self.invalidate(leaf_parts(v).0);
                    }
                }
                if size_bytes % ps != 0 {
                    let last = size_bytes / ps;
                    let rem = (size_bytes % ps) as u32;
                    if let Some(v) = self.map_get(s, last) {
                        let (p, l) = leaf_parts(v);
                        if l > rem {
                            self.map_set(s, last, leaf_val(p, rem), true);
                        }
                    }
                }
                let ob = &mut self.objs[s as usize];
                if ob.tail_page != u64::MAX && ob.tail_page >= keep {
                    ob.tail_page = u64::MAX;
                    ob.tail_fill = 0;
                    self.tails_used -= 1;
                } else if ob.tail_page != u64::MAX && ob.tail_page == size_bytes / ps {
                    ob.tail_fill = ob.tail_fill.min((size_bytes % ps) as u32);
                }
                let ob = &mut self.objs[s as usize];
                // YAFFS2 writes the header of a truncate as a shrink header: a later scan
                // cuts every older data page to it (spec §3; YAFFS2's `is_shrink`).
                if self.yaffs && size_bytes < ob.size {
                    ob.shrink_pending = true;
                }
                ob.size = size_bytes;
                self.set_onode_dirty(s, true);
                if self.cache_on {
                    // Recovery re-applies data written after the LCS from the OOB, which
                    // cannot undo a truncation: a truncate commits the object's metadata at
                    // once ([N]; with A2's end-of-command flush it is committed anyway).
                    self.flush_objects(&[s], |_| Src::Host)?;
                    self.write_pending_onodes()?;
                }
            }
            OsdOp::Remove { oid } => {
                let s = self.slot(oid, "remove")?;
                self.need_onode(s);
                // Invalidate the data, free the index (its pages and VAs), drop DRAM state.
                self.collect_entries(s);
                for i in 0..self.entries_scratch.len() {
                    let (p, _) = leaf_parts(self.entries_scratch[i].1);
                    self.invalidate(p);
                }
                self.mapped -= self.entries_scratch.len() as u64;
                let root = self.objs[s as usize].root;
                if root != NONE {
                    let mut all = std::mem::take(&mut self.nodes_scratch);
                    self.nodes.all_nodes(root, &mut all);
                    for &id in &all {
                        if self.objs[s as usize].clean_cached.contains(&id) {
                            self.clean_pages -= 1;
                        }
                        self.nodes.release(id);
                    }
                    all.clear();
                    self.nodes_scratch = all;
                    if self.yaffs {
                        self.nodes.freed.clear();
                    } else {
                        self.drain_freed();
                    }
                }
                let ob = &mut self.objs[s as usize];
                ob.root = NONE;
                ob.n_inline = 0;
                ob.dirty.clear();
                ob.clean_cached.clear();
                // A buffered tail stays in DRAM until the tombstone is on flash: if power
                // fails first, the object (and that acknowledged data) must come back.
                self.set_onode_dirty(s, false);
                self.lru_remove(s);
                self.release_onode(s, Src::Host);
                self.objs[s as usize].live = false;
                self.index.remove(&oid);
                // A tombstone onode keeps a deleted object from coming back (spec §2 [N]).
                self.pending.push((s, Src::Host, true));
                self.touch_obj(s, true);
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------- recovery (§4.4.5)

/// A byte-range view of one object: its size and, per data page, the write ids of its bytes
/// (record mode). What the crash harness compares.
pub type LogicalObject = (u64, std::collections::BTreeMap<u64, Vec<(u32, u32, u64)>>);

impl Device {
    /// A running device rebuilt from `img` and what [`crate::osd::crash::recover`] found in
    /// it (Algorithm 1's DRAM tables): the global index (object table) from the newest
    /// onodes, each object's B+ tree loaded node by node from its index pages (through the
    /// rebuilt page table under the virtual tree), the page table of the nodes reached, the
    /// byte-level GC table of the onode pages holding stale onodes (most invalid first, up
    /// to its size), and the chunk valid counts by reachability (spec §2 gap 5): a page is
    /// valid exactly when the recovered metadata reaches it (plus the capacitor flush until
    /// recovery finishes). Every partly written chunk is closed (its erased pages wait for
    /// GC). No flash operation happens here: [`Device::finish_recovery`] writes back.
    pub fn from_recovery(
        cfg: &Config,
        img: FlashImage,
        rec: &crate::osd::crash::Recovered,
    ) -> Result<Device, crate::config::ConfigError> {
        let mut d = Device::new(cfg)?;
        let FlashImage {
            pages,
            contents,
            erase_count,
            ..
        } = img;
        d.pages = pages;
        d.contents = Some(contents);
        if erase_count.len() == d.erase_count.len() {
            d.erase_count = erase_count;
        }
        let ppc = d.ppc as usize;
        let mut max_sn = 0;
        let mut backups = Vec::new();

        for (c, p) in d.pages.iter_mut().enumerate() {
            let Some(p) = p.as_mut() else { continue };
            for off in 0..ppc {
                if p.state[off] == VALID || p.state[off] == INVALID {
                    max_sn = max_sn.max(p.sn[off]);
                    if p.ptype[off] as usize == BACKUP && p.state[off] == VALID {
                        backups.push((c * ppc + off) as u32);
                    }
                    p.state[off] = INVALID;
                }
                p.back[off] = NONE;
            }
        }
        d.sn = max_sn;
        for b in backups {
            d.mark_valid(b, BACKUP, NONE);
        }
        // A placeholder slot for the stale onodes of a page (no live object owns them).
        let ghost = d.objs.len() as u32;
        let mut g = Obj::new(u64::MAX);
        g.live = false;
        d.objs.push(g);
        let mut onode_pages: std::collections::BTreeMap<u32, Vec<(u32, u32)>> =
            std::collections::BTreeMap::new();
        let mut max_va = None;
        for (&oid, r) in &rec.objects {
            let s = d.objs.len() as u32;
            let mut ob = Obj::new(oid);
            ob.size = r.size;
            if let Some((ppn, k, csn)) = r.onode {
                ob.onode_ppn = ppn;
                ob.onode_idx = k;
                ob.onode_csn = csn;
                ob.lcs = csn;
                onode_pages.entry(ppn).or_default().push((k, s));
            }
            d.objs.push(ob);
            d.index.insert(oid, s);
            if d.yaffs {
                for (&idx, &(ppn, len)) in &r.pages {
                    if d.mark_valid(ppn, DATA, s) {
                        d.map_set(s, idx, leaf_val(ppn, len), false);
                    }
                }
                continue;
            }
            for &(k, v) in &r.inline {
                let (ppn, _) = leaf_parts(v);
                if d.mark_valid(ppn, DATA, s) {
                    let ob = &mut d.objs[s as usize];
                    ob.inline[ob.n_inline as usize] = (k, v);
                    ob.n_inline += 1;
                    d.mapped += 1;
                }
            }
            if r.root != NONE {
                let root = d.load_node(s, r.root, NONE, &rec.page_table, &mut max_va);
                d.objs[s as usize].root = root;
            }
        }
        for &(oid, ppn, k, csn) in &rec.tombs {
            let s = d.objs.len() as u32;
            let mut ob = Obj::new(oid);
            ob.live = false;
            ob.onode_ppn = ppn;
            ob.onode_idx = k;
            ob.onode_csn = csn;
            ob.lcs = csn;
            d.objs.push(ob);
            onode_pages.entry(ppn).or_default().push((k, s));
        }
        // Onode pages: one record per page, its slots in page order (stale ones → ghost).
        let mut stale: Vec<(u32, u32)> = Vec::new();
        for (&ppn, list) in &onode_pages {
            let n = match d.content_of(ppn) {
                Some(PageContent::Onode(recs)) => recs.len(),
                _ => list.iter().map(|&(k, _)| k as usize + 1).max().unwrap_or(0),
            };
            let r = d.alloc_opage();
            d.opages[r as usize].slots = vec![ghost; n];
            for &(k, s) in list {
                d.opages[r as usize].slots[k as usize] = s;
            }
            d.opages[r as usize].live = list.len() as u32;
            d.mark_valid(ppn, ONODE, r);
            if n > list.len() {
                stale.push(((n - list.len()) as u32, ppn));
            }
        }
        if d.o.mlgc {
            stale.sort_unstable_by(|a, b| b.cmp(a));
            for (n, ppn) in stale {
                if d.gct_entries + n as u64 > d.gct_max_entries {
                    continue;
                }
                let bytes = n * d.o.onode_bytes;
                d.gct.insert(ppn, (bytes, n));
                d.gct_order.insert((bytes, ppn));
                d.gct_entries += n as u64;
            }
        }
        // Page table of the nodes reached; the other VAs are free.
        if let Some(m) = max_va {
            d.va_next = m + 1;
            for va in (0..=m).rev() {
                if d.pt_get(va) == NONE {
                    d.va_free.push(va);
                }
            }
        }
        // YAFFS2-like: the chunks holding a shrink header (valid or superseded), and whether
        // each object's header is one.
        if d.yaffs {
            for c in 0..d.pages.len() {
                let hit = (0..d.ppc).any(|off| {
                    let ppn = c as u32 * d.ppc + off;
                    let p = d.pages[c].as_ref();
                    p.is_some_and(|p| {
                        p.ptype[off as usize] as usize == ONODE
                            && matches!(p.state[off as usize], VALID | INVALID)
                    }) && matches!(d.content_of(ppn), Some(PageContent::Onode(r)) if r.iter().any(|r| r.shrink))
                });
                d.chunks[c].shrink = hit;
            }
            for c in 0..d.pages.len() as u32 {
                if !d.chunks[c as usize].shrink {
                    continue;
                }
                for off in 0..d.ppc {
                    let ppn = c * d.ppc + off;
                    let is = d.pages[c as usize].as_ref().is_some_and(|p| {
                        p.ptype[off as usize] as usize == ONODE
                            && matches!(p.state[off as usize], VALID | INVALID)
                    }) && matches!(d.content_of(ppn), Some(PageContent::Onode(r)) if r.iter().any(|r| r.shrink));
                    if is {
                        d.shrink_ppns.insert(ppn);
                    }
                }
            }
            for s in 0..d.objs.len() {
                let (ppn, k) = (d.objs[s].onode_ppn, d.objs[s].onode_idx as usize);
                if ppn != NONE {
                    d.objs[s].onode_shrink = matches!(d.content_of(ppn),
                        Some(PageContent::Onode(r)) if r.get(k).is_some_and(|r| r.shrink));
                }
            }
        }
        // Chunks: free when wholly erased, else closed with the valid count reached; a chunk
        // programmed from its first page up to a write pointer (then erased pages) is an open
        // chunk again: of the stream of its newest readable page (the newest per stream
        // wins), or, with only a torn page, of a stream left without one. A torn erase leaves
        // another pattern, and GC takes that chunk as it is.
        let nstreams = if d.separate { 3 } else { 1 };
        for die in 0..d.dies {
            d.free[die as usize].clear();
            let mut cands: Vec<(Option<usize>, u64, u32, u32)> = Vec::new();
            for k in (0..d.cpd).rev() {
                let c = (die * d.cpd + k) as usize;
                let p = d.pages[c].as_ref();
                let used = p.is_some_and(|p| p.state.iter().any(|&st| st != FREE));
                let m = &mut d.chunks[c];
                m.pins = 0;
                if let Some(p) = p.filter(|_| used) {
                    m.state = C_FULL;
                    m.first_sn = p.sn[0];
                    m.wp = d.ppc;
                    m.valid = p.state.iter().filter(|&&st| st == VALID).count() as u32;
                    let wp = p.state.iter().position(|&st| st == FREE);
                    if let Some(wp) = wp.filter(|&w| w > 0) {
                        if p.state[wp..].iter().all(|&st| st == FREE) {
                            let last = (0..wp).rev().find(|&o| p.state[o] != TORN);
                            let (stream, sn) = match last {
                                Some(o) if d.separate => {
                                    (Some((p.ptype[o] as usize).min(ONODE)), p.sn[o])
                                }
                                Some(o) => (Some(0), p.sn[o]),
                                None => (None, 0),
                            };
                            cands.push((stream, sn, c as u32, wp as u32));
                        }
                    }
                    m.stream = 0;
                } else {
                    m.state = C_FREE;
                    m.wp = 0;
                    m.valid = 0;
                    d.free[die as usize].push(c as u32);
                }
            }
            cands.sort_unstable_by_key(|c| std::cmp::Reverse(c.1));
            let mut rest = Vec::new();
            for (stream, _, c, wp) in cands {
                match stream {
                    Some(st) if d.open[die as usize][st] == NONE => {
                        d.open[die as usize][st] = c;
                        let m = &mut d.chunks[c as usize];
                        m.state = C_OPEN;
                        m.wp = wp;
                        m.stream = st as u8;
                    }
                    _ => rest.push((c, wp)),
                }
            }
            for (c, wp) in rest {
                if let Some(st) = (0..nstreams).find(|&st| d.open[die as usize][st] == NONE) {
                    d.open[die as usize][st] = c;
                    let m = &mut d.chunks[c as usize];
                    m.state = C_OPEN;
                    m.wp = wp;
                    m.stream = st as u8;
                }
            }
        }
        Ok(d)
    }

    /// Page states of `img` (for [`Device::unreachable_states`]).
    pub fn image_states(img: &FlashImage) -> Vec<Vec<u8>> {
        img.pages
            .iter()
            .map(|p| p.as_ref().map_or_else(Vec::new, |p| p.state.clone()))
            .collect()
    }

    /// The negative control of the table checks (crash `Variant::reachability` off): after
    /// recovery, every page flash left valid is valid again and every VA the scan found is
    /// in the page table, instead of what the recovered metadata reaches.
    pub fn unreachable_states(
        &mut self,
        states: Vec<Vec<u8>>,
        pt: &std::collections::BTreeMap<u32, u32>,
    ) {
        for (c, st) in states.into_iter().enumerate() {
            if let Some(p) = self.pages[c].as_mut() {
                for (off, s0) in st.into_iter().enumerate() {
                    if s0 == VALID && p.state[off] == INVALID && p.ptype[off] as usize != BACKUP {
                        p.state[off] = VALID;
                        self.chunks[c].valid += 1;
                    }
                }
            }
        }
        for (&va, &ppn) in pt {
            if self.pt_get(va) == NONE {
                self.pt_set(va, ppn);
            }
        }
    }

    /// Mark page `ppn` valid as a page of type `ty` owned by `back`, if it is a readable page
    /// of that type not valid yet (else the reference is broken: false).
    fn mark_valid(&mut self, ppn: u32, ty: usize, back: u32) -> bool {
        let (c, off) = self.split(ppn);
        let Some(p) = self.pages.get_mut(c).and_then(|p| p.as_mut()) else {
            return false;
        };
        if p.state[off] != INVALID || p.ptype[off] as usize != ty {
            return false;
        }
        p.state[off] = VALID;
        p.back[off] = back;
        self.chunks[c].valid += 1;
        true
    }

    /// Load the node at `addr` (PA, or VA through `pt`) of object `s` and its subtree.
    fn load_node(
        &mut self,
        s: u32,
        addr: u32,
        parent: u32,
        pt: &std::collections::BTreeMap<u32, u32>,
        max_va: &mut Option<u32>,
    ) -> u32 {
        let vt = self.o.virtual_tree;
        let (ppn, va) = if vt {
            match pt.get(&addr) {
                Some(&p) => (p, addr),
                None => return NONE,
            }
        } else {
            (addr, NONE)
        };
        let (level, keys, vals) = match self.content_of(ppn) {
            Some(PageContent::Index { level, keys, vals }) => (*level, keys.clone(), vals.clone()),
            _ => return NONE,
        };
        let id = self.nodes.alloc(s, level);
        if !self.mark_valid(ppn, INDEX, id) {
            self.nodes.release(id);
            self.nodes.freed.clear();
            return NONE;
        }
        {
            let n = &mut self.nodes.nodes[id as usize];
            n.parent = parent;
            n.ppn = ppn;
            n.va = va;
        }
        if vt {
            self.pt_set(va, ppn);
            self.va_live += 1;
            *max_va = Some(max_va.map_or(va, |m: u32| m.max(va)));
        }
        for (k, v) in keys.into_iter().zip(vals) {
            if level == 0 {
                if self.mark_valid(leaf_parts(v).0, DATA, s) {
                    let n = &mut self.nodes.nodes[id as usize];
                    n.keys.push(k);
                    n.vals.push(v);
                    self.mapped += 1;
                }
            } else {
                let c = self.load_node(s, v as u32, id, pt, max_va);
                if c != NONE {
                    let n = &mut self.nodes.nodes[id as usize];
                    n.keys.push(k);
                    n.vals.push(c as u64);
                }
            }
        }
        id
    }

    /// Step 2 of §4.4.5.1 on the rebuilt device: for each object of IC_OBJ, re-apply the data
    /// written after its LCS (in content-SN order), drop what lies past its size, and write
    /// its index and its onode back (F33; `Src::Recovery`); then the capacitor flush is
    /// superseded. Its writes may be cut like any others ([`Device::cut_at`]): the flush
    /// stays on flash until the end, and an object whose written-back onode is newer than its
    /// LCS has left IC_OBJ, so recovering again gives the same state.
    pub fn finish_recovery(&mut self, rec: &crate::osd::crash::Recovered) -> Result<(), OsdError> {
        self.recovering = true;
        let ps = self.page as u64;
        let mut ic = Vec::new();
        for (&oid, r) in &rec.objects {
            if !r.ic {
                continue;
            }
            let Some(&s) = self.index.get(&oid) else {
                continue;
            };
            ic.push(s);
            for &(idx, ppn, len) in &r.reapply {
                if self.mark_valid(ppn, DATA, s) {
                    if let Some(old) = self.map_set(s, idx, leaf_val(ppn, len), false) {
                        self.invalidate(leaf_parts(old).0);
                    }
                }
            }
            let keep = self.objs[s as usize].size.div_ceil(ps);
            self.collect_entries(s);
            let doomed: Vec<u64> = self
                .entries_scratch
                .iter()
                .filter(|e| e.0 >= keep)
                .map(|e| e.0)
                .collect();
            for k in doomed {
                if let Some(v) = self.map_remove(s, k) {
                    self.invalidate(leaf_parts(v).0);
                }
            }
            self.set_onode_dirty(s, true);
        }
        let r = self
            .flush_objects(&ic, |_| Src::Recovery)
            .and_then(|_| self.write_pending_onodes());
        for &s in &self.touched {
            let ob = &mut self.objs[s as usize];
            ob.touched = false;
            ob.touched_host = false;
            ob.onode_read = false;
        }
        self.touched.clear();
        self.plan.clear();
        self.cur.clear();
        self.gc_reads.clear();
        self.gc_progs.clear();
        self.gc_erases.clear();
        r?;
        for c in 0..self.pages.len() {
            for off in 0..self.ppc as usize {
                let hit = self.pages[c]
                    .as_ref()
                    .is_some_and(|p| p.state[off] == VALID && p.ptype[off] as usize == BACKUP);
                if hit {
                    self.invalidate(c as u32 * self.ppc + off as u32);
                }
            }
        }
        self.recovering = false;
        Ok(())
    }

    /// The live objects: (object id, slot), in slot order (the objects [`Device::logical`]
    /// lists).
    pub fn live_objects(&self) -> Vec<(u64, u32)> {
        (0..self.objs.len() as u32)
            .filter(|&s| {
                let ob = &self.objs[s as usize];
                ob.live && self.index.get(&ob.oid) == Some(&s)
            })
            .map(|s| (self.objs[s as usize].oid, s))
            .collect()
    }

    /// The size of the object in slot `s`.
    pub fn object_size(&self, s: u32) -> u64 {
        self.objs[s as usize].size
    }

    /// Whether object `oid` is live.
    pub fn has_object(&self, oid: ObjectId) -> bool {
        self.index
            .get(&oid)
            .is_some_and(|&s| self.objs[s as usize].live)
    }

    /// The object in slot `s` as [`Device::logical`] reads it back, without building it:
    /// `f(page index, write-id segments, length)` for each mapped data page in index order
    /// (the segments as recorded, to be cut to `length`: the mapped valid length, or the tail
    /// buffer's fill for the page the tail buffer holds; `None` for a page not valid on flash
    /// or holding no data). Returns the size.
    pub fn read_back(
        &mut self,
        s: u32,
        mut f: impl FnMut(u64, Option<&[(u32, u32, u64)]>, u32),
    ) -> u64 {
        self.collect_entries(s);
        let entries = std::mem::take(&mut self.entries_scratch);
        let ob = &self.objs[s as usize];
        let (tail, fill, size) = (ob.tail_page, ob.tail_fill, ob.size);
        let tail_segs: &[(u32, u32, u64)] = &ob.tail_segs;
        let mut tail_done = tail == u64::MAX;
        for &(k, v) in &entries {
            if !tail_done && tail <= k {
                f(tail, Some(tail_segs), fill);
                tail_done = true;
                if tail == k {
                    continue;
                }
            }
            let (p, l) = leaf_parts(v);
            match self.content_of(p) {
                Some(PageContent::Data(d)) if self.page_valid(p) => f(k, Some(d), l),
                _ => f(k, None, 0),
            }
        }
        if !tail_done {
            f(tail, Some(tail_segs), fill);
        }
        self.entries_scratch = entries;
        size
    }

    /// A 64-bit digest of [`Device::logical`] (SipHash over the same values, computed without
    /// building it): two devices whose digests are equal read back the same objects, up to a
    /// hash collision (the crash harness's second-cut check; on a difference it builds both
    /// to name it).
    pub fn logical_digest(&mut self) -> u64 {
        use std::hash::Hasher;
        let mut h = std::hash::DefaultHasher::new();
        for (oid, s) in self.live_objects() {
            h.write_u64(oid);
            let mut n = 0u64;
            let size = self.read_back(s, |k, segs, l| {
                n += 1;
                h.write_u64(k);
                let Some(segs) = segs else {
                    h.write_u8(1);
                    return;
                };
                h.write_u8(0);
                for &(a, b, w) in segs.iter().filter(|x| x.0 < l) {
                    h.write_u32(a);
                    h.write_u32(b.min(l));
                    h.write_u64(w);
                }
                h.write_u8(2);
            });
            h.write_u64(size);
            h.write_u64(n);
        }
        h.finish()
    }

    /// Every live object as the device would read it back now: size and write ids per data
    /// page (flash pages through the DRAM mapping, cut to the mapped length, and the tail
    /// buffer). Record mode only (else the pages are empty).
    pub fn logical(&mut self) -> std::collections::BTreeMap<u64, LogicalObject> {
        let mut out = std::collections::BTreeMap::new();
        for s in 0..self.objs.len() as u32 {
            let ob = &self.objs[s as usize];
            if !ob.live || self.index.get(&ob.oid) != Some(&s) {
                continue;
            }
            let (oid, size) = (ob.oid, ob.size);
            self.collect_entries(s);
            let mut pages = std::collections::BTreeMap::new();
            for &(k, v) in &self.entries_scratch {
                let (p, l) = leaf_parts(v);
                let segs = match self.content_of(p) {
                    Some(PageContent::Data(d)) if self.page_valid(p) => clip(d, l),
                    _ => vec![(0, 0, u64::MAX)],
                };
                pages.insert(k, segs);
            }
            let ob = &self.objs[s as usize];
            if ob.tail_page != u64::MAX {
                pages.insert(ob.tail_page, clip(&ob.tail_segs, ob.tail_fill));
            }
            out.insert(oid, (size, pages));
        }
        out
    }

    /// Valid counts equal reachability (spec §2 gap 5, §7 item 6): the valid pages are
    /// exactly those the DRAM metadata reaches — each live object's data pages and index
    /// nodes, the onode pages holding a current onode or tombstone — and each chunk's valid
    /// count is its number of valid pages.
    pub fn check_reachability(&mut self) -> Result<(), String> {
        self.check()?;
        // Per page: 1 + the smallest type the metadata reaches it as (0: unreached). A map
        // over the device instead of a sorted list: one pass, no sort (issue 17).
        let npages = self.pages.len() * self.ppc as usize;
        let mut reach = vec![0u8; npages];
        let mut nreach = 0usize;
        let mut all = Vec::new();
        let mut mark = |ppn: u32, ty: usize, reach: &mut Vec<u8>| {
            if let Some(r) = reach.get_mut(ppn as usize) {
                if *r == 0 {
                    nreach += 1;
                    *r = ty as u8 + 1;
                } else {
                    *r = (*r).min(ty as u8 + 1);
                }
            } else {
                // Off the device: counted, so the totals cannot agree.
                nreach += 1;
            }
        };
        for s in 0..self.objs.len() as u32 {
            let ob = &self.objs[s as usize];
            if ob.onode_ppn != NONE {
                mark(ob.onode_ppn, ONODE, &mut reach);
            }
            if !ob.live {
                continue;
            }
            if ob.root != NONE && !self.yaffs {
                self.nodes.all_nodes(ob.root, &mut all);
                for &id in &all {
                    let p = self.nodes.nodes[id as usize].ppn;
                    if p != NONE {
                        mark(p, INDEX, &mut reach);
                    }
                }
            }
            self.collect_entries(s);
            for &(_, v) in &self.entries_scratch {
                mark(leaf_parts(v).0, DATA, &mut reach);
            }
        }
        let (mut nvalid, mut unreached, mut invalid) = (0usize, Vec::new(), Vec::new());
        for c in 0..self.pages.len() {
            let base = c * self.ppc as usize;
            if self.pages[c].is_none() && self.sparse[c].is_none() {
                for off in 0..self.ppc as usize {
                    if reach[base + off] != 0 && invalid.len() < 3 {
                        invalid.push(((base + off) as u32, reach[base + off] as usize - 1));
                    }
                }
                continue;
            }
            for off in 0..self.ppc as usize {
                let r = reach[base + off];
                let Some(p) = self.page_at(c, off) else {
                    continue;
                };
                if p.state == VALID {
                    nvalid += 1;
                    let ty = if self.yaffs {
                        (p.ptype as usize).min(BACKUP)
                    } else {
                        p.ptype as usize
                    };
                    if r != ty as u8 + 1 {
                        if unreached.len() < 3 {
                            unreached.push(((base + off) as u32, ty));
                        }
                        if r != 0 && invalid.len() < 3 {
                            invalid.push(((base + off) as u32, r as usize - 1));
                        }
                    }
                } else if r != 0 && invalid.len() < 3 {
                    invalid.push(((base + off) as u32, r as usize - 1));
                }
            }
        }
        if !unreached.is_empty() || !invalid.is_empty() || nreach != nvalid {
            return Err(format!(
                "{nvalid} valid pages, {nreach} reachable: valid but unreachable {unreached:?}, \
                 reachable but not valid {invalid:?}"
            ));
        }
        Ok(())
    }

    /// The DRAM tables equal the truth derived from flash by reachability (spec §7 item 6):
    /// the global index maps each live object to a flash onode of that object (whose size and
    /// root are the DRAM ones when nothing of it is uncommitted); the page table holds
    /// exactly the VA → PPN of every written node, each page an index page carrying that VA;
    /// every clean node's page holds its DRAM keys and values (record mode); the byte-level
    /// GC table lists only onode pages holding at least its count of stale onodes.
    pub fn check_tables(&mut self) -> Result<(), String> {
        let vt = self.o.virtual_tree;
        let mut live_index = 0;
        for s in 0..self.objs.len() as u32 {
            let ob = &self.objs[s as usize];
            if !ob.live || ob.oid == u64::MAX {
                continue;
            }
            live_index += 1;
            if self.index.get(&ob.oid) != Some(&s) {
                return Err(format!("object {}: not in the global index", ob.oid));
            }
            if ob.onode_ppn == NONE {
                if !ob.uncommitted && !ob.onode_dirty {
                    return Err(format!("object {}: committed without an onode", ob.oid));
                }
                continue;
            }
            if let Some(recs) = self.contents.as_ref().map(|c| c.get(ob.onode_ppn)) {
                let r = match recs {
                    Some(PageContent::Onode(r)) => r.get(ob.onode_idx as usize).copied(),
                    _ => None,
                };
                let Some(r) = r else {
                    return Err(format!("object {}: its onode slot holds nothing", ob.oid));
                };
                if r.oid != ob.oid || r.tomb {
                    return Err(format!("object {}: its onode slot holds {:?}", ob.oid, r));
                }
                if !ob.uncommitted && !ob.onode_dirty && ob.move_from == NONE {
                    let want = self.onode_rec(s, r.csn, false);
                    if (r.size, r.root, r.n_inline) != (want.size, want.root, want.n_inline) {
                        return Err(format!(
                            "object {}: onode on flash {r:?}, in DRAM {want:?}",
                            ob.oid
                        ));
                    }
                }
            }
        }
        if live_index != self.index.len() {
            return Err(format!(
                "global index has {} objects, {live_index} live",
                self.index.len()
            ));
        }
        let mut written = 0u64;
        for id in 0..self.nodes.nodes.len() {
            let n = &self.nodes.nodes[id];
            if n.free || n.ppn == NONE || self.yaffs {
                continue;
            }
            let (c, off) = self.split(n.ppn);
            let p = self
                .page_at(c, off)
                .ok_or("node page in an unopened chunk")?;
            if p.ptype as usize != INDEX || p.state != VALID {
                return Err(format!(
                    "node {id}: page {} is not a valid index page",
                    n.ppn
                ));
            }
            if vt {
                written += 1;
                if self.pt_get(n.va) != n.ppn || p.aux != n.va {
                    return Err(format!(
                        "node {id}: VA {} at {}, page table says {}, OOB VA {}",
                        n.va,
                        n.ppn,
                        self.pt_get(n.va),
                        p.aux
                    ));
                }
            }
            if n.dirty == 0 {
                if let Some(PageContent::Index { level, keys, vals }) = self.content_of(n.ppn) {
                    let dram = self.node_flash_vals(n, vt);
                    // An internal node's first key is only a lower bound (routing never
                    // reads it; the tree refreshes it without rewriting the node).
                    let from = (n.level > 0) as usize;
                    let keys_differ =
                        keys.len() != n.keys.len() || keys.get(from..) != n.keys.get(from..);
                    if *level != n.level || keys_differ || *vals != dram {
                        // A clean parent may hold a child whose new page is not written yet
                        // only in the extent tree's flush; the virtual tree never.
                        let child_dirty = n.level > 0
                            && !vt
                            && n.vals
                                .iter()
                                .any(|&c| self.nodes.nodes[c as usize].dirty > 0);
                        if !child_dirty {
                            return Err(format!(
                                "node {id} (level {}): clean, but its page {} differs \
                                 ({} keys on flash, {} in DRAM; first differing (key, \
                                 value) pair {:?})",
                                n.level,
                                n.ppn,
                                keys.len(),
                                n.keys.len(),
                                keys.iter()
                                    .zip(&n.keys)
                                    .zip(vals.iter().zip(&dram))
                                    .find(|((a, b), (c, d))| a != b || c != d),
                            ));
                        }
                    }
                }
            }
        }
        if vt {
            let mut entries = 0u64;
            for t in self.pt_dir.iter().flatten() {
                entries += t.iter().filter(|&&p| p != NONE).count() as u64;
            }
            if entries != written || self.va_live as u64 != written {
                return Err(format!(
                    "page table: {entries} entries, {} VAs live, {written} written nodes",
                    self.va_live
                ));
            }
        }
        for (&ppn, &(bytes, n)) in &self.gct {
            let r = self.rec_of(ppn);
            if r == NONE || !self.page_valid(ppn) {
                return Err(format!("GC table: page {ppn} is not a valid onode page"));
            }
            let op = &self.opages[r as usize];
            let stale = op.slots.len() as u32 - op.live;
            if n > stale || bytes != n * self.o.onode_bytes {
                return Err(format!(
                    "GC table: page {ppn}: {n} entries ({bytes} B), {stale} stale onodes"
                ));
            }
        }
        Ok(())
    }
}
