//! Flash translation layer: page-level mapping, allocation, garbage collection and wear.
//!
//! The FTL is pure state with no notion of time cost: the engine decides *when* each of its
//! operations happens and charges the flash time; preconditioning calls the same operations
//! untimed. A host write of one page is `allocate` + `program` (which invalidates the old copy);
//! GC is `select_victim`, then a `relocate` per still-valid page, then `erase`.
//!
//! # State (DESIGN §5)
//!
//! Struct-of-arrays sized once from the geometry:
//! * per page: state (free / valid / invalid) in a 2-bit bitmap (32 pages per `u64`: 0.6 MB for
//!   2.4 M pages, so the invalidation a host write makes hits cache), the LPN it holds (P2L,
//!   `u32`), ECC id and program mode (`u8` each), read-type flags (`u8`), program time (s
//!   relative to the trace start, negative for preconditioned data). Each path touches only the
//!   arrays it needs: a host write the L2P and the bitmap, a host read the L2P and the ECC
//!   byte, a GC move the bitmap and the P2L of its (sequential) victim pages. Every array is
//!   allocated zeroed (all-zero = free page), so the OS maps memory only for pages written;
//! * per block: valid count, write pointer, erase count, state (free / open / full / victim),
//!   stream, time it became full, reads since erase;
//! * L2P `Vec<u32>` indexed by LPN.
//!
//! Invariants, checked by [`Ftl::check_invariants`] (debug builds and property tests): every
//! mapped LPN points at a valid page whose LPN field is that LPN; every valid page is the target
//! of its LPN; per-block valid counts equal the number of valid pages; pages above a block's
//! write pointer are free and those below are not.
//!
//! # Garbage collection
//!
//! A plane needs GC while its free blocks are fewer than `gc_threshold_blocks` =
//! max(⌈blocks_per_plane × gc_threshold_pct / 100⌉, 2). Host writes may not take a plane's last
//! free block ([`HOST_RESERVE_BLOCKS`]); GC may, so relocation always finds space. Victims are
//! full blocks only (never an open block). Free blocks are reused in the order they were erased
//! (FIFO), which spreads erases without a separate wear-levelling policy.
//!
//! # Regions (block pools)
//!
//! With `[regions]` each plane's blocks are split into R pools by fraction ([`Ftl::with_regions`]);
//! a block's region never changes. Free lists, open blocks, GC candidates and GC thresholds are
//! per *pool* = (plane, region), numbered `plane · R + region`; without regions R = 1 and a pool
//! is a plane, so everything below reads "plane" for "pool". GC relocates a victim's pages
//! within its pool and an erased block returns to its pool's free list.
//!
//! # Wear stages
//!
//! The FTL keeps the sum of all blocks' erase counts; the device's wear stage is the last
//! `stage_pe[i]` the mean P/E count has reached (EFM §IV-B "latency sensor", Table III).
//!
//! # Over-provisioning and the write-amplification model
//!
//! In steady state a plane keeps about `gc_threshold_blocks` free blocks, so the space that holds
//! data is T = (blocks_per_plane − gc_threshold_blocks) × pages_per_block per plane; the
//! analytic models (Desnoyers 2012) use α = T / U with U the plane's logical pages.

mod alloc;
mod check;
pub mod cmt;
mod gc;
mod state;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use crate::config::{Allocation, VictimPolicy};
use crate::flash::{BlockLayout, DivU32, Geometry, PageOrder, PageType};
use crate::mem::{filled, zeroed, AllocError};

/// L2P / page-LPN sentinel: not mapped.
pub const UNMAPPED: u32 = u32::MAX;
/// Block / open-block sentinel.
pub const NONE: u32 = u32::MAX;
/// Block kind: reprogrammed by IDA coding (IDA §III-C, "an additional bit (per block)").
pub const BLOCK_IDA: u8 = 1;
/// Page flags bits 0–1: read type after an IDA voltage adjustment, as `PageType + 1`
/// (0 = not adjusted). IDA §III-C keeps one bit per word line (CSB+MSB vs MSB-only code); the
/// per-page read type derives from it and is what the read path needs.
const FLAG_READ_TYPE_MASK: u8 = 0x3;
/// Pages per word of the state bitmap (2 bits each).
const STATE_PER_WORD: u32 = 32;
/// Low bit of every 2-bit state field of a word.
const STATE_LOW_BITS: u64 = 0x5555_5555_5555_5555;

/// Free blocks host writes leave to GC in each plane.
pub const HOST_RESERVE_BLOCKS: usize = 1;

/// Page state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageState {
    /// Erased, programmable.
    Free = 0,
    /// Holds the current copy of its LPN.
    Valid = 1,
    /// Holds a stale copy.
    Invalid = 2,
}

/// Block state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// Erased, in its plane's free list.
    Free = 0,
    /// Being filled by a stream.
    Open = 1,
    /// All pages programmed.
    Full = 2,
    /// Selected by GC, being emptied.
    Victim = 3,
}

/// Allocation failure: the plane has no free page for this stream right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSpace;

/// Per-page metadata (decoded view of the per-page arrays; see the module documentation). A
/// free page reads as all zero with `lpn` = [`UNMAPPED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageMeta {
    /// LPN stored ([`UNMAPPED`] when free).
    pub lpn: u32,
    /// Program time, s relative to the trace start (negative: preconditioned data).
    pub program_s: i32,
    /// [`PageState`] as u8.
    pub state: u8,
    /// Program mode id.
    pub mode: u8,
    /// ECC id.
    pub ecc: u8,
    /// Scheme flags (reserved for IDA-adjusted, reduced-level, cache-clean bits).
    pub flags: u8,
}

/// The FTL state. See the module documentation.
#[derive(Clone, Debug)]
pub struct Ftl {
    /// Geometry.
    pub geo: Geometry,
    /// Logical capacity in pages.
    pub logical_pages: u32,
    /// PPN + 1 of each LPN; 0 = unmapped (so the array is allocated zeroed, lazily).
    l2p: Vec<u32>,
    /// Page states, 2 bits per page ([`PageState`]), 32 pages per word.
    state: Vec<u64>,
    /// LPN held by each page (meaningful when not free).
    p2l: Vec<u32>,
    /// ECC id of each page.
    ecc: Vec<u8>,
    /// Program mode of each page.
    mode: Vec<u8>,
    /// Flags of each page (bits 0–1: IDA read type + 1).
    flags: Vec<u8>,
    /// Program time of each page, s relative to the trace start.
    program_s: Vec<i32>,
    /// Whether any page ever got a read-type flag (reads skip the flags otherwise).
    any_read_type: bool,
    /// Whether any page was ever programmed with an ECC id other than 0. Until then `ecc` is
    /// all zeros and is neither read nor written: on a drive with one ECC a read touches one
    /// per-page array less (a cache miss per random host read).
    any_ecc: bool,
    /// Whether any page was ever programmed with a program mode other than 0 (as `any_ecc`).
    any_mode: bool,
    blk_valid: Vec<u32>,
    blk_wp: Vec<u32>,
    blk_erase: Vec<u32>,
    blk_state: Vec<u8>,
    blk_stream: Vec<u8>,
    blk_full_ns: Vec<u64>,
    blk_reads: Vec<u32>,
    /// Time the block's data was last written as a whole, s (first program after erase, or an
    /// IDA voltage adjustment): the data-refresh clock.
    blk_data_s: Vec<i32>,
    /// Block kind: 0 normal, [`BLOCK_IDA`] after an IDA voltage adjustment (IDA §III-C: one
    /// bit per block).
    blk_kind: Vec<u8>,
    // Greedy: per (plane, valid count) intrusive doubly linked lists of full blocks.
    bkt_head: Vec<u32>,
    bkt_next: Vec<u32>,
    bkt_prev: Vec<u32>,
    // FIFO: per plane, full blocks in the order they filled.
    fifo: Vec<VecDeque<u32>>,
    free: Vec<VecDeque<u32>>,
    open: Vec<u32>,
    /// Per open slot, with page-type-aware allocation ([`Ftl::allocate_typed`]): the next word
    /// line of each bit (page type) of the open block; `None` while the block is filled in
    /// page order (its write pointer is then the allocation state).
    open_cursor: Vec<Option<[u32; 4]>>,
    /// Word-line layout of a block (page types, program order).
    layout: BlockLayout,
    streams: u32,
    /// Regions (pools per plane); 1 without `[regions]`.
    regions: u32,
    /// Region of each block.
    blk_region: Vec<u8>,
    /// GC threshold of each region's pools (free blocks).
    region_gc_threshold: Vec<usize>,
    /// Free blocks at or below which a region's pools are critically low (GC goes first).
    region_urgent: Vec<usize>,
    /// Blocks per plane of each region.
    region_blocks: Vec<u32>,
    /// Pages each region's blocks hold (`pages_per_block`, or fewer for reduced-state cells:
    /// FlexLevel's 3 levels keep 3 bits per 2 MLC cells, ¾ of the pages; Guo Fig. 17).
    region_ppb: Vec<u32>,
    /// Sum of all blocks' erase counts.
    pe_sum: u64,
    /// Mean P/E at which each wear stage starts.
    stage_pe: Vec<f64>,
    stage: u8,
    rr_plane: u32,
    allocation: Allocation,
    victim_policy: VictimPolicy,
    /// GC runs on a plane while it has fewer free blocks than this.
    pub gc_threshold_blocks: usize,
    /// Dividers by pages per block, blocks per plane, planes and regions.
    ppb_div: DivU32,
    bpp_div: DivU32,
    planes_div: DivU32,
    regions_div: DivU32,
    /// Static CWDP plane of `lpn` = `cwdp[lpn % planes]`.
    cwdp: Vec<u32>,
    /// Planes allocated together: a die's planes with [`Allocation::Superpage`], else 1 (each
    /// plane its own pool). See "Superblocks" in the module documentation.
    group: u32,
    group_div: DivU32,
    /// Pages of one plane in a super-page: a word line's pages with one-shot programming, else
    /// 1 ([`Ftl::set_superpage_unit`]).
    sp_unit: u32,
    /// Dividers by `sp_unit` and by the super-page's pages (`group × sp_unit`): the superblock
    /// cursor's arithmetic without a hardware division per allocated page (with mapping units
    /// neither is a power of two: 12 and 48 on the default drive).
    sp_unit_div: DivU32,
    sp_div: DivU32,
    /// Mapping units per flash page ([`Ftl::set_map_units`]; 1: the FTL maps pages).
    units_div: DivU32,
    /// Superpage mode, per superblock (indexed by its representative block, the block on the
    /// die's first plane): pages allocated, and valid pages.
    sb_wp: Vec<u32>,
    sb_valid: Vec<u32>,
}

impl Ftl {
    /// Build an empty (all blocks free) FTL.
    pub fn new(
        geo: Geometry,
        logical_pages: u64,
        streams: u32,
        allocation: Allocation,
        victim_policy: VictimPolicy,
        gc_threshold_pct: f64,
    ) -> Ftl {
        let bpp = geo.blocks_per_plane;
        Ftl::with_regions(
            geo,
            logical_pages,
            streams,
            allocation,
            victim_policy,
            gc_threshold_pct,
            &[bpp],
        )
    }

    /// Make room in the L2P for `n` hidden LPNs above the logical capacity (scheme-owned pages,
    /// [`crate::scheme::Scheme::hidden_pages`]); `logical_pages` stays the host's capacity.
    /// Called before anything is programmed: the L2P is allocated anew, zeroed (so the OS backs
    /// it lazily, as the logical part).
    ///
    /// # Errors
    /// [`AllocError`] when the larger table cannot be allocated.
    pub fn extend_hidden(&mut self, n: u64) -> Result<(), AllocError> {
        debug_assert_eq!(self.mapped_pages(), 0);
        self.l2p = zeroed(self.logical_pages as usize + n as usize, "the L2P table")?;
        Ok(())
    }

    /// Bytes the FTL's tables take for `geo` and `logical_pages` (L2P 4 B per logical page;
    /// P2L, program time, ECC, mode, flags and 2 state bits per physical page; ~64 B per
    /// block). Used to refuse a device this machine cannot hold before allocating it.
    pub fn table_bytes(geo: &Geometry, logical_pages: u64) -> u64 {
        logical_pages * 4 + geo.pages() * 45 / 4 + geo.blocks() as u64 * 64
    }

    /// Build an empty FTL whose planes are split into regions of `region_blocks[r]` blocks
    /// each; see [`Ftl::try_with_regions`].
    ///
    /// # Panics
    /// When the tables cannot be allocated (use [`Ftl::try_with_regions`] on user input).
    pub fn with_regions(
        geo: Geometry,
        logical_pages: u64,
        streams: u32,
        allocation: Allocation,
        victim_policy: VictimPolicy,
        gc_threshold_pct: f64,
        region_blocks: &[u32],
    ) -> Ftl {
        Ftl::try_with_regions(
            geo,
            logical_pages,
            streams,
            allocation,
            victim_policy,
            gc_threshold_pct,
            region_blocks,
        )
        .expect("FTL tables")
    }

    /// Build an empty FTL whose planes are split into regions of `region_blocks[r]` blocks
    /// each (they must sum to `blocks_per_plane`; checked by the config). Region `r` holds the
    /// plane's blocks from `Σ_{i<r} region_blocks[i]` on.
    pub fn try_with_regions(
        geo: Geometry,
        logical_pages: u64,
        streams: u32,
        allocation: Allocation,
        victim_policy: VictimPolicy,
        gc_threshold_pct: f64,
        region_blocks: &[u32],
    ) -> Result<Ftl, AllocError> {
        let pages = geo.pages() as usize;
        let blocks = geo.blocks() as usize;
        let planes = geo.planes() as usize;
        let ppb = geo.pages_per_block as usize;
        let bpp = geo.blocks_per_plane as usize;
        let nr = region_blocks.len().max(1);
        let mut blk_region: Vec<u8> = zeroed(blocks, "the per-block regions")?;
        let group = if allocation == Allocation::Superpage {
            // The config refuses regions with superpages: one region, one pool per die.
            debug_assert_eq!(nr, 1);
            geo.planes_per_die
        } else {
            1
        };
        let mut free = Vec::with_capacity(planes / group as usize * nr);
        if group > 1 {
            // One pool per die holding its superblocks, each named by its block on the die's
            // first plane.
            for d in 0..planes / group as usize {
                let first = d * group as usize * bpp;
                free.push(
                    (first..first + bpp)
                        .map(|b| b as u32)
                        .collect::<VecDeque<u32>>(),
                );
            }
        } else {
            for p in 0..planes {
                let mut start = p * bpp;
                for (r, &n) in region_blocks.iter().enumerate() {
                    let mut q = VecDeque::with_capacity(n as usize);
                    q.extend((start..start + n as usize).map(|b| b as u32));
                    blk_region[start..start + n as usize].fill(r as u8);
                    start += n as usize;
                    free.push(q);
                }
            }
        }
        let pools = free.len();
        let thr_of = |n: usize| (((n as f64) * gc_threshold_pct / 100.0).ceil() as usize).max(2);
        let thr = ((bpp as f64) * gc_threshold_pct / 100.0).ceil() as usize;
        let region_gc_threshold: Vec<usize> = if nr == 1 {
            vec![thr.max(2)]
        } else {
            region_blocks.iter().map(|&n| thr_of(n as usize)).collect()
        };
        let region_urgent = region_gc_threshold
            .iter()
            .map(|&t| (t / 2).max(HOST_RESERVE_BLOCKS))
            .collect();
        Ok(Ftl {
            logical_pages: logical_pages as u32,
            l2p: zeroed(logical_pages as usize, "the L2P table")?,
            state: zeroed(
                pages.div_ceil(STATE_PER_WORD as usize),
                "the page-state bitmap",
            )?,
            p2l: zeroed(pages, "the per-page LPN table (P2L)")?,
            ecc: zeroed(pages, "the per-page ECC table")?,
            mode: zeroed(pages, "the per-page program-mode table")?,
            flags: zeroed(pages, "the per-page flags")?,
            program_s: zeroed(pages, "the per-page program times")?,
            any_read_type: false,
            any_ecc: false,
            any_mode: false,
            blk_valid: zeroed(blocks, "the per-block valid counts")?,
            blk_wp: zeroed(blocks, "the per-block write pointers")?,
            blk_erase: zeroed(blocks, "the per-block erase counts")?,
            blk_state: zeroed(blocks, "the per-block states")?,
            blk_stream: zeroed(blocks, "the per-block streams")?,
            blk_full_ns: zeroed(blocks, "the per-block fill times")?,
            blk_reads: zeroed(blocks, "the per-block read counts")?,
            blk_data_s: zeroed(blocks, "the per-block data ages")?,
            blk_kind: zeroed(blocks, "the per-block kinds")?,
            bkt_head: filled(
                pools * (ppb * group as usize + 1),
                NONE,
                "the GC victim buckets",
            )?,
            bkt_next: filled(blocks, NONE, "the GC victim lists")?,
            bkt_prev: filled(blocks, NONE, "the GC victim lists")?,
            fifo: (0..pools)
                .map(|_| VecDeque::with_capacity(bpp / nr))
                .collect(),
            free,
            open: vec![NONE; pools * streams as usize],
            open_cursor: vec![None; pools * streams as usize],
            layout: BlockLayout::new(ppb, geo.cell.bits(), PageOrder::Sequential),
            streams,
            regions: nr as u32,
            blk_region,
            region_gc_threshold,
            region_urgent,
            region_blocks: region_blocks.to_vec(),
            region_ppb: vec![geo.pages_per_block; nr],
            pe_sum: 0,
            stage_pe: vec![0.0],
            stage: 0,
            rr_plane: 0,
            allocation,
            victim_policy,
            gc_threshold_blocks: thr.max(2),
            ppb_div: DivU32::new(geo.pages_per_block),
            bpp_div: DivU32::new(geo.blocks_per_plane),
            planes_div: DivU32::new(geo.planes()),
            regions_div: DivU32::new(nr as u32),
            cwdp: (0..geo.planes()).map(|l| geo.cwdp_plane(l)).collect(),
            group,
            group_div: DivU32::new(group),
            sp_unit: 1,
            sp_unit_div: DivU32::new(1),
            sp_div: DivU32::new(group),
            units_div: DivU32::new(1),
            sb_wp: if group > 1 {
                zeroed(blocks, "the superblock cursors")?
            } else {
                Vec::new()
            },
            sb_valid: if group > 1 {
                zeroed(blocks, "the superblock valid counts")?
            } else {
                Vec::new()
            },
            geo,
        })
    }

    /// Use `layout` (the device's page order; [`crate::config::Config::layout`]) for page types
    /// and page-type-aware allocation. Default: sequential order.
    pub fn set_layout(&mut self, layout: BlockLayout) {
        debug_assert_eq!(layout.page_type.len(), self.geo.pages_per_block as usize);
        self.layout = layout;
    }

    /// Set the pages each region's blocks hold (≤ `pages_per_block`; the config checks the
    /// values): a block of region `r` is full after `pages[r]` pages, filled in page order.
    pub fn set_region_pages(&mut self, pages: &[u32]) {
        for (r, &n) in pages.iter().enumerate().take(self.region_ppb.len()) {
            self.region_ppb[r] = n.clamp(1, self.geo.pages_per_block);
        }
    }

    /// Pages a block of `region` holds.
    #[inline]
    pub fn region_pages(&self, region: u8) -> u32 {
        self.region_ppb[region as usize]
    }

    /// Pages block `block` holds (its region's).
    #[inline]
    pub fn block_pages(&self, block: u32) -> u32 {
        self.region_ppb[self.blk_region[block as usize] as usize]
    }

    /// The block layout (word line and page type of each page index).
    #[inline]
    pub fn layout(&self) -> &BlockLayout {
        &self.layout
    }

    /// Page type (LSB/CSB/MSB/TSB) of the physical page `ppn`.
    #[inline]
    pub fn page_type(&self, ppn: u32) -> PageType {
        self.layout.page_type[(ppn % self.geo.pages_per_block) as usize]
    }

    /// Set the mean P/E cycles at which each wear stage starts (first 0).
    pub fn set_wear_stages(&mut self, stage_pe: &[f64]) {
        self.stage_pe = if stage_pe.is_empty() {
            vec![0.0]
        } else {
            stage_pe.to_vec()
        };
        self.update_stage();
    }

    fn update_stage(&mut self) {
        let mean = self.mean_pe();
        let s = self.stage_pe.iter().rposition(|&p| mean >= p).unwrap_or(0);
        self.stage = s as u8;
    }

    /// Sum of all blocks' erase counts.
    #[inline]
    pub fn total_erases(&self) -> u64 {
        self.pe_sum
    }

    /// Mean P/E cycles over all blocks.
    #[inline]
    pub fn mean_pe(&self) -> f64 {
        self.pe_sum as f64 / self.blk_erase.len().max(1) as f64
    }

    /// Current wear stage (index into the stage boundaries).
    #[inline]
    pub fn wear_stage(&self) -> usize {
        self.stage as usize
    }

    /// Number of regions (1 without `[regions]`).
    #[inline]
    pub fn regions(&self) -> u32 {
        self.regions
    }

    /// Blocks per plane of each region.
    pub fn region_blocks(&self) -> &[u32] {
        &self.region_blocks
    }

    /// GC threshold (free blocks) of each region's pools.
    pub fn region_gc_threshold(&self) -> &[usize] {
        &self.region_gc_threshold
    }

    /// Region of a block.
    #[inline]
    pub fn block_region(&self, block: u32) -> u8 {
        self.blk_region[block as usize]
    }

    /// Pool (plane · R + region) of a plane's region.
    #[inline]
    pub fn pool(&self, plane: u32, region: u8) -> u32 {
        if self.group > 1 {
            // Superpages: one pool per die (no regions).
            return self.group_div.quot(plane);
        }
        plane * self.regions + region as u32
    }

    /// Pool of a block.
    #[inline]
    pub fn pool_of_block(&self, block: u32) -> u32 {
        self.pool(self.bpp_div.quot(block), self.blk_region[block as usize])
    }

    /// Plane of a pool.
    #[inline]
    pub fn plane_of_pool(&self, pool: u32) -> u32 {
        if self.group > 1 {
            // The die's first plane.
            return pool * self.group;
        }
        self.regions_div.quot(pool)
    }

    /// Number of pools (planes × regions; dies with superpages).
    #[inline]
    pub fn pools(&self) -> u32 {
        self.geo.planes() / self.group * self.regions
    }

    // ----- read-only views -------------------------------------------------------------

    /// PPN of `lpn`, or [`UNMAPPED`].
    #[inline]
    pub fn lookup(&self, lpn: u32) -> u32 {
        self.l2p[lpn as usize].wrapping_sub(1)
    }
    /// Entries in the L2P: the logical capacity plus hidden pages.
    #[inline]
    pub fn lookup_len(&self) -> usize {
        self.l2p.len()
    }
    /// Prefetch the L2P entry of `lpn` (a read of the mapping or a program of the LPN soon).
    #[inline]
    pub fn prefetch_lpn(&self, lpn: u32) {
        crate::prefetch::slice(&self.l2p, lpn as usize);
    }
    /// Prefetch what a read of `lpn`'s page touches, when `lpn` is mapped (reads the L2P
    /// entry: prefetch it first).
    #[inline]
    pub fn prefetch_mapped(&self, lpn: u32) {
        if let Some(&p) = self.l2p.get(lpn as usize) {
            if p != 0 {
                self.prefetch_read(p - 1);
            }
        }
    }
    /// Prefetch what a read of page `ppn` touches (its ECC byte and state word).
    #[inline]
    pub fn prefetch_read(&self, ppn: u32) {
        if self.any_ecc {
            crate::prefetch::slice(&self.ecc, ppn as usize);
        }
        crate::prefetch::slice(&self.state, (ppn / STATE_PER_WORD) as usize);
        if self.any_read_type {
            crate::prefetch::slice(&self.flags, ppn as usize);
        }
    }

    /// Data-refresh clock of a block: s when its data was last written as a whole.
    #[inline]
    pub fn block_data_s(&self, block: u32) -> i32 {
        self.blk_data_s[block as usize]
    }
    /// Restart a block's data-refresh clock (an IDA voltage adjustment rewrote its cells in
    /// place; a block found empty at refresh has nothing to lose).
    pub fn set_block_data_s(&mut self, block: u32, t: i32) {
        self.blk_data_s[block as usize] = t;
    }
    /// Whether a block was reprogrammed by IDA coding since its last erase.
    #[inline]
    pub fn block_is_ida(&self, block: u32) -> bool {
        self.blk_kind[block as usize] == BLOCK_IDA
    }
    /// Mark a block as an IDA block (cleared by erase).
    pub fn mark_ida(&mut self, block: u32) {
        self.blk_kind[block as usize] = BLOCK_IDA;
    }
    /// Claim a full block for data refresh: it leaves the GC candidates (state
    /// [`BlockState::Victim`]) until [`Ftl::unclaim_victim`] returns it. `false` when the
    /// block is not full (open, free, or already claimed by GC or refresh).
    pub fn claim_for_refresh(&mut self, block: u32) -> bool {
        if self.blk_state[block as usize] != BlockState::Full as u8 {
            return false;
        }
        self.untrack_full(block);
        self.blk_state[block as usize] = BlockState::Victim as u8;
        true
    }
    /// Valid pages in a block.
    #[inline]
    pub fn block_valid(&self, block: u32) -> u32 {
        self.blk_valid[block as usize]
    }
    /// Erase (P/E) count of a block.
    #[inline]
    pub fn block_erases(&self, block: u32) -> u32 {
        self.blk_erase[block as usize]
    }
    /// Reads since the block's last erase.
    #[inline]
    pub fn block_reads(&self, block: u32) -> u32 {
        self.blk_reads[block as usize]
    }
    /// State of a block.
    pub fn block_state(&self, block: u32) -> BlockState {
        match self.blk_state[block as usize] {
            0 => BlockState::Free,
            1 => BlockState::Open,
            2 => BlockState::Full,
            _ => BlockState::Victim,
        }
    }
    /// All blocks' erase counts.
    pub fn erase_counts(&self) -> &[u32] {
        &self.blk_erase
    }
    /// Free blocks in a pool (a plane without regions).
    #[inline]
    pub fn free_blocks(&self, pool: u32) -> usize {
        self.free[pool as usize].len()
    }
    /// GC threshold of a pool (free blocks).
    #[inline]
    fn pool_threshold(&self, pool: u32) -> usize {
        self.region_gc_threshold[self.regions_div.modulo(pool) as usize]
    }
    /// True while the pool has fewer free blocks than its GC threshold.
    #[inline]
    pub fn needs_gc(&self, pool: u32) -> bool {
        self.free[pool as usize].len() < self.pool_threshold(pool)
    }
    /// True when free space is critically low (GC must take precedence over host writes).
    #[inline]
    pub fn gc_urgent(&self, pool: u32) -> bool {
        self.free[pool as usize].len() <= self.region_urgent[self.regions_div.modulo(pool) as usize]
    }
    /// True when any pool of `plane` is critically low.
    #[inline]
    pub fn plane_gc_urgent(&self, plane: u32) -> bool {
        if self.group > 1 {
            return self.gc_urgent(self.pool(plane, 0));
        }
        if self.regions == 1 {
            return self.free[plane as usize].len() <= self.region_urgent[0];
        }
        let p0 = plane * self.regions;
        (p0..p0 + self.regions).any(|p| self.gc_urgent(p))
    }
    /// Number of valid (mapped) pages.
    pub fn mapped_pages(&self) -> u64 {
        self.blk_valid.iter().map(|&v| v as u64).sum()
    }

    // ----- allocation ------------------------------------------------------------------

    /// Global block of a PPN (the geometry's, without a division).
    #[inline]
    pub fn block_of(&self, ppn: u32) -> u32 {
        self.ppb_div.quot(ppn)
    }

    /// Index of a PPN within its block.
    #[inline]
    pub fn page_index(&self, ppn: u32) -> u32 {
        self.ppb_div.modulo(ppn)
    }

    /// The plane a read of the data at `ppn` is served by.
    #[inline]
    pub fn plane_of_ppn(&self, ppn: u32) -> u32 {
        self.bpp_div.quot(self.ppb_div.quot(ppn))
    }

    /// The allocation policy.
    pub fn allocation(&self) -> Allocation {
        self.allocation
    }
}
