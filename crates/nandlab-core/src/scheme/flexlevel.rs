//! `flexlevel`: FlexLevel's LevelAdjust and AccessEval (Guo's thesis ch. 3; spec
//! `shared/specs/dpa-flexlevel.md` §2).
//!
//! Worn, aged MLC pages need LDPC soft sensing (Table 6: up to 6 extra levels of 8 µs sensing +
//! 20 µs transfer). *LevelAdjust* stores data in reduced-state cells (3 Vth levels, 3 bits per 2
//! cells, [`crate::reliability::reducecode`]; NUNMA 3) whose wide margins need no soft sensing,
//! at the cost of ¼ of those cells' capacity. *AccessEval* (§3.5, Figs. 20–21) puts only
//! infrequently-written, frequently-read (IWFR) data there.
//!
//! **Device.** The reduced-state cells are a region of the device (`[regions]`; the
//! `reduced_region` parameter names it, default the last region), with its own read latency
//! (Table 12: 36 µs reduced vs 44 µs normal) and, through the level source, no extra sensing.
//! Normal-state pages take their extra levels from the configured level source (Table 6 by
//! P/E and data age, [`crate::reliability::table6`], as the thesis's experiments do).
//!
//! **Variants** (`variant`):
//! * `level_adjust_only`: every page is written to the reduced region (Fig. 24's
//!   "LevelAdjust-only");
//! * `access_eval` (default): AccessEval + LevelAdjust, below.
//!
//! **AccessEval** (our reading of §3.5.2 and Fig. 21; "R:" marks what the thesis leaves open):
//! * Pools are keyed by LPN (R: the thesis says "block number" of the data).
//! * *FWFR pool* (`fwfr_entries`) and *IWFR pool* (`iwfr_entries`) each keep, per entry, an
//!   access count and the time of its last access; a full pool evicts the least recently *and*
//!   least frequently accessed entry (R: the smallest (count, last access)).
//! * **Write** of an LPN: insert it into FWFR (or count the access); remove it from IWFR; the
//!   new data goes to normal pages, so it leaves the ReducedCell pool.
//! * **Read** of an LPN in FWFR: if its page needs extra sensing levels, move it to IWFR.
//!   **Read** of an LPN not in FWFR: insert it into IWFR (or count the read).
//! * **Overhead rule** (§3.5.2, values of §3.6.2): an IWFR entry's LDPC overhead is
//!   L_f × L_sensing; L_sensing = 1 for 1–2 extra levels, 2 for 4–6 (R: 3 counts as 2; 0 levels
//!   → 0); L_f = 4 for the 20 % of IWFR entries with the highest read counts (R: after \[48\]'s
//!   "20 % highest"), else 3. The page is migrated when the overhead reaches `threshold` (4);
//!   "exceeds" is ambiguous and a literal `>` makes L_f irrelevant (3·1 and 4·1 both ≤ 4), so
//!   `compare = "ge"` (default) or `"gt"`.
//! * **ReducedCell pool** (`reduced_pages`, default: what the reduced region's blocks hold less
//!   its GC reserve — threshold blocks, two open blocks and the host reserve per plane): the
//!   LPNs stored in reduced pages. Migrating into a full pool first moves its least recently
//!   accessed LPN back to normal pages. Migrations are scheme rewrites (read + program,
//!   [`Source::Migration`]), so they cost flash time and show in the statistics.
//!
//! **Identification baseline** (Fig. 23): `identifier = "mbf"` identifies IWFR data with the
//! multiple-Bloom-filter separator of `diffecc_wa` (4 × 2048 bits, 2 hashes, decay every 512
//! requests; \[48\]): a read LPN whose read hotness ≥ `mbf_read_hotness` and write hotness is 0.
//! With `track_identification = true` the report gives the false identification rate
//! |identified ∖ truth| / |identified|, truth = the 20 % of read LPNs with the most reads that
//! were written at most once in the run (R: the thesis defines the terms, not the formula's
//! population).
//!
//! Parameters: `variant`, `reduced_region` (−1 = last), `fwfr_entries` (65,536),
//! `iwfr_entries` (65,536), `reduced_pages` (0 = the reduced region's capacity),
//! `threshold` (4), `compare` (`ge`), `lf_high` (4), `lf_low` (3), `lf_top_fraction` (0.2),
//! `identifier` (`iwfr` | `mbf`), `mbf_read_hotness` (2.0), `track_identification` (false),
//! `fill_region` (−1 = the normal region).
//! Memory: ≈ 30 bytes per pool entry (a 16-byte list node and its index entry); 8 bytes per logical page with `track_identification`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::json;

use super::params::Params;
use super::separator::{Separator, SeparatorParams};
use super::{Action, Ctx, Placement, RegionInfo, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;
use crate::reliability::table6;

/// A fast hasher for LPN keys (a multiplicative mix; keys are not adversarial).
#[derive(Default, Clone, Copy)]
pub struct LpnHasher(u64);

impl Hasher for LpnHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.0 = (v as u64 ^ 0x5bd1_e995).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type LpnMap<V> = HashMap<u32, V, BuildHasherDefault<LpnHasher>>;

const NIL: u32 = u32::MAX;

/// Access counts saturate here (16.7 M accesses of one page), which bounds the per-count
/// bucket table of [`Pool`].
const COUNT_CAP: u32 = 1 << 24;

/// One entry of a [`Pool`] or [`ReducedCell`]: an LPN in an intrusive doubly linked list.
#[derive(Clone, Copy, Debug)]
struct Node {
    lpn: u32,
    count: u32,
    prev: u32,
    next: u32,
}

/// Head, tail and length of one list of nodes.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// A slab of nodes with a free list, and the list operations over it. Every operation is
/// O(1) and allocates only when the slab grows (never once it holds its capacity).
#[derive(Clone, Debug, Default)]
struct Slab {
    nodes: Vec<Node>,
    free: Vec<u32>,
}

impl Slab {
    fn alloc(&mut self, lpn: u32, count: u32) -> u32 {
        let n = Node {
            lpn,
            count,
            prev: NIL,
            next: NIL,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = n;
            i
        } else {
            self.nodes.push(n);
            (self.nodes.len() - 1) as u32
        }
    }
    fn push_back(&mut self, l: &mut List, i: u32) {
        let n = &mut self.nodes[i as usize];
        n.prev = l.tail;
        n.next = NIL;
        if l.tail == NIL {
            l.head = i;
        } else {
            self.nodes[l.tail as usize].next = i;
        }
        l.tail = i;
        l.len += 1;
    }
    fn unlink(&mut self, l: &mut List, i: u32) {
        let Node { prev, next, .. } = self.nodes[i as usize];
        if prev == NIL {
            l.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            l.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        l.len -= 1;
    }
}

/// `len`, `is_empty` and `contains` of an LPN pool (a struct with an `index: LpnMap<u32>` of
/// the LPNs it holds): shared by [`Pool`] and [`ReducedCell`].
macro_rules! lpn_index_accessors {
    () => {
        /// LPNs held.
        pub fn len(&self) -> usize {
            self.index.len()
        }
        /// True when empty.
        pub fn is_empty(&self) -> bool {
            self.index.is_empty()
        }
        /// Whether `lpn` is held.
        #[inline]
        pub fn contains(&self, lpn: u32) -> bool {
            self.index.contains_key(&lpn)
        }
    };
}

/// A bounded pool of LPNs with an access count and last-access time each; a full pool evicts
/// the least frequently and, among equals, least recently accessed entry (smallest (count,
/// last access)).
///
/// An O(1) LFU: one list per access count, each in last-access order (accesses come in
/// simulated-time order, so appending keeps a list sorted); entries accessed at the same
/// instant keep their access order. Counts saturate at 2^24.
#[derive(Clone, Debug, Default)]
pub struct Pool {
    cap: usize,
    index: LpnMap<u32>,
    slab: Slab,
    /// `buckets[c]`: the entries with count c (index 0 unused).
    buckets: Vec<List>,
    /// No entry has a count below this (a lower bound, raised lazily on eviction).
    min_hint: u32,
    /// The highest count any entry has had (an upper bound for [`Pool::top_count`]).
    max_count: u32,
}

impl Pool {
    /// An empty pool of at most `cap` entries (≥ 1).
    pub fn new(cap: usize) -> Pool {
        Pool {
            cap: cap.max(1),
            min_hint: 1,
            ..Pool::default()
        }
    }
    lpn_index_accessors!();
    /// Access count of `lpn` (0 when absent).
    pub fn count(&self, lpn: u32) -> u32 {
        self.index
            .get(&lpn)
            .map_or(0, |&i| self.slab.nodes[i as usize].count)
    }
    fn bucket(&mut self, c: u32) -> &mut List {
        if self.buckets.len() <= c as usize {
            self.buckets.resize(c as usize + 1, List::default());
        }
        &mut self.buckets[c as usize]
    }
    /// Count an access of `lpn` (at the current simulated time, which never decreases),
    /// inserting it (count 1) if absent; returns the evicted LPN when the insertion overflowed
    /// the pool, and the entry's count after the access.
    pub fn touch(&mut self, lpn: u32) -> (Option<u32>, u32) {
        if let Some(c) = self.touch_existing(lpn) {
            return (None, c);
        }
        self.insert_new(lpn)
    }
    /// Count an access of `lpn` if it is in the pool; returns its count after the access.
    pub fn touch_existing(&mut self, lpn: u32) -> Option<u32> {
        if let Some(&i) = self.index.get(&lpn) {
            let c = self.slab.nodes[i as usize].count;
            let nc = (c + 1).min(COUNT_CAP);
            let mut b = std::mem::take(&mut self.buckets[c as usize]);
            self.slab.unlink(&mut b, i);
            self.buckets[c as usize] = b;
            self.slab.nodes[i as usize].count = nc;
            let mut nb = std::mem::take(self.bucket(nc));
            self.slab.push_back(&mut nb, i);
            self.buckets[nc as usize] = nb;
            self.max_count = self.max_count.max(nc);
            return Some(nc);
        }
        None
    }
    fn insert_new(&mut self, lpn: u32) -> (Option<u32>, u32) {
        let mut evicted = None;
        if self.index.len() >= self.cap {
            let mut c = self.min_hint.max(1);
            while self.buckets[c as usize].len == 0 {
                c += 1;
            }
            self.min_hint = c;
            let mut b = std::mem::take(&mut self.buckets[c as usize]);
            let victim = b.head;
            self.slab.unlink(&mut b, victim);
            self.buckets[c as usize] = b;
            let v = self.slab.nodes[victim as usize].lpn;
            self.slab.free.push(victim);
            self.index.remove(&v);
            evicted = Some(v);
        }
        let i = self.slab.alloc(lpn, 1);
        let mut b = std::mem::take(self.bucket(1));
        self.slab.push_back(&mut b, i);
        self.buckets[1] = b;
        self.index.insert(lpn, i);
        self.min_hint = 1;
        self.max_count = self.max_count.max(1);
        (evicted, 1)
    }
    /// Remove `lpn`; returns whether it was there.
    pub fn remove(&mut self, lpn: u32) -> bool {
        match self.index.remove(&lpn) {
            Some(i) => {
                let c = self.slab.nodes[i as usize].count;
                let mut b = std::mem::take(&mut self.buckets[c as usize]);
                self.slab.unlink(&mut b, i);
                self.buckets[c as usize] = b;
                self.slab.free.push(i);
                true
            }
            None => false,
        }
    }
    /// The smallest count c such that the entries with a count of at least c are at most
    /// `fraction` of the pool (ties are never split: when every entry has the same count, no
    /// entry is in the top fraction, and c is one more than that count). 1 when empty.
    /// Walks the per-count lists from the highest count down to c.
    pub fn top_count(&self, fraction: f64) -> u32 {
        let n = self.index.len();
        if n == 0 {
            return 1;
        }
        let k = (n as f64 * fraction).floor() as usize;
        let mut top = self
            .max_count
            .min(self.buckets.len().saturating_sub(1) as u32);
        while top > 0 && self.buckets[top as usize].len == 0 {
            top -= 1;
        }
        let mut c = top + 1;
        let mut taken = 0usize;
        let mut count = top;
        while count > 0 {
            let same = self.buckets[count as usize].len as usize;
            if same > 0 {
                if taken + same > k {
                    break;
                }
                taken += same;
                c = count;
            }
            count -= 1;
        }
        c
    }
}

/// The ReducedCell pool: LPNs stored in reduced pages, evicting the least recently accessed
/// (an O(1) LRU list in access order).
#[derive(Clone, Debug, Default)]
pub struct ReducedCell {
    cap: usize,
    index: LpnMap<u32>,
    slab: Slab,
    order: List,
}

impl ReducedCell {
    /// An empty pool of at most `cap` LPNs.
    pub fn new(cap: usize) -> ReducedCell {
        ReducedCell {
            cap,
            ..ReducedCell::default()
        }
    }
    lpn_index_accessors!();
    /// Note an access of a held `lpn` (at the current simulated time).
    pub fn touch(&mut self, lpn: u32) {
        if let Some(&i) = self.index.get(&lpn) {
            self.slab.unlink(&mut self.order, i);
            self.slab.push_back(&mut self.order, i);
        }
    }
    /// Add `lpn`; returns the least recently accessed LPN it displaced when full.
    pub fn insert(&mut self, lpn: u32) -> Option<u32> {
        if self.contains(lpn) {
            self.touch(lpn);
            return None;
        }
        if self.cap == 0 {
            return None;
        }
        let mut out = None;
        if self.index.len() >= self.cap {
            let v = self.order.head;
            self.slab.unlink(&mut self.order, v);
            let l = self.slab.nodes[v as usize].lpn;
            self.slab.free.push(v);
            self.index.remove(&l);
            out = Some(l);
        }
        let i = self.slab.alloc(lpn, 0);
        self.slab.push_back(&mut self.order, i);
        self.index.insert(lpn, i);
        out
    }
    /// Remove `lpn`; returns whether it was held.
    pub fn remove(&mut self, lpn: u32) -> bool {
        match self.index.remove(&lpn) {
            Some(i) => {
                self.slab.unlink(&mut self.order, i);
                self.slab.free.push(i);
                true
            }
            None => false,
        }
    }
}

/// L_sensing of §3.6.2: 0 extra levels → 0, 1–2 → 1, 3–6 → 2 (3 is our reading).
#[inline]
pub fn l_sensing(levels: u32) -> u32 {
    match levels {
        0 => 0,
        1 | 2 => 1,
        _ => 2,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    LevelAdjustOnly,
    AccessEval,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Identifier {
    Iwfr,
    Mbf,
}

/// The scheme state.
pub struct FlexLevel {
    variant: Variant,
    identifier: Identifier,
    reduced_param: i64,
    fill_param: i64,
    reduced: u8,
    normal: u8,
    fwfr: Pool,
    iwfr: Pool,
    cell: ReducedCell,
    reduced_pages_param: usize,
    threshold: u32,
    ge: bool,
    lf_high: u32,
    lf_low: u32,
    lf_top: f64,
    top_count: u32,
    iwfr_reads: u64,
    mbf: Option<Separator>,
    mbf_hot: f64,
    gc_stream: u8,
    track: bool,
    reads_by_lpn: Vec<u32>,
    writes_by_lpn: Vec<u32>,
    identified: Vec<u64>,
    sized: bool,
    // statistics
    migrations_in: u64,
    migrations_out: u64,
    fwfr_to_iwfr: u64,
    reads_reduced: u64,
    reads_normal_by_levels: [u64; 7],
}

impl FlexLevel {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, _timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("flexlevel", params);
        let variant = match p
            .choice(
                "variant",
                "access_eval",
                &["access_eval", "level_adjust_only"],
            )?
            .as_str()
        {
            "level_adjust_only" => Variant::LevelAdjustOnly,
            _ => Variant::AccessEval,
        };
        let identifier = match p.choice("identifier", "iwfr", &["iwfr", "mbf"])?.as_str() {
            "mbf" => Identifier::Mbf,
            _ => Identifier::Iwfr,
        };
        let reduced = p.usize("reduced_region", 255, 0, 255)? as i64;
        let fill = p.usize("fill_region", 255, 0, 255)? as i64;
        let fwfr = p.usize("fwfr_entries", 65_536, 1, 1 << 28)?;
        let iwfr = p.usize("iwfr_entries", 65_536, 1, 1 << 28)?;
        let reduced_pages = p.usize("reduced_pages", 0, 0, 1 << 32)?;
        let threshold = p.usize("threshold", 4, 0, 64)? as u32;
        let ge = p.choice("compare", "ge", &["ge", "gt"])? == "ge";
        let lf_high = p.usize("lf_high", 4, 0, 64)? as u32;
        let lf_low = p.usize("lf_low", 3, 0, 64)? as u32;
        let lf_top = p.f64("lf_top_fraction", 0.2, 0.0, 1.0)?;
        let mbf_hot = p.f64("mbf_read_hotness", 2.0, 0.0, 1e9)?;
        let track = p.bool("track_identification", false)?;
        p.finish()?;
        Ok(FlexLevel {
            variant,
            identifier,
            reduced_param: if reduced == 255 { -1 } else { reduced },
            fill_param: if fill == 255 { -1 } else { fill },
            reduced: 0,
            normal: 0,
            fwfr: Pool::new(fwfr),
            iwfr: Pool::new(iwfr),
            cell: ReducedCell::new(0),
            reduced_pages_param: reduced_pages,
            threshold,
            ge,
            lf_high,
            lf_low,
            lf_top,
            top_count: 1,
            iwfr_reads: 0,
            mbf: (identifier == Identifier::Mbf)
                .then(|| Separator::new(SeparatorParams::default())),
            mbf_hot,
            gc_stream: if streams > 1 { 1 } else { 0 },
            track,
            reads_by_lpn: Vec::new(),
            writes_by_lpn: Vec::new(),
            identified: Vec::new(),
            sized: false,
            migrations_in: 0,
            migrations_out: 0,
            fwfr_to_iwfr: 0,
            reads_reduced: 0,
            reads_normal_by_levels: [0; 7],
        })
    }

    fn ensure_sized(&mut self, ctx: &Ctx<'_>) {
        if self.sized {
            return;
        }
        self.sized = true;
        let cap = if self.reduced_pages_param > 0 {
            self.reduced_pages_param
        } else {
            // What the reduced region's blocks hold, less its GC reserve (threshold blocks,
            // two open blocks and the host reserve) so that its GC can reclaim space.
            let f = ctx.ftl;
            let r = self.reduced as usize;
            let blocks = f.region_blocks().get(r).copied().unwrap_or(0) as u64;
            let thr = f.region_gc_threshold().get(r).copied().unwrap_or(2) as u64;
            let usable = blocks.saturating_sub(thr + 3);
            let pages = usable * f.region_pages(self.reduced) as u64 * f.geo.planes() as u64;
            pages.min(f.logical_pages as u64) as usize
        };
        self.cell = ReducedCell::new(cap);
        if self.track {
            let n = ctx.ftl.logical_pages as usize;
            self.reads_by_lpn = vec![0; n];
            self.writes_by_lpn = vec![0; n];
            self.identified = vec![0; n.div_ceil(64)];
        }
    }

    /// Extra sensing levels a read of `ppn` needs (0 in the reduced region), and whether the
    /// page is in the reduced region.
    fn page_levels(&self, ppn: u32, ctx: &Ctx<'_>) -> (u32, bool) {
        let block = ctx.ftl.geo.block_of_ppn(ppn);
        if ctx.ftl.block_region(block) == self.reduced {
            return (0, true);
        }
        let age_s = ctx.now_ns as f64 / 1e9 - ctx.ftl.page_program_s(ppn) as f64;
        (
            table6::levels(ctx.ftl.block_erases(block) as f64, age_s),
            false,
        )
    }

    /// AccessEval's overhead rule for an IWFR entry with `count` reads and `levels` extra
    /// levels.
    fn overhead_migrates(&self, count: u32, levels: u32) -> bool {
        let lf = if count >= self.top_count {
            self.lf_high
        } else {
            self.lf_low
        };
        let o = lf * l_sensing(levels);
        if self.ge {
            o >= self.threshold && o > 0
        } else {
            o > self.threshold
        }
    }

    fn mark_identified(&mut self, lpn: u32) {
        if let Some(w) = self.identified.get_mut((lpn / 64) as usize) {
            *w |= 1 << (lpn % 64);
        }
    }

    /// Move `lpn` into reduced pages (evicting the least recently accessed when full).
    fn migrate_in(&mut self, lpn: u32, actions: &mut Vec<Action>) {
        if self.cell.cap == 0 || self.cell.contains(lpn) {
            return;
        }
        if let Some(victim) = self.cell.insert(lpn) {
            self.migrations_out += 1;
            actions.push(Action::Rewrite {
                lpn: victim,
                source: Source::Migration,
                wait: false,
            });
        }
        self.migrations_in += 1;
        self.mark_identified(lpn);
        actions.push(Action::Rewrite {
            lpn,
            source: Source::Migration,
            wait: false,
        });
    }

    /// The LPNs read at least once and the read count that makes an LPN frequently read (the
    /// 20 % of them with the most reads, at least one), `None` when nothing was read. Shared
    /// by [`FlexLevel::read_profile`] and [`FlexLevel::false_identification`] (with tracking).
    fn frequent_read_cut(&self) -> Option<(usize, u32)> {
        let mut read: Vec<u32> = self
            .reads_by_lpn
            .iter()
            .copied()
            .filter(|&c| c > 0)
            .collect();
        if read.is_empty() {
            return None;
        }
        read.sort_unstable_by(|a, b| b.cmp(a));
        let k = ((read.len() as f64 * 0.2).ceil() as usize).max(1);
        Some((read.len(), read[k - 1]))
    }

    /// Table 9's columns over the run (with tracking): LPNs read, the frequently read ones
    /// (the 20 % with the most reads), and how many of those are IWFR (written at most once).
    pub fn read_profile(&self) -> Option<(u64, u64, u64)> {
        if !self.track {
            return None;
        }
        let Some((read, cut)) = self.frequent_read_cut() else {
            return Some((0, 0, 0));
        };
        let (mut freq, mut iwfr) = (0u64, 0u64);
        for (lpn, &r) in self.reads_by_lpn.iter().enumerate() {
            if r >= cut && r > 0 {
                freq += 1;
                iwfr += (self.writes_by_lpn[lpn] <= 1) as u64;
            }
        }
        Some((read as u64, freq, iwfr))
    }

    /// False identification rate |identified ∖ truth| / |identified| (module doc), `None`
    /// without tracking or with nothing identified.
    pub fn false_identification(&self) -> Option<(f64, u64, u64)> {
        if !self.track {
            return None;
        }
        let (_, cut) = self.frequent_read_cut()?;
        let (mut ident, mut wrong) = (0u64, 0u64);
        for (w, &bits) in self.identified.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let lpn = w * 64 + b.trailing_zeros() as usize;
                b &= b - 1;
                ident += 1;
                let truth = self.reads_by_lpn[lpn] >= cut && self.writes_by_lpn[lpn] <= 1;
                wrong += (!truth) as u64;
            }
        }
        (ident > 0).then(|| (wrong as f64 / ident as f64, ident, wrong))
    }
}

impl Scheme for FlexLevel {
    fn name(&self) -> &'static str {
        "flexlevel"
    }

    fn set_regions(&mut self, info: &RegionInfo) {
        let n = info.n.max(1);
        self.reduced = if self.reduced_param < 0 {
            (n - 1) as u8
        } else {
            (self.reduced_param as usize).min(n - 1) as u8
        };
        self.normal = if self.fill_param >= 0 {
            (self.fill_param as usize).min(n - 1) as u8
        } else if self.reduced == 0 {
            (n.min(2) - 1) as u8
        } else {
            0
        };
    }

    fn validate(&self, info: &RegionInfo) -> Result<(), ConfigError> {
        let need = if self.variant == Variant::LevelAdjustOnly {
            1
        } else {
            2
        };
        if !info.configured || info.n < need {
            return Err(ConfigError::Invalid {
                key: "scheme.name".into(),
                value: "\"flexlevel\"".into(),
                msg: format!(
                    "flexlevel needs a [regions] device with a reduced-state region{}; use the \
                     preset `flexlevel` (configs/flexlevel.toml)",
                    if need == 2 { " and a normal one" } else { "" }
                ),
            });
        }
        for (key, v, n) in [
            ("scheme.params.reduced_region", self.reduced_param, info.n),
            ("scheme.params.fill_region", self.fill_param, info.n),
        ] {
            if v >= n as i64 {
                return Err(ConfigError::Invalid {
                    key: key.into(),
                    value: v.to_string(),
                    msg: format!("the device has {n} regions (0 ..= {})", n - 1),
                });
            }
        }
        if self.variant == Variant::AccessEval && self.normal == self.reduced {
            return Err(ConfigError::Invalid {
                key: "scheme.params.fill_region".into(),
                value: self.fill_param.to_string(),
                msg: "the normal-state region must differ from the reduced one".into(),
            });
        }
        Ok(())
    }

    fn on_host_request(&mut self, _op: crate::trace::Op, _first: u32, _pages: u32) {
        if let Some(m) = self.mbf.as_mut() {
            m.begin_request();
        }
    }

    fn on_host_write(&mut self, lpn: u32, ctx: &Ctx<'_>) {
        self.ensure_sized(ctx);
        if self.track {
            let w = &mut self.writes_by_lpn[lpn as usize];
            *w = w.saturating_add(1);
        }
        if let Some(m) = self.mbf.as_mut() {
            m.record(lpn, true);
        }
        if self.variant == Variant::LevelAdjustOnly {
            return;
        }
        self.fwfr.touch(lpn);
        if !self.iwfr.is_empty() {
            self.iwfr.remove(lpn);
        }
        if !self.cell.is_empty() {
            self.cell.remove(lpn);
        }
    }

    fn on_host_read(&mut self, lpn: u32, ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        self.ensure_sized(ctx);
        let (levels, in_reduced) = self.page_levels(ppn, ctx);
        if in_reduced {
            self.reads_reduced += 1;
        } else {
            self.reads_normal_by_levels[(levels as usize).min(6)] += 1;
        }
        if self.track {
            let r = &mut self.reads_by_lpn[lpn as usize];
            *r = r.saturating_add(1);
        }
        if self.variant == Variant::LevelAdjustOnly {
            return;
        }
        if self.cell.contains(lpn) {
            self.cell.touch(lpn);
            return;
        }
        if let Some(m) = self.mbf.as_mut() {
            m.record(lpn, false);
            let (r, w) = m.hotness(lpn);
            if r >= self.mbf_hot && w == 0.0 {
                self.migrate_in(lpn, actions);
            }
            return;
        }
        // FWFR data read without soft sensing stays there; read with it, it becomes IWFR data.
        if levels == 0 {
            if self.fwfr.touch_existing(lpn).is_some() {
                return;
            }
        } else if self.fwfr.remove(lpn) {
            self.fwfr_to_iwfr += 1;
        }
        let (_, count) = self.iwfr.touch(lpn);
        self.iwfr_reads += 1;
        if self.iwfr_reads % 256 == 1 {
            self.top_count = self.iwfr.top_count(self.lf_top);
        }
        if self.overhead_migrates(count, levels) {
            self.migrate_in(lpn, actions);
        }
    }

    fn placement(&mut self, lpn: u32, source: Source, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        let region = match self.variant {
            Variant::LevelAdjustOnly => self.reduced,
            Variant::AccessEval if self.cell.contains(lpn) => self.reduced,
            Variant::AccessEval => self.normal,
        };
        let stream = if source == Source::Host {
            0
        } else {
            self.gc_stream
        };
        Placement::in_region(stream, region)
    }

    fn precondition_placement(&mut self, lpn: u32, ctx: &Ctx<'_>) -> Placement {
        // Data written before the trace is not access history; it sits in normal pages
        // (LevelAdjust-only: in reduced pages, where all data lives).
        self.ensure_sized(ctx);
        Placement {
            region: match self.variant {
                Variant::LevelAdjustOnly => self.reduced,
                Variant::AccessEval => self.normal,
            },
            ..self.placement(lpn, Source::Gc, ctx)
        }
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = json!({
            "variant": match self.variant {
                Variant::LevelAdjustOnly => "level_adjust_only",
                Variant::AccessEval => "access_eval",
            },
            "identifier": match self.identifier { Identifier::Iwfr => "iwfr", Identifier::Mbf => "mbf" },
            "reduced_region": self.reduced,
            "migrations_to_reduced": self.migrations_in,
            "migrations_to_normal": self.migrations_out,
            "fwfr_to_iwfr": self.fwfr_to_iwfr,
            "reduced_cell_pages": self.cell.len(),
            "reduced_cell_capacity_pages": self.cell.cap,
            "fwfr_entries": self.fwfr.len(),
            "iwfr_entries": self.iwfr.len(),
            "host_reads_reduced": self.reads_reduced,
            "host_reads_normal_by_extra_levels": self.reads_normal_by_levels,
        });
        if let Some((read, freq, iwfr)) = self.read_profile() {
            v["read_lpns"] = json!(read);
            v["frequently_read_lpns"] = json!(freq);
            v["iwfr_lpns"] = json!(iwfr);
        }
        if let Some((rate, ident, wrong)) = self.false_identification() {
            v["false_identification_rate"] = json!(rate);
            v["identified_lpns"] = json!(ident);
            v["falsely_identified_lpns"] = json!(wrong);
        }
        v
    }
}

#[cfg(test)]
#[path = "flexlevel_tests.rs"]
mod tests;
