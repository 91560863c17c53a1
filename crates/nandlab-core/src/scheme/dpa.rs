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

use super::params::Params;
use super::{Action, Ctx, DeviceInfo, Placement, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::{DivU32, Geometry, PageType, Timing};
use crate::ftl::UNMAPPED;
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

    // ----- per-id record (`red`)

    #[inline]
    fn byte(&self, g: u32, i: usize) -> u8 {
        self.red[g as usize][i]
    }

    #[inline]
    fn set_byte(&mut self, g: u32, i: usize, v: u8) {
        self.red[g as usize][i] = v;
    }

    #[inline]
    fn word(&self, g: u32, at: usize) -> u32 {
        let r = &self.red[g as usize];
        u32::from_le_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]])
    }

    #[inline]
    fn set_word(&mut self, g: u32, at: usize, v: u32) {
        self.red[g as usize][at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    #[inline]
    fn st(&self, g: u32) -> u8 {
        self.byte(g, B_STATE)
    }

    #[inline]
    fn set_st(&mut self, g: u32, v: u8) {
        self.set_byte(g, B_STATE, v)
    }

    /// Whether `g` is in the redundant-page cache.
    #[inline]
    fn cached(&self, g: u32) -> bool {
        self.byte(g, B_CACHED) != 0
    }

    #[inline]
    fn set_cached(&mut self, g: u32, v: bool) {
        self.set_byte(g, B_CACHED, v as u8)
    }

    /// Valid tags (data page) or flushed stripe members not yet dropped (parity page).
    #[inline]
    fn live(&self, g: u32) -> u8 {
        self.byte(g, B_LIVE)
    }

    #[inline]
    fn set_live(&mut self, g: u32, v: u8) {
        self.set_byte(g, B_LIVE, v)
    }

    /// Members listed (data page), or 1 = stripe open / 2 = programmed (parity page).
    #[inline]
    fn nmem(&self, g: u32) -> u8 {
        self.byte(g, B_NMEM)
    }

    #[inline]
    fn set_nmem(&mut self, g: u32, v: u8) {
        self.set_byte(g, B_NMEM, v)
    }

    #[inline]
    fn parity(&self, g: u32) -> u32 {
        self.word(g, W_PARITY)
    }

    #[inline]
    fn set_parity(&mut self, g: u32, p: u32) {
        self.set_word(g, W_PARITY, p);
    }

    #[inline]
    fn prev(&self, g: u32) -> u32 {
        self.word(g, W_PREV)
    }

    #[inline]
    fn set_prev(&mut self, g: u32, x: u32) {
        self.set_word(g, W_PREV, x);
    }

    #[inline]
    fn next(&self, g: u32) -> u32 {
        self.word(g, W_NEXT)
    }

    #[inline]
    fn set_next(&mut self, g: u32, x: u32) {
        self.set_word(g, W_NEXT, x);
    }

    /// The hidden LPN of id g = s · planes + q + 1 (slot s of plane q):
    /// `base + s · planes + res_of_plane[q]`, i.e. `base + (g − 1) − q + res_of_plane[q]`.
    #[inline]
    fn hidden_lpn(&self, g: u32) -> u32 {
        let q = self.plane_of_id(g);
        self.base
            .wrapping_add(g - 1)
            .wrapping_add(self.lpn_off[q as usize])
    }

    #[inline]
    fn plane_of_id(&self, g: u32) -> u32 {
        self.planes_div.modulo(g - 1)
    }

    /// Slot (on its plane) of id `g`.
    #[inline]
    fn slot_of_id(&self, g: u32) -> u32 {
        self.planes_div.quot(g - 1)
    }

    /// A free id on plane `q`: a released one, else a fresh one; NIL when the plane has none.
    #[inline]
    fn slot_on(&mut self, q: u32) -> u32 {
        let s = match self.free[q as usize].pop() {
            Some(s) => s,
            None if self.fresh[q as usize] < self.slots => {
                self.fresh[q as usize] += 1;
                self.fresh[q as usize] - 1
            }
            None => return NIL,
        };
        s * self.planes + q + 1
    }

    #[inline]
    fn group_of(&self, lpn: u32) -> u32 {
        self.die_of_res[self.planes_div.modulo(lpn) as usize]
    }

    /// A free id on a plane of die `die` (rotating from `rr[group]`); NIL when every plane
    /// of the die is out of slots (cannot happen with the sizing of `hidden_pages`).
    fn take_slot(&mut self, group: u32, die: u32) -> u32 {
        for _ in 0..self.ppd {
            let q = die * self.ppd + self.rr[group as usize] % self.ppd;
            self.rr[group as usize] = (self.rr[group as usize] + 1) % self.ppd;
            let g = self.slot_on(q);
            if g != NIL {
                return g;
            }
        }
        NIL
    }

    fn release(&mut self, g: u32) {
        self.cache_remove(g);
        // State ST_FREE, not cached, no tags, no members, no parity (the LRU links are dead).
        self.red[g as usize][..4].copy_from_slice(&[ST_FREE, 0, 0, 0]);
        self.set_parity(g, NIL);
        let q = self.plane_of_id(g);
        let s = self.slot_of_id(g);
        self.free[q as usize].push(s);
    }

    // ----- redundant-page cache (LRU)

    fn cache_remove(&mut self, g: u32) {
        if !self.cached(g) {
            return;
        }
        let (p, n) = (self.prev(g), self.next(g));
        if p != NIL {
            self.set_next(p, n);
        } else {
            self.lru_head = n;
        }
        if n != NIL {
            self.set_prev(n, p);
        } else {
            self.lru_tail = p;
        }
        self.set_cached(g, false);
        self.cached -= 1;
    }

    fn cache_insert(&mut self, g: u32) {
        if self.cache_cap == 0 {
            return;
        }
        self.cache_remove(g);
        if self.cached >= self.cache_cap {
            let t = self.lru_tail;
            self.cache_remove(t);
        }
        self.set_prev(g, NIL);
        self.set_next(g, self.lru_head);
        if self.lru_head != NIL {
            self.set_prev(self.lru_head, g);
        } else {
            self.lru_tail = g;
        }
        self.lru_head = g;
        self.set_cached(g, true);
        self.cached += 1;
    }

    // ----- write path

    /// Emit `a`: into the engine's actions (timed) or the untimed queue.
    #[inline]
    fn emit(&mut self, a: Action, out: &mut Vec<Action>) {
        if self.untimed {
            if let Action::Read { .. } = a {
                return;
            }
            self.pending_untimed.push(a);
        } else {
            out.push(a);
        }
    }

    /// Host write of `lpn` (R4): invalidate its old tags, then add its overflow to the open
    /// redundant page of its die group.
    #[inline]
    fn write_tags(&mut self, lpn: u32, out: &mut Vec<Action>) {
        let old = self.rmap[lpn as usize];
        if old != NIL {
            self.rmap[lpn as usize] = NIL;
            self.tag_died(old, out);
        }
        self.acc += self.path_a_share;
        if self.acc >= 1.0 {
            self.acc -= 1.0;
            if !self.untimed {
                self.counters.path_a_page_writes += 1;
            }
            return;
        }
        if !self.untimed {
            self.counters.tagged_page_writes += 1;
        }
        self.add_tag(lpn, out);
    }

    /// Append `lpn`'s tags to the open redundant page of its group.
    #[inline]
    fn add_tag(&mut self, lpn: u32, out: &mut Vec<Action>) {
        let group = self.group_of(lpn);
        let mut g = self.open[group as usize];
        if g == NIL {
            g = self.open_page(group);
            if g == NIL {
                return;
            }
        }
        let rec = &mut self.red[g as usize];
        let n = rec[B_NMEM] as usize;
        rec[B_NMEM] += 1;
        rec[B_LIVE] += 1;
        self.members[g as usize * self.k + n] = lpn;
        self.rmap[lpn as usize] = g;
        if n + 1 == self.k {
            self.open[group as usize] = NIL;
            self.page_full(g, out);
        }
    }

    /// Open a redundant page for `group` on its partner die (R1); NIL (counted) when none is
    /// free.
    #[cold]
    fn open_page(&mut self, group: u32) -> u32 {
        let partner = (group + self.dies / 2) % self.dies;
        let g = self.take_slot(group, partner);
        if g == NIL {
            // The sizing of `hidden_pages` makes this unreachable; counted, never silent.
            self.counters.slots_exhausted += 1;
            return NIL;
        }
        self.set_st(g, ST_OPEN);
        self.open[group as usize] = g;
        g
    }

    /// Open page `g` is full: buffer it (delayed write), or write it now.
    fn page_full(&mut self, g: u32, out: &mut Vec<Action>) {
        if self.untimed {
            self.flush(g, false, out);
            return;
        }
        if !self.delayed {
            self.counters.flushes_immediate += 1;
            self.flush(g, false, out);
            return;
        }
        self.set_st(g, ST_READY);
        self.ready.push_back(g);
        self.ready_live += 1;
        while self.ready_live > self.buffer_cap {
            let Some(x) = self.ready.pop_front() else {
                break;
            };
            if self.live(x) == 0 {
                self.release(x);
                continue;
            }
            self.ready_live -= 1;
            self.counters.flushes_forced += 1;
            self.flush(x, true, out);
        }
    }

    /// Program redundant page `g` (and the parity of its stripe when this completes it).
    fn flush(&mut self, g: u32, wait: bool, out: &mut Vec<Action>) {
        self.set_st(g, ST_FLUSHED);
        let h = self.hidden_lpn(g);
        self.emit(Action::Program { lpn: h, wait }, out);
        if self.untimed {
            self.counters.precondition_hidden_writes += 1;
        } else {
            self.counters.redundant_page_writes += 1;
        }
        if self.stripe == 0 {
            return;
        }
        let q = self.plane_of_id(g) as usize;
        if self.stripe_parity[q] == NIL {
            let p = self.slot_on(q as u32);
            if p == NIL {
                self.counters.slots_exhausted += 1;
                return;
            }
            self.set_st(p, ST_PARITY);
            self.set_live(p, 0);
            self.set_nmem(p, 0);
            self.stripe_parity[q] = p;
            self.stripe_fill[q] = 0;
        }
        let p = self.stripe_parity[q];
        self.set_parity(g, p);
        self.set_live(p, self.live(p) + 1);
        self.set_nmem(p, 1); // programmed flag is set below
        self.stripe_fill[q] += 1;
        if self.stripe_fill[q] == self.stripe {
            self.stripe_parity[q] = NIL;
            self.stripe_fill[q] = 0;
            if self.live(p) == 0 {
                self.release(p);
                return;
            }
            // nmem = 2: the parity page is programmed.
            self.set_nmem(p, 2);
            let hp = self.hidden_lpn(p);
            self.emit(Action::Program { lpn: hp, wait }, out);
            if self.untimed {
                self.counters.precondition_hidden_writes += 1;
            } else {
                self.counters.parity_page_writes += 1;
            }
        }
    }

    /// One tag of redundant page `g` became invalid.
    fn tag_died(&mut self, g: u32, out: &mut Vec<Action>) {
        self.set_live(g, self.live(g) - 1);
        match self.st(g) {
            ST_OPEN => {}
            // Never written: it leaves the buffer unwritten (released when its turn comes, so
            // its queue entry cannot alias a reused id).
            ST_READY if self.live(g) == 0 => self.ready_live -= 1,
            ST_FLUSHED => {
                if self.live(g) == 0 {
                    self.drop_flushed(g, out);
                    if !self.untimed {
                        self.counters.redundant_pages_dropped += 1;
                    }
                } else if self.live(g) <= self.compact_at {
                    self.compact(g, out);
                }
            }
            _ => {}
        }
    }

    /// Unmap flushed page `g` and release it and, with its stripe, its parity.
    fn drop_flushed(&mut self, g: u32, out: &mut Vec<Action>) {
        let h = self.hidden_lpn(g);
        self.emit(Action::Unmap { lpn: h }, out);
        let p = self.parity(g);
        self.release(g);
        if p != NIL {
            self.set_live(p, self.live(p) - 1);
            if self.live(p) == 0 && self.nmem(p) == 2 {
                let hp = self.hidden_lpn(p);
                self.emit(Action::Unmap { lpn: hp }, out);
                self.release(p);
                if !self.untimed {
                    self.counters.parity_pages_dropped += 1;
                }
            }
        }
    }

    /// Compact flushed page `g`: read it, unmap it, re-buffer its valid tags (R8).
    fn compact(&mut self, g: u32, out: &mut Vec<Action>) {
        let h = self.hidden_lpn(g);
        self.emit(
            Action::Read {
                lpn: h,
                wait: false,
            },
            out,
        );
        let base = g as usize * self.k;
        let n = self.nmem(g) as usize;
        let mut keep = [NIL; MAX_TAGS_PER_PAGE];
        let mut j = 0;
        for i in 0..n {
            let lpn = self.members[base + i];
            // An LPN written twice while `g` was open is listed twice: keep it once.
            if self.rmap[lpn as usize] == g {
                self.rmap[lpn as usize] = NIL;
                keep[j] = lpn;
                j += 1;
            }
        }
        self.set_live(g, 0);
        self.drop_flushed(g, out);
        if !self.untimed {
            self.counters.compactions += 1;
            self.counters.compacted_tags += j as u64;
        }
        for &lpn in &keep[..j] {
            self.add_tag(lpn, out);
        }
    }

    fn placement_of(&self, lpn: u32, source: Source) -> Placement {
        let stream = if lpn >= self.logical && self.logical > 0 {
            self.red_stream
        } else if source == Source::Host {
            0
        } else {
            self.gc_stream
        };
        Placement {
            stream,
            mode: 0,
            ecc: 0,
            region: 0,
            page_type: None,
        }
    }
}

impl Scheme for Dpa {
    fn name(&self) -> &'static str {
        "dpa"
    }

    fn validate_device(&self, dev: &DeviceInfo) -> Result<(), ConfigError> {
        let err = |key: &str, value: String, msg: &str| ConfigError::Invalid {
            key: key.into(),
            value,
            msg: msg.into(),
        };
        if !dev.static_allocation {
            return Err(err(
                "ftl.allocation",
                "\"dynamic\"".into(),
                "scheme dpa puts a data page's redundant page on another die, which needs the \
                 data page's plane before it is programmed: use ftl.allocation = \"static\" \
                 (configs/dpa.toml)",
            ));
        }
        if dev.dies < 2 {
            return Err(err(
                "device.channels",
                dev.dies.to_string(),
                "scheme dpa reads a data page's redundant page in parallel from another die \
                 (Guo §2.5); this device has 1 die: configure at least 2 (channels × \
                 chips_per_channel × dies_per_chip), or use configs/dpa.toml",
            ));
        }
        if dev.closed_loop && self.delayed {
            return Err(err(
                "host.mode",
                "\"closed\"".into(),
                "scheme dpa writes full redundant pages at idle time (delayed write, Guo §2.5) \
                 and a closed-loop replay has none: use host.mode = \"open\", or set \
                 scheme.params.delayed_write = false (every full redundant page is written at \
                 once)",
            ));
        }
        if dev.dram {
            return Err(err(
                "dram.capacity_bytes",
                "> 0".into(),
                "scheme dpa generates tags when a host write arrives; with the controller DRAM \
                 data cache on, the page reaches flash later or never: set \
                 dram.capacity_bytes = 0 (configs/dpa.toml)",
            ));
        }
        if dev.trim {
            return Err(err(
                "ftl.trim",
                "true".into(),
                "scheme dpa does not track discards (a trimmed page's tags would stay valid in \
                 its redundant page): set ftl.trim = false (configs/dpa.toml)",
            ));
        }
        if dev.regions > 0 {
            return Err(err(
                "regions",
                dev.regions.to_string(),
                "scheme dpa places pages by stream, not region: run it without [regions] \
                 (configs/dpa.toml)",
            ));
        }
        Ok(())
    }

    fn hidden_pages(&mut self, geo: &Geometry, logical_pages: u64) -> Result<u64, ConfigError> {
        let page = geo.page_size_bytes as usize;
        let tag_bytes = (page / self.chunk_bytes * TAG_BITS).div_ceil(8);
        let overflow = if self.overflow_param > 0 {
            self.overflow_param as usize
        } else {
            tag_bytes.saturating_sub(self.oob_tag_bytes)
        };
        if overflow == 0 || overflow > page {
            return Err(ConfigError::Invalid {
                key: "scheme.params.oob_tag_bytes".into(),
                value: self.oob_tag_bytes.to_string(),
                msg: format!(
                    "the tag overflow per data page is {overflow} B ({tag_bytes} B of tags, \
                     {} B in the OOB) with {page} B pages: it must be 1 ..= {page} B; \
                     without overflow there are no redundant pages (use scheme baseline)",
                    self.oob_tag_bytes
                ),
            });
        }
        if page / overflow > MAX_TAGS_PER_PAGE {
            return Err(ConfigError::Invalid {
                key: "scheme.params.overflow_bytes".into(),
                value: overflow.to_string(),
                msg: format!(
                    "at least {} B with {page} B pages (one redundant page holds the tags of \
                     at most {MAX_TAGS_PER_PAGE} data pages)",
                    page.div_ceil(MAX_TAGS_PER_PAGE)
                ),
            });
        }
        self.overflow = overflow;
        self.k = page / overflow;
        self.compact_at = (self.compact_fraction * self.k as f64).floor() as u8;
        self.logical = logical_pages as u32;
        self.planes = geo.planes();
        self.planes_div = DivU32::new(self.planes);
        self.ppd = geo.planes_per_die;
        self.dies = geo.dies();
        self.res_of_plane = vec![0; self.planes as usize];
        self.die_of_res = vec![0; self.planes as usize];
        for r in 0..self.planes {
            let q = geo.cwdp_plane(r);
            self.res_of_plane[q as usize] = r;
            self.die_of_res[r as usize] = q / self.ppd;
        }
        self.lpn_off = (0..self.planes)
            .map(|q| self.res_of_plane[q as usize].wrapping_sub(q))
            .collect();
        // Slots per plane: every tagged LPN in a flushed page that keeps more than
        // `compact_at` valid tags, plus open/buffered pages and parity, with 2× margin for an
        // uneven spread over planes.
        let per_page = (self.compact_at as u64 + 1).min(self.k as u64);
        let pages = logical_pages.div_ceil(per_page);
        let with_parity = pages + pages / self.stripe.max(1) as u64 + 2;
        let slack = self.dies as u64 * 2 + self.buffer_cap as u64 + 16;
        let slots64 = with_parity.div_ceil(self.planes as u64) * 2 + slack;
        let base64 = logical_pages.div_ceil(self.planes as u64) * self.planes as u64;
        if base64 + slots64 * self.planes as u64 >= u32::MAX as u64 {
            return Err(ConfigError::Invalid {
                key: "device.logical_capacity_bytes".into(),
                value: format!("{logical_pages} pages"),
                msg: format!(
                    "scheme dpa needs {} hidden pages for redundant tag pages above the logical \
                     capacity, more than 2^32 LPNs in all: use a smaller device",
                    slots64 * self.planes as u64
                ),
            });
        }
        let slots = slots64 as u32;
        self.slots = slots;
        self.base = base64 as u32;
        let ids = slots as usize * self.planes as usize;
        // Id 0 is NIL; every array is zeroed (lazily backed: see NIL).
        self.rmap = vec![NIL; logical_pages as usize];
        self.red = vec![[0; 16]; ids + 1];
        self.members = vec![0; (ids + 1) * self.k];
        self.free = (0..self.planes).map(|_| Vec::with_capacity(64)).collect();
        self.fresh = vec![0; self.planes as usize];
        self.open = vec![NIL; self.dies as usize];
        self.rr = vec![0; self.dies as usize];
        self.ready = VecDeque::with_capacity(self.buffer_cap + 1);
        self.stripe_parity = vec![NIL; self.planes as usize];
        self.stripe_fill = vec![0; self.planes as usize];
        self.pending_untimed = Vec::with_capacity(64);
        self.die_used = vec![0; self.dies as usize];
        Ok((self.base - self.logical) as u64 + ids as u64)
    }

    fn placement(&mut self, lpn: u32, source: Source, _ctx: &Ctx<'_>) -> Placement {
        self.placement_of(lpn, source)
    }

    fn prefetches(&self) -> bool {
        true
    }

    /// The map entry of `lpn`: every tagged host write reads and writes it, every host read
    /// reads it, at random LPNs.
    fn prefetch_lpn(&self, lpn: u32) {
        crate::prefetch::slice(&self.rmap, lpn as usize);
    }

    /// The record of `lpn`'s redundant page (a write invalidates a tag in it, a read checks
    /// its state and cache flag) and, for a read, the redundant page's L2P entry (looked up
    /// when it is not in DRAM or the cache).
    fn prefetch_mapped(&self, lpn: u32, read: bool, ftl: &crate::ftl::Ftl) {
        if let Some(&g) = self.rmap.get(lpn as usize) {
            if g != NIL {
                crate::prefetch::slice(&self.red, g as usize);
                if read {
                    ftl.prefetch_lpn(self.hidden_lpn(g));
                }
            }
        }
    }

    fn precondition_placement(&mut self, lpn: u32, _ctx: &Ctx<'_>) -> Placement {
        if lpn < self.logical {
            let mut none = Vec::new();
            self.write_tags(lpn, &mut none);
        }
        self.placement_of(lpn, Source::Host)
    }

    fn take_untimed(&mut self, out: &mut Vec<Action>) {
        out.append(&mut self.pending_untimed);
    }

    fn gc_move(&mut self, lpn: u32, _ppn: u32, _ctx: &Ctx<'_>) -> Placement {
        self.placement_of(lpn, Source::Gc)
    }

    fn on_request(
        &mut self,
        op: crate::trace::Op,
        first_lpn: u32,
        pages: u32,
        _ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
    ) {
        self.untimed = false;
        if op != crate::trace::Op::Write {
            return;
        }
        let mut lpn = first_lpn;
        for _ in 0..pages {
            self.write_tags(lpn, actions);
            lpn += 1;
            if lpn == self.logical {
                lpn = 0;
            }
        }
    }

    fn on_host_read(&mut self, lpn: u32, ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        let g = self.rmap[lpn as usize];
        if g == NIL {
            return;
        }
        self.counters.tagged_page_reads += 1;
        match self.st(g) {
            ST_OPEN | ST_READY => {
                self.counters.buffer_hits += 1;
                return;
            }
            _ => {}
        }
        if self.cached(g) {
            self.counters.cache_hits += 1;
            self.cache_insert(g);
            return;
        }
        let h = self.hidden_lpn(g);
        let hp = ctx.ftl.lookup(h);
        if hp == UNMAPPED {
            // Its program is still queued: the page is in the controller's DRAM.
            self.counters.buffer_hits += 1;
            return;
        }
        let ppd = self.ppd;
        if ctx.ftl.plane_of_ppn(hp) / ppd == ctx.ftl.plane_of_ppn(ppn) / ppd {
            self.counters.same_die_reads += 1;
        }
        self.counters.redundant_reads += 1;
        // What the read's dispatch touches (its ECC byte and state word), while the engine
        // queues the request's data reads first.
        ctx.ftl.prefetch_read(hp);
        actions.push(Action::Read { lpn: h, wait: true });
        self.cache_insert(g);
    }

    fn idle_threshold_ns(&self) -> Option<u64> {
        if !self.delayed {
            return None;
        }
        Some(if self.idle_threshold_param < 0.0 {
            self.program_ns
        } else {
            (self.idle_threshold_param * 1000.0).round() as u64
        })
    }

    fn on_idle(&mut self, idle_ns: u64, _ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        self.counters.idle_calls += 1;
        if self.ready_live == 0 {
            return;
        }
        let budget = (idle_ns / self.program_ns.max(1)).max(1) as u32;
        for d in self.die_used.iter_mut() {
            *d = 0;
        }
        let n = self.ready.len();
        for _ in 0..n {
            let Some(g) = self.ready.pop_front() else {
                break;
            };
            if self.live(g) == 0 {
                self.release(g);
                continue;
            }
            let die = self.plane_of_id(g) / self.ppd;
            if self.die_used[die as usize] >= budget {
                self.ready.push_back(g);
                continue;
            }
            self.die_used[die as usize] += 1;
            self.ready_live -= 1;
            self.counters.flushes_idle += 1;
            self.flush(g, false, actions);
        }
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.counters).unwrap_or_default();
        let (mut valid, mut invalid, mut flushed) = (0u64, 0u64, 0u64);
        let planes = self.planes;
        let used =
            (0..planes).flat_map(|q| (0..self.fresh[q as usize]).map(move |s| s * planes + q + 1));
        for g in used {
            if self.st(g) == ST_FLUSHED {
                flushed += 1;
                valid += self.live(g) as u64;
                invalid += (self.nmem(g) - self.live(g)) as u64;
            }
        }
        let ob = self.overflow as u64;
        v["chunk_bytes"] = serde_json::json!(self.chunk_bytes);
        v["overflow_bytes_per_page"] = serde_json::json!(self.overflow);
        v["tags_per_redundant_page"] = serde_json::json!(self.k);
        v["path_a_share"] = serde_json::json!(self.path_a_share);
        v["stripe_pages"] = serde_json::json!(self.stripe);
        v["redundant_pages_on_flash"] = serde_json::json!(flushed);
        v["valid_tag_bytes_on_flash"] = serde_json::json!(valid * ob);
        v["invalid_tag_bytes_on_flash"] = serde_json::json!(invalid * ob);
        v["buffered_pages_at_end"] = serde_json::json!(self.ready_live);
        v["open_pages_at_end"] = serde_json::json!(self.open.iter().filter(|&&g| g != NIL).count());
        v
    }
}
