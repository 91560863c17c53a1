//! Flash pages and chunks: what a page holds (type, OOB, contents), the per-page state of
//! each chunk (dense while open, sparse for the valid pages of a full chunk in a performance
//! run), log-structured allocation over the dies and the programs and reads themselves.
//!
//! Source: §4.1.2 and §4.5.4.1 (log-structured allocation, the chunk as GC unit, data and
//! metadata in separate chunks), §4.6.2 (pages "evenly distributed to all channels"), F34
//! (OOB: type, object id, SN, and per type offset/length, VA or onode count).
//!
//! Readings (\[N\], spec §1): a chunk is `osd.chunk_blocks` consecutive blocks of one die;
//! each (die, page type) has one open chunk; pages go round-robin over dies per type; a GC
//! move or the capacitor flush may use another stream's open chunk when the die has no clean
//! chunk left.

use std::sync::Arc;

use super::*;

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

/// Recorded page contents (record mode), one list per chunk indexed by page offset. A chunk's
/// list is shared between clones of a device (copy on write, [`Arc::make_mut`]): the crash
/// harness clones a device holding a whole trace footprint once per cut and copies one
/// pointer per chunk, then only the chunks the cut's run programs or erases (issue 17).
#[derive(Clone, Debug)]
pub struct Contents {
    pub(super) ppc: u32,
    pub(super) chunks: Vec<Option<Arc<Vec<Option<PageContent>>>>>,
}

impl Contents {
    pub(super) fn new(nchunks: usize, ppc: u32) -> Contents {
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
    pub(super) fn set(&mut self, ppn: u32, v: Option<PageContent>) {
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
    pub(super) pages: Vec<Option<Box<ChunkPages>>>,
    pub(super) contents: Contents,
    /// Erase count per block (kept on flash by real devices).
    pub(super) erase_count: Vec<u32>,
    /// The stripe table as the OOB of the readable pages gives it ([`Stripes`]).
    pub(super) stripes: Stripes,
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

pub(super) const FREE: u8 = 0;
pub(super) const VALID: u8 = 1;
pub(super) const INVALID: u8 = 2;
/// A program or erase the power cut interrupted: unreadable.
pub(super) const TORN: u8 = 3;
/// Page type of the capacitor-backed flush.
pub const BACKUP: usize = 3;

pub(super) const C_FREE: u8 = 0;
pub(super) const C_OPEN: u8 = 1;
pub(super) const C_FULL: u8 = 2;

/// Per-page state of one chunk, allocated when the chunk is first opened. `state`, `ptype`,
/// `oid`, `sn`, `aux`, `len` are what flash holds (the page and its OOB, F34; `state` FREE =
/// erased); `back` is the device's DRAM reverse map (data: object slot; index: node id;
/// onode: onode-page record).
#[derive(Clone, Debug)]
pub(super) struct ChunkPages {
    pub(super) state: Vec<u8>,
    pub(super) ptype: Vec<u8>,
    pub(super) oid: Vec<u64>,
    pub(super) sn: Vec<u64>,
    /// SN of the content (kept by GC moves: the spec's `data_sn`, for every page type).
    pub(super) csn: Vec<u64>,
    /// Data: page index in the object; index: VA (or node id without the virtual tree);
    /// onode: onodes in the page.
    pub(super) aux: Vec<u32>,
    /// Data: valid bytes.
    pub(super) len: Vec<u32>,
    pub(super) back: Vec<u32>,
}

impl ChunkPages {
    pub(super) fn new(n: usize) -> ChunkPages {
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
pub(super) struct PageRec {
    pub(super) oid: u64,
    pub(super) csn: u64,
    pub(super) aux: u32,
    pub(super) len: u32,
    pub(super) back: u32,
    pub(super) ptype: u8,
    pub(super) state: u8,
}

impl ChunkPages {
    /// Page `off` (PPN `ppn`) as a readable [`FlashPage`]: `None` if erased or torn.
    #[inline]
    pub(super) fn flash_page<'a>(
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
    pub(super) fn rec(&self, off: usize) -> PageRec {
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
pub(super) struct SparsePages {
    pub(super) valid: Vec<u64>,
    pub(super) offs: Vec<u32>,
    pub(super) recs: Vec<PageRec>,
    pub(super) dead: u32,
}

impl SparsePages {
    /// The valid pages of a dense full chunk.
    pub(super) fn from_dense(p: &ChunkPages) -> SparsePages {
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
    pub(super) fn is_valid(&self, off: usize) -> bool {
        self.valid[off / 64] & (1 << (off % 64)) != 0
    }

    /// The page at `off`: its row, or an invalid page without OOB fields.
    #[inline]
    pub(super) fn rec(&self, off: usize) -> PageRec {
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
    pub(super) fn invalidate(&mut self, off: usize) -> bool {
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
    pub(super) fn compact(&mut self) {
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
pub(super) struct ChunkMeta {
    pub(super) state: u8,
    pub(super) stream: u8,
    pub(super) valid: u32,
    pub(super) wp: u32,
    /// Superseded index pages in it that an object's last committed onode may still reach
    /// (see [`Device::pin`]): GC moves them with the chunk under the virtual tree and does
    /// not take the chunk under the extent tree.
    pub(super) pins: u32,
    /// YAFFS2-like: it holds a shrink header (a truncate's object header), valid or not
    /// (YAFFS2's `has_shrink_hdr`); see [`Device::carry_shrink_headers`].
    pub(super) shrink: bool,
    /// SN of its first page programmed since its last erase ([`Device::chunk_sn`]).
    pub(super) first_sn: u64,
}

impl Device {
    /// Whether page `ppn` is valid.
    pub fn page_valid(&self, ppn: u32) -> bool {
        let (c, off) = self.split(ppn);
        if c >= self.pages.len() {
            return false;
        }
        match (self.pages[c].as_deref(), self.sparse[c].as_deref()) {
            (Some(p), _) => p.state[off] == VALID,
            (None, Some(sp)) => sp.is_valid(off),
            (None, None) => false,
        }
    }

    /// Page `off` of chunk `c` (dense or [`SparsePages`]); `None` for a chunk without
    /// per-page state (never opened, or dropped with nothing valid).
    #[inline]
    pub(super) fn page_at(&self, c: usize, off: usize) -> Option<PageRec> {
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

    /// Full chunks kept sparse, and the rows they hold (tests and diagnostics).
    pub fn sparse_chunks(&self) -> (usize, usize) {
        self.sparse
            .iter()
            .flatten()
            .fold((0, 0), |(n, r), s| (n + 1, r + s.recs.len()))
    }

    #[inline]
    pub(super) fn split(&self, ppn: u32) -> (usize, usize) {
        ((ppn / self.ppc) as usize, (ppn % self.ppc) as usize)
    }

    #[inline]
    pub(super) fn die_of_chunk(&self, c: u32) -> u32 {
        c / self.cpd
    }

    pub(super) fn invalidate(&mut self, ppn: u32) {
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
    pub(super) fn trim_page_state(&mut self, c: usize) {
        let m = &self.chunks[c];
        if m.state != C_FULL || m.shrink || self.contents.is_some() {
            return;
        }
        if m.valid == 0 && !self.in_gc {
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
    pub(super) fn next_die(&mut self, ty: usize) -> Result<u32, OsdError> {
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
    pub(super) fn program(
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
        } else if ty == DATA && self.in_gc {
            // GC's data moves keep out of the host stripes (their rows stay in lockstep).
            GC_DATA
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
                if stream == DATA && self.separate {
                    self.stripes.join(c);
                }
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

    pub(super) fn read(&mut self, ty: usize, ppn: u32, src: Src) {
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

    pub(super) fn close_stage(&mut self) {
        if !self.in_gc {
            self.plan.push_stage(&mut self.cur);
        }
    }

    pub(super) fn content_of(&self, ppn: u32) -> Option<&PageContent> {
        self.contents.as_ref()?.get(ppn)
    }

    pub(super) fn csn_of(&self, ppn: u32) -> u64 {
        let (c, off) = self.split(ppn);
        self.page_at(c, off).map_or(0, |p| p.csn)
    }
}
