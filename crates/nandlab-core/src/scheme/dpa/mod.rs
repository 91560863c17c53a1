//! `dpa`: DPA-DRM, the data-redundancy management of Guo's data-pattern-aware error prevention
//! (Guo's thesis ch. 2, §2.5 "DPA-DRM: Data-Redundancy Management" and §2.6.2 "Overheads of
//! DPA"; spec `shared/specs/dpa-flexlevel.md` §1.4, §1.6, §3).
//!
//! DPA-PPU ([`crate::dpa::codec`]) gives every 4 or 8 B chunk of a page a 6-bit polynomial tag
//! (§2.4). What does not fit the out-of-band area goes to *redundant pages*, and those cost
//! flash time. This scheme models that cost, not the data: it never looks at page contents.
//! The data profile (path-A share: pages that the de-correlator takes, which carry no tags;
//! `nandlab dpa analyze --json` prints it as `path_a_share`) comes from the parameters.
//!
//! * **Tag overflow per data page (§2.4, §2.6.1; spec §1.4).** Tags are `page/chunk × 6` bits
//!   (384 B per 4 KiB page at 8 B chunks, 768 B at 4 B). The OOB holds `oob_tag_bytes` of them
//!   (112 B: BCH(4312, 4208, 8) covers 512 B data + 14 B tags per sector, 8 sectors). The rest
//!   is the overflow: 272 B (8 B chunks, "one third in OOB") or 656 B (4 B, "one seventh").
//! * **Redundant pages (§2.5, Fig. 8).** The overflow of a written data page joins an *open*
//!   redundant page in DRAM; a redundant page holds `⌊page / overflow⌋` data pages' tags
//!   (15 at 8 B, 6 at 4 B). A DRAM map (one u32 per LPN) names each data page's redundant page.
//!   Redundant pages are hidden LPNs above the logical capacity ([`Scheme::hidden_pages`]), in
//!   their own blocks (stream `redundant_stream`), so GC moves and erases count them.
//! * **RAID-5 (§2.5, §2.6.2).** Every `stripe_pages` (4) redundant pages programmed to a plane
//!   are followed by one parity page on the same plane and stream (so in the same block, by
//!   physical page number, unless the block filled in between).
//! * **Delayed write (§2.5, \[37\]).** A full redundant page waits in the DRAM buffer and is
//!   programmed at idle time ([`Scheme::on_idle`], open loop); when the buffer already holds
//!   `buffer_pages` full pages, the oldest is written at once and the host write that filled
//!   the page waits for it (counted as a forced flush).
//! * **Parallel read (§2.5).** A host read of a tagged data page also reads its redundant page,
//!   in parallel, from a different die, unless the redundant page is in DRAM (open, or waiting
//!   in the buffer: a buffer hit) or in the redundant-page cache (LRU of `cache_pages` pages:
//!   a cache hit). The request completes when both reads are done.
//! * **Invalid tags and compaction.** Overwriting a data page invalidates its tags in its old
//!   redundant page. A redundant page whose tags are all invalid is unmapped (space GC
//!   reclaims; no flash time). One whose valid share falls to `compact_live_fraction` or less
//!   is compacted: it is read (background) and unmapped, and its valid tags join the open
//!   redundant page again (so they cost a program when that page is written). A parity page
//!   is unmapped when every page of its stripe is.
//!
//! Readings the thesis leaves open (R), each a parameter where it matters:
//! * R1 "Different chip": a different *die* (nandlab's unit of parallelism). The data pages of
//!   die d keep their tags in redundant pages programmed on die (d + dies/2) mod dies (another
//!   channel when there are two or more), rotating over its planes. This needs the plane of a
//!   data page before it is programmed: static (CWDP) allocation. Dynamic allocation, a
//!   single-die device, closed loop with delayed writes, the DRAM data cache, discards
//!   (`ftl.trim`) or `[regions]` are errors naming what to use (`validate_device`).
//! * R2 A data page's overflow never straddles two redundant pages (one read per data page):
//!   a redundant page holds ⌊page / overflow⌋ data pages, so the write floor is
//!   (1 / ⌊page / overflow⌋) × (1 + 1/stripe): 8.33 % at 8 B (272 B), 20.8 % at 4 B (656 B,
//!   6 × 656 = 3936 B used of 4096) against the spec's 8.3 % / 20 %, and the thesis's +6 %.
//! * R3 Path-A pages (de-correlated, one correlation bit, no tags) are every
//!   (1 / `path_a_share`)-th page written (a deterministic accumulator, no random stream); the
//!   thesis gives no share per workload (Fig. 9: only metadata de-correlates).
//! * R4 Tags are generated when a host write arrives (DPA-PPU sits in the write path, §2.3);
//!   GC relocations of a data page keep its tags where they are (the map is by LPN).
//! * R5 Idle time: a gap to the next arrival above `idle_threshold_us` (default: one page
//!   program). Each idle gap writes up to ⌊gap / program time⌋ waiting pages per target die
//!   (at least one), oldest first.
//! * R6 Redundant-page cache and buffer sizes are not given: `cache_pages` = 64,
//!   `buffer_pages` = 32 by default; the chunk-size switch at 23 K P/E (§2.6.2) is the
//!   `chunk_bytes` parameter (the reproduction runs 8 B and 4 B as two runs, as Fig. 14).
//! * R7 The redundant pages' stronger code (8-bit BCH per 170 B, §2.6.2) is the device's ECC
//!   here (same latency: the Table 3 device has no decode time); the 16 MB map and the cache
//!   are in DRAM and take no time.
//! * R8 Compaction at `compact_live_fraction` = 0.25 (the thesis does not say how redundant
//!   pages are reclaimed); 0 = only wholly invalid pages are dropped.
//! * R9 Preconditioning writes the redundant and parity pages of the preconditioned data
//!   (untimed, [`Scheme::take_untimed`]): reads of data written before the trace (all of a
//!   read-only trace's) need them, as on the thesis's device after 23 K P/E.
//! * R10 Redundant reads a host request waits for are host-priority flash reads (counted as
//!   host flash reads); redundant and parity programs and compaction reads are background
//!   work, counted under source `migration`; a forced flush is a background-queue program the
//!   host write waits for.
//!
//! Parameters (`[scheme.params]`): `chunk_bytes` (4 | 8, default 8), `path_a_share` (0–1,
//! default 0), `oob_tag_bytes` (default 112), `overflow_bytes` (default −1: derived as above),
//! `stripe_pages` (default 4; 0 = no parity), `cache_pages` (default 64), `buffer_pages`
//! (default 32), `delayed_write` (default true; false: a full redundant page is written at
//! once in the background), `idle_threshold_us` (default −1: one page program),
//! `compact_live_fraction` (default 0.25), `redundant_stream` (default 2), `separate_gc_stream`
//! (default true).
//!
//! Counters (`scheme_stats` of the report) are documented in `docs/report.md`.
//!
//! By subject: this file holds the parameters, the state and its construction; `table.rs` the
//! packed per-redundant-page record and the redundant-page cache (LRU); `tags.rs` the life of
//! a tag (write path, redundant pages filling, delayed write with RAID-5 parity, invalidation,
//! compaction); `hooks.rs` the [`Scheme`] hooks that drive them.

mod hooks;
mod table;
mod tags;

use crate::config::ConfigError;
use crate::flash::{DivU32, Geometry, PageType, Timing};
use crate::ftl::UNMAPPED;
use crate::scheme::params::Params;
use crate::scheme::{Action, Ctx, DeviceInfo, Placement, Scheme, Source};
use std::collections::VecDeque;

/// "No page": ids start at 1, so every per-id and per-LPN array starts zeroed (allocated lazily
/// by the OS: a 256 GB device's map costs memory only where it is used).
const NIL: u32 = 0;

/// 6-bit tag per chunk (64 polynomials, Table 4).
const TAG_BITS: usize = 6;

const ST_FREE: u8 = 0;
const ST_OPEN: u8 = 1;
const ST_READY: u8 = 2;
const ST_FLUSHED: u8 = 3;
const ST_PARITY: u8 = 4;
/// Bytes of a per-id record (`Dpa::red`): four one-byte fields, then three little-endian
/// `u32` words at byte offsets [`W_PARITY`], [`W_PREV`], [`W_NEXT`].
const W_PARITY: usize = 4;
const W_PREV: usize = 8;
const W_NEXT: usize = 12;
const B_STATE: usize = 0;
const B_CACHED: usize = 1;
const B_LIVE: usize = 2;
const B_NMEM: usize = 3;
/// Most data pages one redundant page may hold (an `overflow_bytes` below page / 64 is refused).
const MAX_TAGS_PER_PAGE: usize = 64;

/// The scheme's counters (`scheme_stats`).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct DpaCounters {
    /// Host data pages written with tags (path B).
    pub tagged_page_writes: u64,
    /// Host data pages written through path A (no tags).
    pub path_a_page_writes: u64,
    /// Redundant pages programmed during the replay (every cause).
    pub redundant_page_writes: u64,
    /// RAID-5 parity pages programmed during the replay.
    pub parity_page_writes: u64,
    /// Full redundant pages written at idle time.
    pub flushes_idle: u64,
    /// Full redundant pages written because the buffer was full (a host write waited).
    pub flushes_forced: u64,
    /// Full redundant pages written at once (`delayed_write = false`).
    pub flushes_immediate: u64,
    /// Idle gaps the scheme was called for.
    pub idle_calls: u64,
    /// Host page reads of tagged data pages (each needs its redundant page).
    pub tagged_page_reads: u64,
    /// Redundant-page flash reads a host read waited for (cache misses).
    pub redundant_reads: u64,
    /// Redundant pages found in the redundant-page cache.
    pub cache_hits: u64,
    /// Redundant pages still in DRAM (open, waiting in the buffer, or being programmed).
    pub buffer_hits: u64,
    /// Redundant reads that landed on the data page's own die (0 by construction, R1).
    pub same_die_reads: u64,
    /// Redundant pages compacted (read, unmapped, valid tags re-buffered).
    pub compactions: u64,
    /// Tags (data pages) moved by compaction.
    pub compacted_tags: u64,
    /// Redundant pages unmapped with every tag invalid.
    pub redundant_pages_dropped: u64,
    /// Parity pages unmapped with their whole stripe.
    pub parity_pages_dropped: u64,
    /// Redundant and parity pages written by preconditioning (untimed, not in the flash
    /// counters).
    pub precondition_hidden_writes: u64,
    /// Tags or parity pages that found no free hidden page (must stay 0; the sizing of
    /// `hidden_pages` makes it unreachable).
    pub slots_exhausted: u64,
}

/// The DPA-DRM scheme.
pub struct Dpa {
    // ----- parameters
    chunk_bytes: usize,
    path_a_share: f64,
    oob_tag_bytes: usize,
    overflow_param: i64,
    stripe: u32,
    cache_cap: u32,
    buffer_cap: usize,
    delayed: bool,
    idle_threshold_param: f64,
    compact_fraction: f64,
    red_stream: u8,
    gc_stream: u8,
    program_ns: u64,
    // ----- derived at `hidden_pages`
    /// Overflow bytes per tagged data page.
    overflow: usize,
    /// Data pages per redundant page.
    k: usize,
    /// Valid tags at or below which a flushed redundant page is compacted.
    compact_at: u8,
    logical: u32,
    planes: u32,
    /// Divider by `planes` (the id ↔ (slot, plane) split and the static plane of an LPN run
    /// on every tag and every redundant read: a multiply, not a `div`).
    planes_div: DivU32,
    ppd: u32,
    dies: u32,
    /// First hidden LPN (the logical capacity rounded up to a multiple of the planes).
    base: u32,
    /// Slots (hidden pages) per plane.
    slots: u32,
    /// `res_of_plane[q]`: an LPN residue mod planes whose static plane is q.
    res_of_plane: Vec<u32>,
    /// `res_of_plane[q] − q` (wrapping): the hidden LPN of id g on plane q is
    /// `base + (g − 1) + lpn_off[q]` (see [`Dpa::hidden_lpn`]).
    lpn_off: Vec<u32>,
    /// Die of the static plane of LPN residue r.
    die_of_res: Vec<u32>,
    // ----- state
    /// Redundant page of each LPN, or NIL (path A / never written).
    rmap: Vec<u32>,
    /// Per id (slot · planes + plane + 1: the slots of every plane interleaved, so the ids in
    /// use — every plane fills its slots from 0 at about the same rate — are one dense range of
    /// records and member lists, not `planes` ranges `slots` ids apart, each on its own memory
    /// pages), one 16-byte record (one cache line holds four): state, cache flag, valid tags
    /// and members (bytes [`B_STATE`], [`B_CACHED`], [`B_LIVE`], [`B_NMEM`]); then the parity
    /// id and the LRU links. Kept in one record so that the random accesses of a host write
    /// (the old redundant page's state and valid count) and of a host read (state, cache flag)
    /// touch one line, not one per array. `[u8; 16]` and not a struct so that
    /// `vec![[0; 16]; n]` is allocated zeroed (lazily backed, see [`NIL`]), and so that a
    /// byte field is written with one byte store.
    red: Vec<[u8; 16]>,
    /// Members (data LPNs) of each id, `k` per id.
    members: Vec<u32>,
    /// Per plane: released slots, and slots never used from `fresh[q]` on.
    free: Vec<Vec<u32>>,
    fresh: Vec<u32>,
    /// Per die group (data die): open redundant page id, or NIL.
    open: Vec<u32>,
    /// Per die group: next plane of the partner die.
    rr: Vec<u32>,
    /// Full pages waiting for idle time, oldest first.
    ready: VecDeque<u32>,
    ready_live: usize,
    /// Per plane: parity id of the stripe being filled (NIL) and its members so far.
    stripe_parity: Vec<u32>,
    stripe_fill: Vec<u32>,
    /// Redundant-page cache: intrusive LRU over ids (head = most recent; links in `red`).
    lru_head: u32,
    lru_tail: u32,
    cached: u32,
    /// Path-A accumulator (R3).
    acc: f64,
    /// Preconditioning (untimed) until the first host request.
    untimed: bool,
    pending_untimed: Vec<Action>,
    /// Idle-time budget per target die (reset per call).
    die_used: Vec<u32>,
    counters: DpaCounters,
}

impl Dpa {
    /// Build from `[scheme.params]`.
    ///
    /// # Errors
    /// [`ConfigError`] for a bad parameter.
    pub fn new(params: &toml::Table, timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("dpa", params);
        let chunk = p.usize("chunk_bytes", 8, 1, 64)?;
        if chunk != 4 && chunk != 8 {
            return Err(ConfigError::Invalid {
                key: "scheme.params.chunk_bytes".into(),
                value: chunk.to_string(),
                msg: "allowed: 4 or 8 (Guo §2.6.2 runs 8 B, then 4 B after 23 K P/E)".into(),
            });
        }
        let path_a_share = p.f64("path_a_share", 0.0, 0.0, 1.0)?;
        let oob_tag_bytes = p.usize("oob_tag_bytes", 112, 0, 1 << 20)?;
        let overflow_param = p.f64("overflow_bytes", -1.0, -1.0, (1u64 << 20) as f64)?;
        let stripe = p.usize("stripe_pages", 4, 0, 64)? as u32;
        let cache_cap = p.usize("cache_pages", 64, 0, 1 << 24)? as u32;
        let buffer_cap = p.usize("buffer_pages", 32, 0, 1 << 24)?;
        let delayed = p.bool("delayed_write", true)?;
        let idle_threshold_param = p.f64("idle_threshold_us", -1.0, -1.0, 1e9)?;
        let compact_fraction = p.f64("compact_live_fraction", 0.25, 0.0, 0.99)?;
        let red_stream = p.usize("redundant_stream", 2, 1, 15)? as u8;
        let separate = p.bool("separate_gc_stream", true)?;
        p.finish()?;
        if overflow_param != -1.0 && (overflow_param < 1.0 || overflow_param.fract() != 0.0) {
            return Err(ConfigError::Invalid {
                key: "scheme.params.overflow_bytes".into(),
                value: overflow_param.to_string(),
                msg: "a whole number of bytes ≥ 1, or -1 to derive it from chunk_bytes and \
                      oob_tag_bytes (272 B at 8 B chunks, 656 B at 4 B)"
                    .into(),
            });
        }
        if red_stream as u32 >= streams {
            return Err(ConfigError::Invalid {
                key: "scheme.params.redundant_stream".into(),
                value: red_stream.to_string(),
                msg: format!(
                    "redundant pages live in their own blocks: stream {red_stream} needs \
                     ftl.streams ≥ {} (this configuration has {streams}; configs/dpa.toml sets 3)",
                    red_stream + 1
                ),
            });
        }
        let gc_stream = if separate && streams > 1 { 1 } else { 0 };
        if gc_stream == red_stream {
            return Err(ConfigError::Invalid {
                key: "scheme.params.redundant_stream".into(),
                value: red_stream.to_string(),
                msg: "must differ from the GC stream (1): use 2 with ftl.streams = 3".into(),
            });
        }
        Ok(Dpa {
            chunk_bytes: chunk,
            path_a_share,
            oob_tag_bytes,
            overflow_param: overflow_param as i64,
            stripe,
            cache_cap,
            buffer_cap,
            delayed,
            idle_threshold_param,
            compact_fraction,
            red_stream,
            gc_stream,
            program_ns: timing.program_ns(PageType::Lsb, 0) + timing.transfer_ns,
            overflow: 0,
            k: 1,
            compact_at: 0,
            logical: 0,
            planes: 1,
            planes_div: DivU32::new(1),
            ppd: 1,
            dies: 1,
            base: 0,
            slots: 0,
            res_of_plane: Vec::new(),
            lpn_off: Vec::new(),
            die_of_res: Vec::new(),
            rmap: Vec::new(),
            red: Vec::new(),
            members: Vec::new(),
            free: Vec::new(),
            fresh: Vec::new(),
            open: Vec::new(),
            rr: Vec::new(),
            ready: VecDeque::new(),
            ready_live: 0,
            stripe_parity: Vec::new(),
            stripe_fill: Vec::new(),
            lru_head: NIL,
            lru_tail: NIL,
            cached: 0,
            acc: 0.0,
            untimed: true,
            pending_untimed: Vec::new(),
            die_used: Vec::new(),
            counters: DpaCounters::default(),
        })
    }

    /// Counters (for tests).
    pub fn counters(&self) -> DpaCounters {
        self.counters
    }

    /// Data pages whose tags one redundant page holds.
    pub fn tags_per_page(&self) -> usize {
        self.k
    }
}
