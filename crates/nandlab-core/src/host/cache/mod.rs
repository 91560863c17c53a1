//! `host::cache`: the SSD as a write-back cache in front of a disk (FlexECC, Huang et al.,
//! ATC'14, §3.2–§3.4; `[cache]` section). A [`RequestSource`] adapter: it reads a
//! primary-storage trace and emits the 4 KiB (one flash page) operations the cache manager
//! sends to the SSD, each tagged with its [`CacheOp`]. The SSD's LPN is the cache slot.
//!
//! ```text
//!  primary trace ──► CacheSource ─────────── tagged page ops (LPN = slot) ──► engine ──► SSD
//!  (R/W, bytes)      │ LRU list over slots                                    │ tag → scheme,
//!                    │ block → slot map (O(slots))                            │ latency per tag
//!                    │ read hit   → HostRead(slot) at t                       │
//!                    │ read miss  → [disk read, disk_us] → CleanWrite(slot) at t + disk_us
//!                    │ write      → DirtyWrite(slot) at t   (write-through: CleanWrite)
//!                    │ evict dirty LRU victim → FlushRead(victim) at t (disk write: not an SSD op)
//!                    │ every flush_period_s of trace time: FlushRead(every dirty slot), clean
//!                    │ (all at once, or one every 1/flush_max_per_s s)
//!                    └ bypass (optional, Flashcache, fn. 4): non-4 KiB or long sequential
//!                      requests → disk for their uncached blocks, no SSD op
//!                                                      backend disk (fixed latency, unbounded
//!                                                      concurrency; counted here and in the engine)
//! ```
//!
//! Output times never decrease: emissions wait, ordered by (time, sequence), until the next
//! trace request is later (three queues: at the current time, a disk delay later, and a heap
//! for the rest). Times are trace time (the engine scales them by `host.time_scale`); the
//! disk delay is a device latency, so it enters the heap divided by the time scale and is
//! `disk_us` after scaling. The flush period is trace time and so stretches with the scale.
//!
//! What it does **not** model: the disk's own queueing and seek (every access costs `disk_us`,
//! any number in parallel; §3.4 uses the same average); the read-fill of a partial-block write
//! (a write of part of a block dirties the whole block without reading it); the
//! cache manager's own CPU time; host-visible end-to-end latency (the metric is the SSD's, §4.2:
//! a miss's disk time is outside it). A block whose populate (CleanWrite) is still pending is
//! never chosen as an eviction victim (the next LRU block is), so every HostRead finds its data.
//!
//! Memory: O(cache slots used) (slot arrays that grow as slots are first used, an
//! open-addressing block map at most half full, the queues of pending emissions), whatever the
//! trace length; a cache larger than the trace's footprint costs only what is used.

use std::collections::{BinaryHeap, VecDeque};

use serde::{Deserialize, Serialize};

use super::RequestSource;
use crate::config::error::ConfigError;
use crate::trace::{HostRequest, Op, TraceError};

/// The cache manager's operation behind an SSD request (FlexECC §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum CacheOp {
    /// Not from a cache manager (plain replay).
    #[default]
    None = 0,
    /// A host read served by the cache (hit).
    HostRead = 1,
    /// A read of a dirty block to write it back to disk (eviction or periodic flush).
    FlushRead = 2,
    /// A host write into the cache: the cached copy is the only up-to-date one.
    DirtyWrite = 3,
    /// A write of data that has a copy on disk (miss populate, refill, prefetch,
    /// write-through).
    CleanWrite = 4,
}

impl CacheOp {
    /// All tags, in report order.
    pub const ALL: [CacheOp; 5] = [
        CacheOp::None,
        CacheOp::HostRead,
        CacheOp::FlushRead,
        CacheOp::DirtyWrite,
        CacheOp::CleanWrite,
    ];
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            CacheOp::None => "untagged",
            CacheOp::HostRead => "host_read",
            CacheOp::FlushRead => "flush_read",
            CacheOp::DirtyWrite => "dirty_write",
            CacheOp::CleanWrite => "clean_write",
        }
    }
    /// The SSD operation of the tag.
    pub fn op(self) -> Op {
        match self {
            CacheOp::HostRead | CacheOp::FlushRead | CacheOp::None => Op::Read,
            CacheOp::DirtyWrite | CacheOp::CleanWrite => Op::Write,
        }
    }
}

/// `[cache]`: the SSD-as-cache front end (off when the section is absent).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Cache size, bytes (a multiple of the page size is used; the rest is dropped); 0 = use
    /// `size_fraction_of_footprint`. FlexECC §4.1: 30 GB.
    pub size_bytes: u64,
    /// Cache size as a fraction of the trace's footprint (distinct pages touched), in (0, 1];
    /// 0 = use `size_bytes`. The spec's scaling: 1/12 (30 GB of a 360 GB working set).
    pub size_fraction_of_footprint: f64,
    /// Period of the write-back of every dirty block, s of trace time (stretched by
    /// `host.time_scale`); 0 = no periodic flush (only evictions write back). §3.2: "e.g.,
    /// every 5 minutes".
    pub flush_period_s: f64,
    /// Largest rate of a periodic flush's write-backs, blocks per s of trace time: the dirty
    /// blocks of one flush are written back one every 1 / rate s (a block written again
    /// meanwhile is written back with its new data); 0 = all at the period boundary (a burst).
    /// The paper flushes "at a configurable rate" (§3.2) without giving one.
    pub flush_max_per_s: f64,
    /// Write-through: host writes go to disk and into the cache as clean data (CleanWrite);
    /// no block is ever dirty (§3.2).
    pub write_through: bool,
    /// Backend disk access latency, µs (§3.4: 1.5 ms average, from \[37\]).
    pub disk_us: f64,
    /// Flashcache's bypass (FlexECC footnote 4): requests that are not one cache block
    /// (4 KiB), and requests of a sequential run longer than `bypass_seq_threshold_bytes`, go to
    /// the disk for the blocks that are not cached (no populate, write-around); cached blocks
    /// are served as usual, so the cache stays coherent. Off by default (the spec's runs; our
    /// traces are mostly 8 KiB, which would all bypass).
    pub bypass: bool,
    /// Sequential-run length beyond which requests bypass, bytes (Flashcache `skip_seq_thresh`;
    /// footnote 4: 128 KB). A request is sequential when it starts where the previous one ended.
    pub bypass_seq_threshold_bytes: u64,
}

/// The shortest periodic flush (`cache.flush_period_s`), s: 1 ns, the simulator's time unit (a
/// shorter one would round to 0, which means no periodic flush). Any period costs at most one
/// flush per host request: rounds with nothing dirty are skipped in one step.
pub const MIN_FLUSH_PERIOD_S: f64 = 1e-9;

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            size_bytes: 0,
            size_fraction_of_footprint: 0.0,
            flush_period_s: 300.0,
            flush_max_per_s: 0.0,
            write_through: false,
            disk_us: 1500.0,
            bypass: false,
            bypass_seq_threshold_bytes: 128 * 1024,
        }
    }
}

impl CacheConfig {
    /// Check ranges.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the `cache.` key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value: String, msg: &str| ConfigError::Invalid {
            key: format!("cache.{key}"),
            value,
            msg: msg.into(),
        };
        let f = self.size_fraction_of_footprint;
        if !(f.is_finite() && (0.0..=1.0).contains(&f)) {
            return Err(bad(
                "size_fraction_of_footprint",
                f.to_string(),
                "must be in (0, 1] (0 = use cache.size_bytes)",
            ));
        }
        if (self.size_bytes == 0) == (f == 0.0) {
            return Err(bad(
                "size_bytes",
                self.size_bytes.to_string(),
                "give exactly one of cache.size_bytes (> 0) and cache.size_fraction_of_footprint \
                 (in (0, 1])",
            ));
        }
        if !(self.flush_period_s.is_finite()
            && (self.flush_period_s == 0.0 || self.flush_period_s >= MIN_FLUSH_PERIOD_S))
        {
            return Err(bad(
                "flush_period_s",
                self.flush_period_s.to_string(),
                "must be 0 (no periodic flush) or at least 1e-9 s (the simulator's time unit)",
            ));
        }
        if !(self.flush_max_per_s.is_finite() && self.flush_max_per_s >= 0.0) {
            return Err(bad(
                "flush_max_per_s",
                self.flush_max_per_s.to_string(),
                "must be >= 0 blocks/s (0 = write back all at once)",
            ));
        }
        if !(self.disk_us.is_finite() && self.disk_us >= 0.0 && self.disk_us <= 1e9) {
            return Err(bad(
                "disk_us",
                self.disk_us.to_string(),
                "must be in [0, 1e9] µs",
            ));
        }
        Ok(())
    }

    /// Backend disk latency, ns.
    pub fn disk_ns(&self) -> u64 {
        (self.disk_us * 1000.0).round() as u64
    }

    /// Cache slots (pages of `page_size_bytes`) for a trace touching `footprint_pages` pages
    /// (at least 1).
    pub fn slots(&self, page_size_bytes: u64, footprint_pages: u64) -> u64 {
        let n = if self.size_bytes > 0 {
            self.size_bytes / page_size_bytes
        } else {
            (footprint_pages as f64 * self.size_fraction_of_footprint).floor() as u64
        };
        n.max(1)
    }
}

/// Cache counters (FlexECC Table 1 is `ssd_read_share`).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct CacheCounters {
    /// Primary-trace requests read.
    pub requests: u64,
    /// Page reads that hit.
    pub read_hits: u64,
    /// Page reads that missed (each a disk read and a CleanWrite).
    pub read_misses: u64,
    /// Page writes to a cached block.
    pub write_hits: u64,
    /// Page writes to an uncached block.
    pub write_misses: u64,
    /// Clean LRU victims dropped.
    pub evictions_clean: u64,
    /// Dirty LRU victims written back (each a FlushRead).
    pub evictions_dirty: u64,
    /// Periodic flushes run.
    pub flush_rounds: u64,
    /// Blocks written back by periodic flushes (each a FlushRead).
    pub flushed_blocks: u64,
    /// Populates cancelled because the block was written before its disk read returned.
    pub populates_cancelled: u64,
    /// Backend disk reads (misses).
    pub disk_reads: u64,
    /// Backend disk writes (write-backs; write-through writes).
    pub disk_writes: u64,
    /// SSD operations emitted, by tag (`[untagged, host_read, flush_read, dirty_write,
    /// clean_write]`).
    pub ops_by_tag: [u64; 5],
    /// Requests that bypassed the cache (`cache.bypass`).
    pub bypassed_requests: u64,
    /// Uncached blocks of those requests served by the disk alone (also in `disk_reads` /
    /// `disk_writes`).
    pub bypassed_pages: u64,
}

impl CacheCounters {
    /// Share of SSD operations that are reads (HostRead + FlushRead), % (Table 1).
    pub fn ssd_read_share_percent(&self) -> Option<f64> {
        let t: u64 = self.ops_by_tag.iter().sum();
        (t > 0).then(|| 100.0 * (self.ops_by_tag[1] + self.ops_by_tag[2]) as f64 / t as f64)
    }
}

const NIL: u32 = u32::MAX;
/// Primary requests the cache manager reads ahead of the one it processes (prefetch distance).
const AHEAD: usize = 8;
/// Heap tag of a miss's populate (emitted as [`CacheOp::CleanWrite`] unless cancelled).
const POPULATE: u8 = 5;
/// Heap tag of a spread periodic write-back (emitted as [`CacheOp::FlushRead`] if the slot
/// still holds the block and it is dirty).
const SPREAD_FLUSH: u8 = 6;

/// The block → slot map: open addressing with linear probing over (block, slot) pairs, one
/// 16-byte entry per probe (keys are block numbers, not adversarial; Fibonacci hashing).
///
/// Evictions do not delete: an entry whose slot now holds another block is *stale*, and the
/// cache checks the slot's block on every lookup ([`CacheSource::lookup`]). A random access
/// per eviction to delete the victim's entry (a cache miss, ~6 % of a cached replay) is
/// saved; a block cached again reuses its old entry. When live and stale entries fill half
/// the table it is rebuilt from the slots' blocks (sequential, amortised over at least as
/// many insertions as slots), at least 4 entries per slot used, so memory is O(slots used).
struct BlockMap {
    /// (block, slot); `EMPTY_KEY` = free.
    entries: Vec<(u64, u32)>,
    /// 64 − log2(entries.len()).
    shift: u32,
    /// Entries in use (live and stale).
    len: usize,
}

/// Not a block number (blocks are byte offsets / page size < 2^64 / 512).
const EMPTY_KEY: u64 = u64::MAX;

impl BlockMap {
    fn new() -> BlockMap {
        BlockMap {
            entries: vec![(EMPTY_KEY, NIL); 16],
            shift: 64 - 4,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, blk: u64) -> usize {
        (blk.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot `blk` was last mapped to (possibly stale), if any.
    #[inline]
    fn get(&self, blk: u64) -> Option<u32> {
        let mask = self.entries.len() - 1;
        let mut i = self.home(blk);
        loop {
            let (k, v) = self.entries[i];
            if k == blk {
                return Some(v);
            }
            if k == EMPTY_KEY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Hint: `blk` is looked up soon (its home entry; most lookups end there).
    #[inline(always)]
    fn prefetch(&self, blk: u64) {
        crate::prefetch::slice(&self.entries, self.home(blk));
    }

    /// Map `blk` to `slot` (replacing its stale entry, if any). Returns whether the table is
    /// now half full ([`BlockMap::rebuild`] is due).
    #[inline]
    fn insert(&mut self, blk: u64, slot: u32) -> bool {
        let mask = self.entries.len() - 1;
        let mut i = self.home(blk);
        loop {
            let k = self.entries[i].0;
            if k == blk {
                self.entries[i].1 = slot;
                return false;
            }
            if k == EMPTY_KEY {
                break;
            }
            i = (i + 1) & mask;
        }
        self.entries[i] = (blk, slot);
        self.len += 1;
        self.len * 2 >= self.entries.len()
    }

    /// Rebuild from the live entries: `blocks[s]` is the block slot `s` holds.
    #[cold]
    fn rebuild(&mut self, blocks: impl ExactSizeIterator<Item = u64>) {
        let n = blocks.len();
        let cap = (n * 4).max(16).next_power_of_two().max(self.entries.len());
        self.entries.clear();
        self.entries.resize(cap, (EMPTY_KEY, NIL));
        self.shift = 64 - cap.trailing_zeros();
        self.len = 0;
        let mask = cap - 1;
        for (s, blk) in blocks.enumerate() {
            let mut i = self.home(blk);
            while self.entries[i].0 != EMPTY_KEY {
                i = (i + 1) & mask;
            }
            self.entries[i] = (blk, s as u32);
            self.len += 1;
        }
    }
}

/// One cache slot's state (see [`CacheSource`]).
#[derive(Clone, Copy)]
struct Slot {
    /// The block cached in the slot.
    block: u64,
    /// Sequence number of the slot's pending populate (CleanWrite), 0 = none.
    populate: u64,
    /// Trace time the slot's data is in the cache (its populate's time).
    ready: u64,
}

/// A pending emission: (time, sequence, slot, tag) ordered by time then sequence.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Emit {
    t: u64,
    seq: u64,
    slot: u32,
    tag: u8,
}

/// The cache manager as a request source (see the module documentation).
pub struct CacheSource<S: RequestSource> {
    inner: S,
    page: u64,
    slots: u32,
    used: u32,
    disk_trace_ns: u64,
    flush_period_ns: u64,
    /// Spacing of a spread flush's write-backs, ns of trace time (0 = burst).
    flush_gap_ns: u64,
    /// Sequence number of the slot's pending spread write-back, 0 = none (per used slot, with
    /// `flush_spread`; empty otherwise).
    flush_seq: Vec<u64>,
    /// `cache.flush_max_per_s > 0`.
    flush_spread: bool,
    write_through: bool,
    /// `cache.bypass`, its threshold (bytes), the end of the previous request and the length
    /// of the sequential run it ends (bytes).
    bypass: bool,
    bypass_seq_bytes: u64,
    last_end: u64,
    seq_run: u64,
    map: BlockMap,
    /// Per used slot (slots `0..used`; the arrays grow as slots are first used, so memory is
    /// O(slots used)): block, populate and ready time in one 24-byte record, LRU links and
    /// dirty flags beside.
    sl: Vec<Slot>,
    /// Per used slot: LRU links (towards the MRU end, towards the LRU end), `NIL` at the ends;
    /// apart from the records so that walking the LRU end touches 8 bytes per slot.
    lru: Vec<(u32, u32)>,
    dirty: Vec<bool>,
    /// Slots dirty now.
    dirty_count: u64,
    /// Slots made dirty since the last periodic flush (and, with spread flushes, those still
    /// dirty from before), possibly repeated or clean again: a flush visits these, in slot
    /// order, instead of every slot.
    dirtied: Vec<u32>,
    head: u32,
    tail: u32,
    /// Emissions at the time being processed (times never decrease in push order).
    now_q: VecDeque<Emit>,
    /// Miss populates (time + the constant disk delay: never decrease in push order).
    delay_q: VecDeque<Emit>,
    /// Anything else (hits on a block whose populate is pending).
    heap: BinaryHeap<std::cmp::Reverse<Emit>>,
    /// The trace time being processed.
    cur_t: u64,
    seq: u64,
    /// Primary requests read ahead (at most [`AHEAD`]), in order; the front is the next.
    ahead: VecDeque<HostRequest>,
    /// The inner source ended (or failed: `err`).
    inner_end: bool,
    /// An error of the inner source, returned once the requests before it are processed.
    err: Option<TraceError>,
    next_flush: u64,
    last_tag: CacheOp,
    /// Counters.
    pub counters: CacheCounters,
}

impl<S: RequestSource> CacheSource<S> {
    /// A cold cache of `slots` pages of `page_size_bytes` over `inner`; `time_scale` is
    /// `host.time_scale` (the disk delay is divided by it so that it is `cache.disk_us` after
    /// the engine scales arrivals).
    pub fn new(
        inner: S,
        cfg: &CacheConfig,
        slots: u64,
        page_size_bytes: u64,
        time_scale: f64,
    ) -> CacheSource<S> {
        let n = slots.min(u32::MAX as u64 - 1) as u32;
        let flush_period_ns = (cfg.flush_period_s * 1e9).round() as u64;
        CacheSource {
            inner,
            page: page_size_bytes,
            slots: n,
            used: 0,
            disk_trace_ns: (cfg.disk_ns() as f64 / time_scale).round() as u64,
            flush_period_ns,
            flush_gap_ns: if cfg.flush_max_per_s > 0.0 {
                ((1e9 / cfg.flush_max_per_s).round() as u64).max(1)
            } else {
                0
            },
            flush_seq: Vec::new(),
            flush_spread: cfg.flush_max_per_s > 0.0,
            write_through: cfg.write_through,
            bypass: cfg.bypass,
            bypass_seq_bytes: cfg.bypass_seq_threshold_bytes,
            last_end: u64::MAX,
            seq_run: 0,
            map: BlockMap::new(),
            sl: Vec::new(),
            lru: Vec::new(),
            dirty: Vec::new(),
            dirty_count: 0,
            dirtied: Vec::new(),
            head: NIL,
            tail: NIL,
            now_q: VecDeque::with_capacity(1024),
            delay_q: VecDeque::with_capacity(1024),
            heap: BinaryHeap::with_capacity(64),
            cur_t: 0,
            seq: 1,
            ahead: VecDeque::with_capacity(AHEAD),
            inner_end: false,
            err: None,
            next_flush: if flush_period_ns > 0 {
                flush_period_ns
            } else {
                u64::MAX
            },
            last_tag: CacheOp::None,
            counters: CacheCounters::default(),
        }
    }

    /// Cache slots (the SSD's logical pages).
    pub fn slots(&self) -> u64 {
        self.slots as u64
    }

    /// Blocks cached and dirty now.
    pub fn dirty_blocks(&self) -> u64 {
        self.dirty_count
    }

    /// Mark slot `s` clean.
    #[inline]
    fn set_clean(&mut self, s: usize) {
        if self.dirty[s] {
            self.dirty[s] = false;
            self.dirty_count -= 1;
        }
    }

    #[inline]
    fn emit(&mut self, t: u64, slot: u32, tag: CacheOp) -> u64 {
        self.emit_raw(t, slot, tag as u8)
    }

    #[inline]
    fn emit_raw(&mut self, t: u64, slot: u32, tag: u8) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        let e = Emit { t, seq, slot, tag };
        // Three queues instead of one heap: most emissions are at the time being processed or
        // a constant disk delay later, so they arrive in order (no heap operation per op).
        if t == self.cur_t {
            self.now_q.push_back(e);
        } else if tag == POPULATE {
            debug_assert!(self.delay_q.back().is_none_or(|b| b.t <= t));
            self.delay_q.push_back(e);
        } else {
            self.heap.push(std::cmp::Reverse(e));
        }
        seq
    }

    /// The earliest pending emission (by time, then sequence) and its queue.
    #[inline]
    fn peek_min(&self) -> Option<(u8, Emit)> {
        let mut best: Option<(u8, Emit)> = self.now_q.front().map(|e| (0, *e));
        if let Some(&e) = self.delay_q.front() {
            if best.is_none_or(|(_, b)| (e.t, e.seq) < (b.t, b.seq)) {
                best = Some((1, e));
            }
        }
        if let Some(&std::cmp::Reverse(e)) = self.heap.peek() {
            if best.is_none_or(|(_, b)| (e.t, e.seq) < (b.t, b.seq)) {
                best = Some((2, e));
            }
        }
        best
    }

    #[inline]
    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.lru[s as usize].0, self.lru[s as usize].1);
        if p != NIL {
            self.lru[p as usize].1 = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.lru[n as usize].0 = p;
        } else {
            self.tail = p;
        }
    }

    /// Put `s` at the MRU end (head).
    #[inline]
    fn push_front(&mut self, s: u32) {
        self.lru[s as usize].0 = NIL;
        self.lru[s as usize].1 = self.head;
        if self.head != NIL {
            self.lru[self.head as usize].0 = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    /// A slot for a new block at trace time `t`: a never-used one, else the LRU block (a dirty
    /// victim is written back first: FlushRead).
    fn allocate(&mut self, blk: u64, t: u64) -> u32 {
        let s = if self.used < self.slots {
            self.used += 1;
            self.sl.push(Slot {
                block: 0,
                populate: 0,
                ready: 0,
            });
            self.lru.push((NIL, NIL));
            self.dirty.push(false);
            if self.flush_spread {
                self.flush_seq.push(0);
            }
            self.used - 1
        } else {
            // The LRU block whose data is in the cache (a pending populate is skipped).
            let mut v = self.tail;
            while self.sl[v as usize].populate != 0 && self.lru[v as usize].0 != NIL {
                v = self.lru[v as usize].0;
            }
            self.unlink(v);
            // The victim's map entry goes stale (see `BlockMap`).
            self.prefetch_victims();
            if let Some(f) = self.flush_seq.get_mut(v as usize) {
                *f = 0;
            }
            if self.dirty[v as usize] {
                self.counters.evictions_dirty += 1;
                self.counters.disk_writes += 1;
                self.emit(t, v, CacheOp::FlushRead);
                self.set_clean(v as usize);
            } else {
                self.counters.evictions_clean += 1;
            }
            // A victim with a pending populate (all were pending): cancel it.
            if self.sl[v as usize].populate != 0 {
                self.sl[v as usize].populate = 0;
                self.counters.populates_cancelled += 1;
            }
            v
        };
        self.sl[s as usize].block = blk;
        if self.map.insert(blk, s) {
            self.map.rebuild(self.sl.iter().map(|x| x.block));
        }
        self.sl[s as usize].ready = t;
        self.push_front(s);
        s
    }

    /// Write back every dirty block at trace time `t`, in slot order. Visits the slots made
    /// dirty since the last flush (`dirtied`), not every slot: a flush costs what it writes
    /// back, so short periods stay cheap.
    fn flush_all(&mut self, t: u64) {
        self.cur_t = t;
        self.counters.flush_rounds += 1;
        let mut list = std::mem::take(&mut self.dirtied);
        list.sort_unstable();
        list.dedup();
        list.retain(|&s| self.dirty[s as usize]);
        if self.flush_gap_ns > 0 {
            // Spread write-backs: the blocks stay dirty until theirs runs, so they stay listed.
            for (k, &s) in list.iter().enumerate() {
                let seq = self.emit_raw(t + k as u64 * self.flush_gap_ns, s, SPREAD_FLUSH);
                self.flush_seq[s as usize] = seq;
            }
            self.dirtied = list;
            return;
        }
        for &s in &list {
            self.set_clean(s as usize);
            self.counters.flushed_blocks += 1;
            self.counters.disk_writes += 1;
            self.emit(t, s, CacheOp::FlushRead);
        }
        list.clear();
        self.dirtied = list;
    }

    /// Hint: `r` is processed after the requests read ahead before it. Prefetch the block
    /// map entries of its first blocks: random accesses into a table larger than the core's
    /// cache (with the victim's, below, ~15 % of a cached replay's time). Changes nothing.
    #[inline]
    fn prefetch(&self, r: &HostRequest) {
        let first = r.offset_bytes / self.page;
        let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / self.page;
        for blk in first..=last.min(first + 7) {
            self.map.prefetch(blk);
        }
    }

    /// Hint after an eviction (whose unlink touched the new LRU tail's links): the victim
    /// after the next is most likely the tail's predecessor, whose links and record the next
    /// eviction touches: prefetch them. Changes nothing.
    #[inline]
    fn prefetch_victims(&self) {
        if self.tail != NIL {
            let p = self.lru[self.tail as usize].0;
            if p != NIL {
                crate::prefetch::slice(&self.lru, p as usize);
                crate::prefetch::slice(&self.sl, p as usize);
            }
        }
    }

    /// The slot caching `blk`, if any (the map's entry, unless stale).
    #[inline]
    fn lookup(&self, blk: u64) -> Option<u32> {
        self.map
            .get(blk)
            .filter(|&s| self.sl.get(s as usize).is_some_and(|x| x.block == blk))
    }

    /// Turn one primary request into emissions.
    fn process(&mut self, r: HostRequest) {
        self.counters.requests += 1;
        let t = r.arrival_ns;
        self.cur_t = t;
        let first = r.offset_bytes / self.page;
        let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / self.page;
        let bypass = self.bypass && {
            self.seq_run = if r.offset_bytes == self.last_end {
                self.seq_run.saturating_add(r.len_bytes)
            } else {
                r.len_bytes
            };
            self.last_end = r.offset_bytes.saturating_add(r.len_bytes);
            r.len_bytes != self.page || self.seq_run > self.bypass_seq_bytes
        };
        if bypass {
            self.counters.bypassed_requests += 1;
        }
        for blk in first..=last {
            if bypass && r.op != Op::Trim && self.lookup(blk).is_none() {
                // Uncached block of a bypassed request: the disk alone serves it.
                self.counters.bypassed_pages += 1;
                if r.op == Op::Read {
                    self.counters.disk_reads += 1;
                } else {
                    self.counters.disk_writes += 1;
                }
                continue;
            }
            match (r.op, self.lookup(blk)) {
                // Not reached: a [cache] config refuses ftl.trim, so readers skip discards.
                (Op::Trim, _) => {}
                (Op::Read, Some(s)) => {
                    self.counters.read_hits += 1;
                    self.unlink(s);
                    self.push_front(s);
                    let at = self.sl[s as usize].ready.max(t);
                    self.emit(at, s, CacheOp::HostRead);
                }
                (Op::Read, None) => {
                    self.counters.read_misses += 1;
                    self.counters.disk_reads += 1;
                    let s = self.allocate(blk, t);
                    let at = t + self.disk_trace_ns;
                    let seq = self.emit_raw(at, s, POPULATE);
                    self.sl[s as usize].populate = seq;
                    self.sl[s as usize].ready = at;
                }
                (Op::Write, hit) => {
                    let s = match hit {
                        Some(s) => {
                            self.counters.write_hits += 1;
                            self.unlink(s);
                            self.push_front(s);
                            s
                        }
                        None => {
                            self.counters.write_misses += 1;
                            self.allocate(blk, t)
                        }
                    };
                    if self.sl[s as usize].populate != 0 {
                        // The host's data supersedes the disk copy still on its way.
                        self.sl[s as usize].populate = 0;
                        self.counters.populates_cancelled += 1;
                    }
                    self.sl[s as usize].ready = t;
                    if self.write_through {
                        self.counters.disk_writes += 1;
                        self.emit(t, s, CacheOp::CleanWrite);
                    } else {
                        if !self.dirty[s as usize] {
                            self.dirty[s as usize] = true;
                            self.dirty_count += 1;
                            self.dirtied.push(s);
                        }
                        self.emit(t, s, CacheOp::DirtyWrite);
                    }
                }
            }
        }
    }
}

impl<S: RequestSource> RequestSource for CacheSource<S> {
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        loop {
            // Read ahead (prefetching what each request will touch), so that a request's
            // block-map entries are in cache by the time it is processed.
            while self.ahead.len() < AHEAD && !self.inner_end {
                match self.inner.next_request() {
                    Ok(Some(r)) => {
                        self.prefetch(&r);
                        self.ahead.push_back(r);
                    }
                    Ok(None) => self.inner_end = true,
                    Err(e) => {
                        self.err = Some(e);
                        self.inner_end = true;
                    }
                }
            }
            if self.ahead.is_empty() {
                // Every request before the error is processed: fail where a source that
                // reads one request at a time would.
                if let Some(e) = self.err.take() {
                    return Err(e);
                }
            }
            let inner_done = self.ahead.is_empty();
            let next_in = self.ahead.front().map_or(u64::MAX, |r| r.arrival_ns);
            // Periodic flushes due before the next trace request (none after the trace ends).
            if !inner_done && self.next_flush <= next_in {
                if self.dirty_count == 0 {
                    // Nothing to write back, and nothing is dirtied before the next request:
                    // every round up to it is empty. Count them and skip to the last one (a
                    // period of nanoseconds costs no more than one of minutes).
                    let p = self.flush_period_ns.max(1);
                    let k = (next_in - self.next_flush) / p + 1;
                    let last = self.next_flush + (k - 1) * p;
                    self.counters.flush_rounds += k;
                    self.cur_t = last;
                    self.next_flush = last.saturating_add(p);
                    continue;
                }
                let t = self.next_flush;
                self.next_flush = self.next_flush.saturating_add(self.flush_period_ns);
                self.flush_all(t);
                continue;
            }
            if let Some((q, e)) = self.peek_min() {
                if e.t < next_in || inner_done {
                    match q {
                        0 => {
                            self.now_q.pop_front();
                        }
                        1 => {
                            self.delay_q.pop_front();
                        }
                        _ => {
                            self.heap.pop();
                        }
                    }
                    let tag = if e.tag == POPULATE {
                        // A miss's populate: dropped when the block was written or evicted
                        // before its disk read returned.
                        if self.sl[e.slot as usize].populate != e.seq {
                            continue;
                        }
                        self.sl[e.slot as usize].populate = 0;
                        CacheOp::CleanWrite
                    } else if e.tag == SPREAD_FLUSH {
                        // A spread write-back: dropped when the slot was evicted (and written
                        // back then) or a later flush took it over, or the block is clean.
                        let s = e.slot as usize;
                        if self.flush_seq[s] != e.seq || !self.dirty[s] {
                            continue;
                        }
                        self.flush_seq[s] = 0;
                        self.set_clean(s);
                        self.counters.flushed_blocks += 1;
                        self.counters.disk_writes += 1;
                        CacheOp::FlushRead
                    } else {
                        CacheOp::ALL[e.tag as usize]
                    };
                    self.counters.ops_by_tag[tag as usize] += 1;
                    self.last_tag = tag;
                    return Ok(Some(HostRequest {
                        arrival_ns: e.t,
                        op: tag.op(),
                        offset_bytes: e.slot as u64 * self.page,
                        len_bytes: self.page,
                    }));
                }
            }
            match self.ahead.pop_front() {
                Some(r) => self.process(r),
                None => return Ok(None),
            }
        }
    }

    fn tag(&self) -> CacheOp {
        self.last_tag
    }

    fn describe(&self) -> serde_json::Value {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests;
