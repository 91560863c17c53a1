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

    /// Mapping units per flash page (`ftl.mapping_unit_bytes`): static striping places
    /// page-sized groups of `units` consecutive LPNs on one die, so a page-aligned host write
    /// lands in one die as with page mapping. Called before anything is allocated.
    pub fn set_map_units(&mut self, units: u32) {
        self.units_div = DivU32::new(units.max(1));
    }

    /// Superpage mode: the pages of one plane in a super-page, `bits` per cell with one-shot
    /// programming (a word line's pages are programmed at once), else 1; × the mapping units
    /// per page. Called before anything is allocated.
    pub fn set_superpage_unit(&mut self, unit: u32) {
        debug_assert_eq!(self.mapped_pages(), 0);
        debug_assert!(unit >= 1 && self.geo.pages_per_block.is_multiple_of(unit));
        self.sp_unit = unit;
        self.sp_unit_div = DivU32::new(unit);
        self.sp_div = DivU32::new(self.group * unit);
    }

    /// Planes allocated together (a die's with superpages, else 1).
    #[inline]
    pub fn group(&self) -> u32 {
        self.group
    }

    /// Pages of a super-page: the group's planes × the pages of each (1, or a word line's).
    #[inline]
    pub fn superpage_pages(&self) -> u32 {
        self.group * self.sp_unit
    }

    /// Superpage mode: the slots left in the super-page that `stream`'s next program in
    /// `pool` (a die) fills — a whole super-page when a new superblock would be opened — or 0
    /// when nothing can be allocated (`host`: without the GC reserve). A run that programs
    /// this many pages ends on a super-page boundary.
    pub fn superpage_room(&self, pool: u32, stream: u8, host: bool) -> u32 {
        let sp = self.superpage_pages();
        let slot = (pool * self.streams + stream as u32) as usize;
        match self.open[slot] {
            NONE => {
                let reserve = if host { HOST_RESERVE_BLOCKS } else { 0 };
                if self.free[pool as usize].len() > reserve {
                    sp
                } else {
                    0
                }
            }
            rep => sp - self.sp_div.modulo(self.sb_wp[rep as usize]),
        }
    }

    /// The representative (first-plane) block of `block`'s superblock; `block` itself
    /// without superpages.
    #[inline]
    pub fn rep_of(&self, block: u32) -> u32 {
        if self.group == 1 {
            return block;
        }
        let bpp = self.geo.blocks_per_plane;
        let plane = self.bpp_div.quot(block);
        block - self.group_div.modulo(plane) * bpp
    }

    /// The blocks of the GC unit `victim` names: its superblock's members, or itself.
    fn members(&self, victim: u32) -> impl Iterator<Item = u32> {
        let bpp = self.geo.blocks_per_plane;
        (0..self.group).map(move |k| victim + k * bpp)
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
    /// Decoded metadata of a page.
    #[inline]
    pub fn page_meta(&self, ppn: u32) -> PageMeta {
        let state = self.state_bits(ppn);
        if state == PageState::Free as u8 {
            return PageMeta {
                lpn: UNMAPPED,
                program_s: 0,
                state,
                mode: 0,
                ecc: 0,
                flags: 0,
            };
        }
        let p = ppn as usize;
        PageMeta {
            lpn: self.p2l[p],
            program_s: self.program_s[p],
            state,
            mode: self.page_mode(ppn),
            ecc: self.page_ecc(ppn),
            flags: self.flags[p],
        }
    }
    #[inline]
    fn state_bits(&self, ppn: u32) -> u8 {
        ((self.state[(ppn / STATE_PER_WORD) as usize] >> ((ppn % STATE_PER_WORD) * 2)) & 3) as u8
    }
    #[inline]
    fn set_state_bits(&mut self, ppn: u32, v: PageState) {
        let w = &mut self.state[(ppn / STATE_PER_WORD) as usize];
        let sh = (ppn % STATE_PER_WORD) * 2;
        *w = (*w & !(3 << sh)) | ((v as u64) << sh);
    }
    /// State of a page.
    #[inline]
    pub fn page_state(&self, ppn: u32) -> PageState {
        match self.state_bits(ppn) {
            0 => PageState::Free,
            1 => PageState::Valid,
            _ => PageState::Invalid,
        }
    }
    /// LPN stored in a page ([`UNMAPPED`] when free).
    #[inline]
    pub fn page_lpn(&self, ppn: u32) -> u32 {
        if self.state_bits(ppn) == PageState::Free as u8 {
            UNMAPPED
        } else {
            self.p2l[ppn as usize]
        }
    }
    /// Program mode id of a page.
    #[inline]
    pub fn page_mode(&self, ppn: u32) -> u8 {
        if !self.any_mode {
            return 0;
        }
        self.mode[ppn as usize]
    }
    /// ECC id of a page.
    #[inline]
    pub fn page_ecc(&self, ppn: u32) -> u8 {
        if !self.any_ecc {
            return 0;
        }
        self.ecc[ppn as usize]
    }
    /// Program time of a page, s relative to the trace start (negative: preconditioned).
    #[inline]
    pub fn page_program_s(&self, ppn: u32) -> i32 {
        self.program_s[ppn as usize]
    }
    /// Read type of a page after an IDA voltage adjustment (`None`: read as its layout type).
    #[inline]
    pub fn page_read_type(&self, ppn: u32) -> Option<crate::flash::PageType> {
        if !self.any_read_type {
            return None;
        }
        match self.flags[ppn as usize] & FLAG_READ_TYPE_MASK {
            0 => None,
            1 => Some(crate::flash::PageType::Lsb),
            _ => Some(crate::flash::PageType::Csb),
        }
    }
    /// Record that a page now reads as `t` (LSB or CSB) after a voltage adjustment of its word
    /// line. Cleared when the page is programmed again.
    pub fn set_page_read_type(&mut self, ppn: u32, t: crate::flash::PageType) {
        let v = match t {
            crate::flash::PageType::Lsb => 1,
            _ => 2,
        };
        self.any_read_type = true;
        let w = &mut self.flags[ppn as usize];
        *w = (*w & !FLAG_READ_TYPE_MASK) | v;
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

    /// The plane a host write of `lpn` goes to.
    #[inline]
    pub fn plane_for_write(&mut self, lpn: u32) -> u32 {
        self.plane_for_write_in(lpn, 0)
    }

    /// The plane a write of `lpn` into `region` goes to.
    #[inline]
    pub fn plane_for_write_in(&mut self, lpn: u32, region: u8) -> u32 {
        match self.allocation {
            // Superpages: the die of the CWDP plane; the plane within it is the superblock's.
            Allocation::Static | Allocation::Superpage => {
                self.cwdp[self.planes_div.modulo(self.units_div.quot(lpn)) as usize]
            }
            Allocation::Dynamic => {
                // Round-robin, skipping planes that are short of free blocks (unless all are),
                // so that valid data cannot pile up in one plane.
                let planes = self.geo.planes();
                let start = self.rr_plane;
                let p = (0..planes)
                    .map(|k| (start + k) % planes)
                    .find(|&p| !self.needs_gc(self.pool(p, region)))
                    .unwrap_or(start);
                self.rr_plane = (p + 1) % planes;
                p
            }
        }
    }

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

    /// Whether `allocate(plane, stream, host)` would succeed.
    #[inline]
    pub fn can_allocate(&self, plane: u32, stream: u8, host: bool) -> bool {
        self.can_allocate_in(plane, 0, stream, host)
    }

    /// Whether `allocate_in(plane, region, stream, host)` would succeed.
    #[inline]
    pub fn can_allocate_in(&self, plane: u32, region: u8, stream: u8, host: bool) -> bool {
        let pool = self.pool(plane, region);
        let b = self.open[(pool * self.streams + stream as u32) as usize];
        if b != NONE {
            return true;
        }
        let reserve = if host { HOST_RESERVE_BLOCKS } else { 0 };
        self.free[pool as usize].len() > reserve
    }

    /// Take the next free page of `stream`'s open block in `plane`, opening a block from the
    /// free list when needed. Host allocations (`host = true`) never take the last
    /// [`HOST_RESERVE_BLOCKS`] free blocks. `now_ns` stamps a block that becomes full.
    pub fn allocate(
        &mut self,
        plane: u32,
        stream: u8,
        host: bool,
        now_ns: u64,
    ) -> Result<u32, NoSpace> {
        self.allocate_in(plane, 0, stream, host, now_ns)
    }

    /// [`Ftl::allocate`] in a region of the plane.
    pub fn allocate_in(
        &mut self,
        plane: u32,
        region: u8,
        stream: u8,
        host: bool,
        now_ns: u64,
    ) -> Result<u32, NoSpace> {
        self.allocate_typed(plane, region, stream, host, now_ns, None)
            .map(|(ppn, _)| ppn)
    }

    /// [`Ftl::allocate_in`], also telling whether the pool's blocks changed (a free block was
    /// opened or a block became full): only then can the pool's need for GC or its GC
    /// candidates have changed.
    #[inline]
    pub fn allocate_tracked(
        &mut self,
        plane: u32,
        region: u8,
        stream: u8,
        host: bool,
        now_ns: u64,
    ) -> Result<(u32, bool), NoSpace> {
        self.allocate_typed(plane, region, stream, host, now_ns, None)
    }

    /// [`Ftl::allocate_tracked`] with a preferred page type: the page goes to the open block's
    /// next free page of type `prefer` when the block has one left, else (and with `None`) to
    /// its lowest free page. Without a preference blocks fill in page order, as with
    /// [`Ftl::allocate_in`].
    ///
    /// Model: the controller buffers the data of a word line and programs its pages together
    /// (one-shot TLC programming), so within an open block it can put a page on any type whose
    /// next word line is free (IDA §III-C: refresh "uses the limited fast LSB pages of the new
    /// blocks for LSB data"). Word lines of one type are still filled in order. The buffering
    /// itself (how many partial word lines a controller holds) is not modelled.
    pub fn allocate_typed(
        &mut self,
        plane: u32,
        region: u8,
        stream: u8,
        host: bool,
        now_ns: u64,
        prefer: Option<PageType>,
    ) -> Result<(u32, bool), NoSpace> {
        let pool = self.pool(plane, region);
        if self.group > 1 {
            return self.allocate_super(pool, stream, host, now_ns);
        }
        let mut changed = false;
        let slot = (pool * self.streams + stream as u32) as usize;
        let mut b = self.open[slot];
        if b == NONE {
            let reserve = if host { HOST_RESERVE_BLOCKS } else { 0 };
            if self.free[pool as usize].len() <= reserve {
                return Err(NoSpace);
            }
            b = self.free[pool as usize].pop_front().ok_or(NoSpace)?;
            self.blk_state[b as usize] = BlockState::Open as u8;
            self.blk_stream[b as usize] = stream;
            self.open[slot] = b;
            self.open_cursor[slot] = None;
            changed = true;
        }
        let wp = self.blk_wp[b as usize];
        let full = self.region_ppb[region as usize];
        // A reduced-capacity block fills in page order (its page types are not the layout's).
        let page = if (prefer.is_none() && self.open_cursor[slot].is_none())
            || full < self.geo.pages_per_block
        {
            wp
        } else {
            self.typed_page(slot, wp, prefer)
        };
        let ppn = b * self.geo.pages_per_block + page;
        self.blk_wp[b as usize] = wp + 1;
        if wp + 1 == full {
            self.open[slot] = NONE;
            self.open_cursor[slot] = None;
            self.blk_state[b as usize] = BlockState::Full as u8;
            self.blk_full_ns[b as usize] = now_ns;
            self.track_full(b);
            changed = true;
        }
        Ok((ppn, changed))
    }

    /// Superpage mode: the next page of `stream`'s open superblock in `pool` (a die), opening
    /// one when needed. The cursor walks super-page by super-page: within one, the group's
    /// planes in order, each taking `sp_unit` pages (a word line with one-shot programming),
    /// so every plane of the die is at the same page offset at each super-page boundary.
    fn allocate_super(
        &mut self,
        pool: u32,
        stream: u8,
        host: bool,
        now_ns: u64,
    ) -> Result<(u32, bool), NoSpace> {
        let slot = (pool * self.streams + stream as u32) as usize;
        let mut changed = false;
        let mut rep = self.open[slot];
        if rep == NONE {
            let reserve = if host { HOST_RESERVE_BLOCKS } else { 0 };
            if self.free[pool as usize].len() <= reserve {
                return Err(NoSpace);
            }
            rep = self.free[pool as usize].pop_front().ok_or(NoSpace)?;
            let bpp = self.geo.blocks_per_plane;
            for k in 0..self.group {
                let b = (rep + k * bpp) as usize;
                self.blk_state[b] = BlockState::Open as u8;
                self.blk_stream[b] = stream;
            }
            self.open[slot] = rep;
            changed = true;
        }
        let c = self.sb_wp[rep as usize];
        let u = self.sp_unit;
        let (sp_idx, r) = (self.sp_div.quot(c), self.sp_div.modulo(c));
        let (plane_k, in_plane) = (self.sp_unit_div.quot(r), self.sp_unit_div.modulo(r));
        let page = sp_idx * u + in_plane;
        let b = rep + plane_k * self.geo.blocks_per_plane;
        let ppn = b * self.geo.pages_per_block + page;
        self.blk_wp[b as usize] += 1;
        self.sb_wp[rep as usize] = c + 1;
        // The superblock is full after every plane's pages: sp × (pages per block ÷ u).
        if c + 1 == self.group * self.geo.pages_per_block {
            self.open[slot] = NONE;
            let bpp = self.geo.blocks_per_plane;
            for k in 0..self.group {
                let m = (rep + k * bpp) as usize;
                self.blk_state[m] = BlockState::Full as u8;
                self.blk_full_ns[m] = now_ns;
            }
            self.track_full(rep);
            changed = true;
        }
        Ok((ppn, changed))
    }

    /// Superpage mode: allocate the next page of `stream` in `pool` as padding — programmed
    /// with no data to complete a super-page that has no more to hold (a real part cannot add
    /// pages to a programmed word line) — and mark it invalid at once.
    ///
    /// # Errors
    /// [`NoSpace`] when no page can be allocated.
    pub fn allocate_pad(
        &mut self,
        pool: u32,
        stream: u8,
        now_ns: u64,
    ) -> Result<(u32, bool), NoSpace> {
        let (ppn, changed) = self.allocate_super(pool, stream, false, now_ns)?;
        self.p2l[ppn as usize] = UNMAPPED;
        self.set_state_bits(ppn, PageState::Invalid);
        Ok((ppn, changed))
    }

    /// The page index within its block that [`Ftl::allocate_typed`] would give a program in
    /// `plane` (`region`, `stream`, no page-type preference) now, or `None` when it cannot
    /// tell (no space, a page-type cursor, a reduced-capacity region). For multi-plane
    /// programs, which need the same page offset on each plane.
    pub fn next_page_offset(&self, plane: u32, region: u8, stream: u8) -> Option<u32> {
        if self.group > 1 {
            return None;
        }
        let pool = self.pool(plane, region);
        let slot = (pool * self.streams + stream as u32) as usize;
        if self.region_ppb[region as usize] < self.geo.pages_per_block {
            return None;
        }
        match self.open[slot] {
            NONE => (!self.free[pool as usize].is_empty()).then_some(0),
            b if self.open_cursor[slot].is_none() => Some(self.blk_wp[b as usize]),
            _ => None,
        }
    }

    /// Page index for a page-type-aware allocation in open slot `slot` whose block has `taken`
    /// pages allocated (see [`Ftl::allocate_typed`]).
    fn typed_page(&mut self, slot: usize, taken: u32, prefer: Option<PageType>) -> u32 {
        let bits = self.layout.bits;
        let wls = self.layout.word_lines() as u32;
        let layout = &self.layout;
        let cur = self.open_cursor[slot].get_or_insert_with(|| {
            // Until now the block was filled in page order: the pages below `taken` are
            // allocated, and the pages of each bit come in word-line order.
            let mut c = [wls; 4];
            for (bit, cb) in c.iter_mut().enumerate().take(bits) {
                *cb = (0..wls)
                    .find(|&w| layout.wl_pages[w as usize][bit] >= taken)
                    .unwrap_or(wls);
            }
            c
        });
        let pick = prefer
            .map(|t| t.bit(bits))
            .filter(|&bit| bit < bits && cur[bit] < wls)
            .or_else(|| {
                (0..bits)
                    .filter(|&bit| cur[bit] < wls)
                    .min_by_key(|&bit| layout.wl_pages[cur[bit] as usize][bit])
            })
            .expect("an open block has a free page");
        let page = layout.wl_pages[cur[pick] as usize][pick];
        cur[pick] += 1;
        page
    }

    /// Record `lpn` as programmed at `ppn` (from [`Ftl::allocate`]); the previous copy, if any,
    /// becomes invalid.
    pub fn program(&mut self, ppn: u32, lpn: u32, mode: u8, ecc: u8, time_s: i32) {
        let old = self.lookup(lpn);
        if old != UNMAPPED {
            self.invalidate(old);
        }
        self.write_page(ppn, lpn, mode, ecc, time_s);
        self.l2p[lpn as usize] = ppn + 1;
    }

    /// Unmap `lpn` (TRIM / discard): its page becomes invalid, space GC reclaims. Returns
    /// whether it was mapped.
    pub fn trim(&mut self, lpn: u32) -> bool {
        let old = self.lookup(lpn);
        if old == UNMAPPED {
            return false;
        }
        self.invalidate(old);
        self.l2p[lpn as usize] = 0;
        true
    }

    /// Move the data of valid page `src` to `dst` (from [`Ftl::allocate`]): `src` becomes
    /// invalid, `dst` valid, and the LPN maps to `dst`. The same state change as
    /// [`Ftl::program`] of `src`'s LPN, without reading the L2P (a valid page is its LPN's
    /// target, so the old copy is known).
    pub fn relocate(&mut self, src: u32, dst: u32, mode: u8, ecc: u8, time_s: i32) {
        debug_assert_eq!(self.state_bits(src), PageState::Valid as u8);
        let lpn = self.p2l[src as usize];
        debug_assert_eq!(self.lookup(lpn), src);
        self.invalidate(src);
        self.write_page(dst, lpn, mode, ecc, time_s);
        self.l2p[lpn as usize] = dst + 1;
    }

    /// Record `lpn` as programmed at free page `ppn` (the L2P is the caller's).
    #[inline]
    fn write_page(&mut self, ppn: u32, lpn: u32, mode: u8, ecc: u8, time_s: i32) {
        debug_assert_eq!(self.state_bits(ppn), PageState::Free as u8);
        let p = ppn as usize;
        self.set_state_bits(ppn, PageState::Valid);
        self.p2l[p] = lpn;
        self.any_ecc |= ecc != 0;
        if self.any_ecc {
            self.ecc[p] = ecc;
        }
        self.any_mode |= mode != 0;
        if self.any_mode {
            self.mode[p] = mode;
        }
        if self.any_read_type {
            self.flags[p] = 0;
        }
        self.program_s[p] = time_s;
        let b = self.ppb_div.quot(ppn);
        if self.ppb_div.modulo(ppn) == 0 {
            self.blk_data_s[b as usize] = time_s;
        }
        self.bucket_move(b, 1);
    }

    /// Make a valid page invalid (its LPN is re-mapped or trimmed by the caller).
    #[inline]
    fn invalidate(&mut self, ppn: u32) {
        debug_assert_eq!(self.state_bits(ppn), PageState::Valid as u8);
        self.set_state_bits(ppn, PageState::Invalid);
        let b = self.ppb_div.quot(ppn);
        self.bucket_move(b, -1);
    }

    /// Count a read of a page (reads-since-erase of its block).
    #[inline]
    pub fn note_read(&mut self, ppn: u32) {
        let b = self.ppb_div.quot(ppn) as usize;
        self.blk_reads[b] = self.blk_reads[b].saturating_add(1);
    }

    // ----- GC -------------------------------------------------------------------------

    /// Pick and claim a victim block in `pool` (a plane without regions) by the configured
    /// policy; `None` when the pool has no full block.
    pub fn select_victim(&mut self, pool: u32, now_ns: u64) -> Option<u32> {
        let b = match self.victim_policy {
            VictimPolicy::Greedy => {
                let n = (self.geo.pages_per_block * self.group) as usize;
                let base = pool as usize * (n + 1);
                (0..=n)
                    .map(|v| self.bkt_head[base + v])
                    .find(|&h| h != NONE)?
            }
            VictimPolicy::Fifo => *self.fifo[pool as usize].front()?,
            VictimPolicy::CostBenefit => {
                let plane = self.plane_of_pool(pool);
                let region = (pool % self.regions) as u8;
                let bpp = self.geo.blocks_per_plane;
                let ppb = self.region_ppb[region as usize] as f64;
                let mut best = NONE;
                let mut best_score = f64::NEG_INFINITY;
                // Superpages: the superblocks (named by their first-plane block) of the die.
                let ppb = ppb * self.group as f64;
                for b in plane * bpp..(plane + 1) * bpp {
                    if self.blk_state[b as usize] != BlockState::Full as u8
                        || self.blk_region[b as usize] != region
                    {
                        continue;
                    }
                    let u = self.victim_valid(b) as f64 / ppb;
                    let age = now_ns.saturating_sub(self.blk_full_ns[b as usize]) as f64 + 1.0;
                    let score = if u == 0.0 {
                        f64::INFINITY
                    } else {
                        age * (1.0 - u) / (2.0 * u)
                    };
                    if score > best_score {
                        best_score = score;
                        best = b;
                    }
                }
                if best == NONE {
                    return None;
                }
                best
            }
        };
        self.untrack_full(b);
        let bpp = self.geo.blocks_per_plane;
        for k in 0..self.group {
            self.blk_state[(b + k * bpp) as usize] = BlockState::Victim as u8;
        }
        Some(b)
    }

    /// Return a victim to the full blocks without collecting it.
    pub fn unclaim_victim(&mut self, block: u32) {
        debug_assert_eq!(self.blk_state[block as usize], BlockState::Victim as u8);
        let bpp = self.geo.blocks_per_plane;
        for k in 0..self.group {
            self.blk_state[(block + k * bpp) as usize] = BlockState::Full as u8;
        }
        self.track_full(block);
    }

    /// Valid pages of the GC unit `victim` ([`Ftl::select_victim`]): its superblock's with
    /// superpages, else the block's.
    #[inline]
    pub fn victim_valid(&self, victim: u32) -> u32 {
        if self.group > 1 {
            self.sb_valid[victim as usize]
        } else {
            self.blk_valid[victim as usize]
        }
    }

    /// Pages the GC unit `victim` holds when full.
    #[inline]
    pub fn victim_pages(&self, victim: u32) -> u32 {
        self.block_pages(victim) * self.group
    }

    /// PPNs of the valid pages of the GC unit `victim`, appended to `out` (plane by plane).
    pub fn victim_valid_pages(&self, victim: u32, out: &mut Vec<u32>) {
        for m in self.members(victim) {
            self.valid_pages(m, out);
        }
    }

    /// Erase the GC unit `victim`: its superblock's blocks (one multi-plane erase), or the
    /// block. Returns the blocks erased.
    pub fn erase_victim(&mut self, victim: u32) -> u32 {
        if self.group == 1 {
            self.erase(victim);
            return 1;
        }
        debug_assert_eq!(self.sb_valid[victim as usize], 0);
        if self.blk_state[victim as usize] == BlockState::Full as u8 {
            self.untrack_full(victim);
        }
        let bpp = self.geo.blocks_per_plane;
        for k in 0..self.group {
            self.reset_block(victim + k * bpp);
        }
        self.sb_wp[victim as usize] = 0;
        let pool = self.pool_of_block(victim);
        self.free[pool as usize].push_back(victim);
        self.group
    }

    /// The allocation policy.
    pub fn allocation(&self) -> Allocation {
        self.allocation
    }

    /// PPNs of the valid pages of a block, appended to `out`.
    pub fn valid_pages(&self, block: u32, out: &mut Vec<u32>) {
        let ppb = self.geo.pages_per_block;
        let (base, end) = (block * ppb, (block + 1) * ppb);
        let mut ppn = base;
        while ppn < end {
            let wi = ppn / STATE_PER_WORD;
            let w = self.state[wi as usize];
            // Valid = 01: low bit set, high bit clear.
            let mut valid = w & !(w >> 1) & STATE_LOW_BITS;
            let first = ppn % STATE_PER_WORD;
            valid &= u64::MAX << (first * 2);
            let word_end = (wi + 1) * STATE_PER_WORD;
            if word_end > end {
                valid &= (1u64 << ((end - wi * STATE_PER_WORD) * 2)) - 1;
            }
            while valid != 0 {
                let k = valid.trailing_zeros() / 2;
                out.push(wi * STATE_PER_WORD + k);
                valid &= valid - 1;
            }
            ppn = word_end.min(end);
        }
    }

    /// Erase a block: all pages free, erase count + 1, back to its plane's free list.
    /// Without superpages (there, [`Ftl::erase_victim`] erases a superblock).
    pub fn erase(&mut self, block: u32) {
        debug_assert_eq!(self.group, 1);
        let b = block as usize;
        if self.blk_state[b] == BlockState::Full as u8 {
            self.untrack_full(block);
        }
        self.reset_block(block);
        let pool = self.pool_of_block(block);
        self.free[pool as usize].push_back(block);
    }

    /// A block's erase: pages free, counters reset, erase count + 1, state free (not yet in
    /// a free list).
    fn reset_block(&mut self, block: u32) {
        let ppb = self.geo.pages_per_block;
        let b = block as usize;
        debug_assert_eq!(self.blk_valid[b], 0, "erasing a block with valid pages");
        for ppn in block * ppb..(block + 1) * ppb {
            self.set_state_bits(ppn, PageState::Free);
        }
        self.blk_wp[b] = 0;
        self.blk_valid[b] = 0;
        self.blk_reads[b] = 0;
        self.blk_kind[b] = 0;
        self.blk_erase[b] += 1;
        self.pe_sum += 1;
        if let Some(&next) = self.stage_pe.get(self.stage as usize + 1) {
            if self.mean_pe() >= next {
                self.update_stage();
            }
        }
        self.blk_state[b] = BlockState::Free as u8;
    }

    /// Set a block's erase count (preconditioning).
    pub fn set_erase_count(&mut self, block: u32, n: u32) {
        self.pe_sum = self.pe_sum - self.blk_erase[block as usize] as u64 + n as u64;
        self.blk_erase[block as usize] = n;
        self.update_stage();
    }

    /// Set the program time of a page (preconditioning ages).
    pub fn set_program_s(&mut self, ppn: u32, t: i32) {
        self.program_s[ppn as usize] = t;
        if ppn.is_multiple_of(self.geo.pages_per_block) {
            self.blk_data_s[self.geo.block_of_ppn(ppn) as usize] = t;
        }
    }

    // ----- bucket / fifo bookkeeping ----------------------------------------------------

    fn track_full(&mut self, b: u32) {
        match self.victim_policy {
            VictimPolicy::Greedy => self.bkt_insert(b),
            VictimPolicy::Fifo => {
                let p = self.pool_of_block(b) as usize;
                self.fifo[p].push_back(b);
            }
            VictimPolicy::CostBenefit => {}
        }
    }

    fn untrack_full(&mut self, b: u32) {
        match self.victim_policy {
            VictimPolicy::Greedy => self.bkt_remove(b),
            VictimPolicy::Fifo => {
                let p = self.pool_of_block(b) as usize;
                if self.fifo[p].front() == Some(&b) {
                    self.fifo[p].pop_front();
                } else if let Some(i) = self.fifo[p].iter().position(|&x| x == b) {
                    self.fifo[p].remove(i);
                }
            }
            VictimPolicy::CostBenefit => {}
        }
    }

    #[inline]
    fn bucket_move(&mut self, b: u32, delta: i32) {
        if self.group > 1 {
            // Superpages: the bucket is the superblock's.
            let rep = self.rep_of(b);
            let full = self.blk_state[rep as usize] == BlockState::Full as u8
                && self.victim_policy == VictimPolicy::Greedy;
            if full {
                self.bkt_remove(rep);
            }
            let v = &mut self.blk_valid[b as usize];
            *v = (*v as i64 + delta as i64) as u32;
            let v = &mut self.sb_valid[rep as usize];
            *v = (*v as i64 + delta as i64) as u32;
            if full {
                self.bkt_insert(rep);
            }
            return;
        }
        let full = self.blk_state[b as usize] == BlockState::Full as u8
            && self.victim_policy == VictimPolicy::Greedy;
        if full {
            self.bkt_remove(b);
        }
        let v = &mut self.blk_valid[b as usize];
        *v = (*v as i64 + delta as i64) as u32;
        if full {
            self.bkt_insert(b);
        }
    }

    #[inline]
    fn bkt_index(&self, b: u32) -> usize {
        let ppb = self.geo.pages_per_block as usize;
        if self.group > 1 {
            let n = ppb * self.group as usize;
            return self.pool_of_block(b) as usize * (n + 1) + self.sb_valid[b as usize] as usize;
        }
        self.pool_of_block(b) as usize * (ppb + 1) + self.blk_valid[b as usize] as usize
    }

    fn bkt_insert(&mut self, b: u32) {
        let h = self.bkt_index(b);
        let head = self.bkt_head[h];
        self.bkt_next[b as usize] = head;
        self.bkt_prev[b as usize] = NONE;
        if head != NONE {
            self.bkt_prev[head as usize] = b;
        }
        self.bkt_head[h] = b;
    }

    fn bkt_remove(&mut self, b: u32) {
        let h = self.bkt_index(b);
        let (n, p) = (self.bkt_next[b as usize], self.bkt_prev[b as usize]);
        if p != NONE {
            self.bkt_next[p as usize] = n;
        } else {
            self.bkt_head[h] = n;
        }
        if n != NONE {
            self.bkt_prev[n as usize] = p;
        }
        self.bkt_next[b as usize] = NONE;
        self.bkt_prev[b as usize] = NONE;
    }

    // ----- invariants --------------------------------------------------------------------

    /// Check the DESIGN §5 invariants; returns a description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (lpn, &p1) in self.l2p.iter().enumerate() {
            let ppn = p1.wrapping_sub(1);
            if ppn == UNMAPPED {
                continue;
            }
            if self.page_state(ppn) != PageState::Valid {
                return Err(format!("LPN {lpn} maps to PPN {ppn} which is not valid"));
            }
            if self.page_lpn(ppn) != lpn as u32 {
                return Err(format!(
                    "LPN {lpn} maps to PPN {ppn} whose LPN field is {}",
                    self.page_lpn(ppn)
                ));
            }
        }
        let ppb = self.geo.pages_per_block;
        // Open blocks filled by page type: page i is allocated iff its word line is below its
        // bit's cursor.
        let mut typed = std::collections::HashMap::new();
        for (slot, &b) in self.open.iter().enumerate() {
            if let (true, Some(c)) = (b != NONE, self.open_cursor[slot]) {
                typed.insert(b, c);
            }
        }
        for b in 0..self.geo.blocks() {
            let base = b * ppb;
            let wp = self.blk_wp[b as usize];
            let mut valid = 0;
            let mut taken = 0;
            for i in 0..ppb {
                if i >= self.block_pages(b) && self.state_bits(base + i) != PageState::Free as u8 {
                    return Err(format!(
                        "block {b}: page {i} beyond the {} pages its region holds is not free",
                        self.block_pages(b)
                    ));
                }
                let s = self.state_bits(base + i);
                taken += (s != PageState::Free as u8) as u32;
                if let Some(c) = typed.get(&b) {
                    let bit = self.layout.page_type[i as usize].bit(self.layout.bits);
                    let below = self.layout.word_line[i as usize] < c[bit];
                    if below != (s != PageState::Free as u8) {
                        return Err(format!(
                            "block {b}: page {i} (word line {}, bit {bit}, cursor {}) is {}",
                            self.layout.word_line[i as usize],
                            c[bit],
                            if below {
                                "free below"
                            } else {
                                "programmed above"
                            }
                        ));
                    }
                } else if i >= wp && s != PageState::Free as u8 {
                    return Err(format!(
                        "block {b}: page {i} above write pointer {wp} not free"
                    ));
                } else if i < wp && s == PageState::Free as u8 {
                    return Err(format!(
                        "block {b}: page {i} below write pointer {wp} is free"
                    ));
                }
                if s == PageState::Valid as u8 {
                    valid += 1;
                    let lpn = self.p2l[(base + i) as usize];
                    if self.lookup(lpn) != base + i {
                        return Err(format!(
                            "block {b}: valid page {i} holds LPN {lpn} which maps elsewhere"
                        ));
                    }
                }
            }
            if taken != wp {
                return Err(format!(
                    "block {b}: {taken} pages programmed but {wp} allocated"
                ));
            }
            if valid != self.blk_valid[b as usize] {
                return Err(format!(
                    "block {b}: valid count {} but {valid} valid pages",
                    self.blk_valid[b as usize]
                ));
            }
        }
        if self.group > 1 {
            self.check_superblocks()?;
        }
        Ok(())
    }

    /// Superpage invariants: a superblock's blocks share its state and stream; its cursor is
    /// the sum of their write pointers and its valid count the sum of theirs; at the cursor,
    /// the blocks' write pointers differ as the super-page order allows (planes before the
    /// cursor's plane one unit ahead).
    fn check_superblocks(&self) -> Result<(), String> {
        let bpp = self.geo.blocks_per_plane;
        let (u, sp) = (self.sp_unit, self.superpage_pages());
        for plane in (0..self.geo.planes()).step_by(self.group as usize) {
            for s in 0..bpp {
                let rep = plane * bpp + s;
                let c = self.sb_wp[rep as usize];
                let (mut wp, mut valid) = (0, 0);
                for k in 0..self.group {
                    let b = (rep + k * bpp) as usize;
                    if self.blk_state[b] != self.blk_state[rep as usize]
                        || self.blk_stream[b] != self.blk_stream[rep as usize]
                    {
                        return Err(format!("superblock {rep}: block {b} differs in state"));
                    }
                    let full_units = c / sp * u;
                    let r = c % sp;
                    let expect = full_units + (r.saturating_sub(k * u)).min(u);
                    if self.blk_wp[b] != expect {
                        return Err(format!(
                            "superblock {rep} (cursor {c}): block {b} has write pointer {} \
                             not {expect}",
                            self.blk_wp[b]
                        ));
                    }
                    wp += self.blk_wp[b];
                    valid += self.blk_valid[b];
                }
                if wp != c || valid != self.sb_valid[rep as usize] {
                    return Err(format!(
                        "superblock {rep}: cursor {c} / valid {} but its blocks hold {wp} / \
                         {valid}",
                        self.sb_valid[rep as usize]
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flash::CellType;
    use proptest::prelude::*;

    fn small(policy: VictimPolicy) -> Ftl {
        let geo = Geometry {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 12,
            pages_per_block: 8,
            page_size_bytes: 4096,
            cell: CellType::Mlc,
        };
        Ftl::new(geo, 120, 2, Allocation::Static, policy, 10.0)
    }

    /// Untimed write with GC, as preconditioning does it.
    fn write(f: &mut Ftl, lpn: u32, moves: &mut u64) {
        let plane = f.plane_for_write(lpn);
        let mut buf = Vec::new();
        while f.needs_gc(plane) {
            let v = f.select_victim(plane, 0).expect("victim");
            buf.clear();
            f.valid_pages(v, &mut buf);
            for &src in &buf {
                let l = f.page_lpn(src);
                let dst = f.allocate(plane, 1, false, 0).expect("gc space");
                f.program(dst, l, 0, 0, 0);
                *moves += 1;
            }
            f.erase(v);
        }
        let ppn = f.allocate(plane, 0, true, 0).expect("host space");
        f.program(ppn, lpn, 0, 0, 0);
    }

    fn small_super(policy: VictimPolicy, unit: u32) -> Ftl {
        let geo = Geometry {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 4,
            blocks_per_plane: 12,
            pages_per_block: 6,
            page_size_bytes: 4096,
            cell: CellType::Tlc,
        };
        let mut f = Ftl::new(geo, 300, 2, Allocation::Superpage, policy, 10.0);
        f.set_superpage_unit(unit);
        f
    }

    /// Untimed write with GC of whole superblocks.
    fn write_super(f: &mut Ftl, lpn: u32, moves: &mut u64) {
        let plane = f.plane_for_write(lpn);
        let pool = f.pool(plane, 0);
        let mut buf = Vec::new();
        while f.needs_gc(pool) {
            let v = f.select_victim(pool, 0).expect("victim");
            buf.clear();
            f.victim_valid_pages(v, &mut buf);
            assert_eq!(buf.len() as u32, f.victim_valid(v));
            for &src in &buf {
                let (dst, _) = f.allocate_tracked(plane, 0, 1, false, 0).expect("gc space");
                f.relocate(src, dst, 0, 0, 0);
                *moves += 1;
            }
            assert_eq!(f.erase_victim(v), 4);
        }
        let (ppn, _) = f
            .allocate_tracked(plane, 0, 0, true, 0)
            .expect("host space");
        f.program(ppn, lpn, 0, 0, 0);
    }

    #[test]
    fn superpages_fill_every_plane_of_a_die_at_the_same_offset() {
        let mut f = small_super(VictimPolicy::Greedy, 3);
        assert_eq!(f.pools(), 2);
        assert_eq!(f.superpage_pages(), 12);
        let pool = 0;
        assert_eq!(f.superpage_room(pool, 0, true), 12);
        let bpp = 12;
        let mut got = Vec::new();
        for lpn in 0..12 {
            let (ppn, _) = f.allocate_tracked(0, 0, 0, true, 0).unwrap();
            f.program(ppn, lpn, 0, 0, 0);
            got.push((
                f.plane_of_ppn(ppn),
                f.page_index(ppn),
                f.block_of(ppn) % bpp,
            ));
            if got.len() == 5 {
                assert_eq!(f.superpage_room(pool, 0, true), 7);
            }
        }
        // Plane by plane, a word line's three pages each, all in the superblock's blocks.
        let want: Vec<(u32, u32, u32)> = (0..4)
            .flat_map(|p| (0..3).map(move |i| (p, i, 0)))
            .collect();
        assert_eq!(got, want);
        assert_eq!(f.superpage_room(pool, 0, true), 12);
        // Padding completes a super-page with invalid pages.
        let (ppn, _) = f.allocate_tracked(0, 0, 0, true, 0).unwrap();
        f.program(ppn, 12, 0, 0, 0);
        for _ in 0..11 {
            let (ppn, _) = f.allocate_pad(pool, 0, 0).unwrap();
            assert_eq!(f.page_state(ppn), PageState::Invalid);
        }
        assert_eq!(f.check_invariants(), Ok(()));
    }

    proptest! {
        #[test]
        fn superpage_invariants_hold_under_random_writes(
            lpns in proptest::collection::vec(0u32..300, 1..3000),
            unit in prop_oneof![Just(1u32), Just(3u32)],
            policy in prop_oneof![
                Just(VictimPolicy::Greedy),
                Just(VictimPolicy::Fifo),
                Just(VictimPolicy::CostBenefit)
            ],
        ) {
            let mut f = small_super(policy, unit);
            let mut moves = 0;
            for (i, &l) in lpns.iter().enumerate() {
                write_super(&mut f, l, &mut moves);
                if i % 97 == 0 {
                    prop_assert_eq!(f.check_invariants(), Ok(()));
                }
            }
            prop_assert_eq!(f.check_invariants(), Ok(()));
            let distinct: std::collections::HashSet<_> = lpns.iter().collect();
            prop_assert_eq!(f.mapped_pages(), distinct.len() as u64);
        }

        #[test]
        fn invariants_hold_under_random_writes(
            lpns in proptest::collection::vec(0u32..120, 1..2000),
            policy in prop_oneof![
                Just(VictimPolicy::Greedy),
                Just(VictimPolicy::Fifo),
                Just(VictimPolicy::CostBenefit)
            ],
        ) {
            let mut f = small(policy);
            let mut moves = 0;
            for (i, &l) in lpns.iter().enumerate() {
                write(&mut f, l, &mut moves);
                if i % 97 == 0 {
                    prop_assert_eq!(f.check_invariants(), Ok(()));
                }
            }
            prop_assert_eq!(f.check_invariants(), Ok(()));
            let distinct: std::collections::HashSet<_> = lpns.iter().collect();
            prop_assert_eq!(f.mapped_pages(), distinct.len() as u64);
        }
    }

    /// GC relocation with page-type preferences drawn from `prefs` (None = page order).
    fn write_typed(f: &mut Ftl, lpn: u32, prefs: &mut impl Iterator<Item = Option<PageType>>) {
        let plane = f.plane_for_write(lpn);
        let mut buf = Vec::new();
        while f.needs_gc(plane) {
            let v = f.select_victim(plane, 0).expect("victim");
            buf.clear();
            f.valid_pages(v, &mut buf);
            for &src in &buf {
                let l = f.page_lpn(src);
                let want = prefs.next().flatten();
                let slot = (f.pool(plane, 0) * f.streams + 1) as usize;
                let b = f.open[slot];
                // Does the open block (if any) still have a free page of the wanted type?
                let has = |f: &Ftl, t: PageType| {
                    b != NONE
                        && (0..f.geo.pages_per_block).any(|i| {
                            f.layout.page_type[i as usize] == t
                                && f.page_state(b * f.geo.pages_per_block + i) == PageState::Free
                        })
                };
                let had = want.map(|t| has(f, t));
                let (dst, _) = f
                    .allocate_typed(plane, 0, 1, false, 0, want)
                    .expect("gc space");
                if let (Some(t), Some(true)) = (want, had) {
                    assert_eq!(f.page_type(dst), t, "preferred type not given");
                }
                f.program(dst, l, 0, 0, 0);
            }
            f.erase(v);
        }
        let ppn = f.allocate(plane, 0, true, 0).expect("host space");
        f.program(ppn, lpn, 0, 0, 0);
    }

    proptest! {
        /// Page-type-aware allocation: a preferred type is given whenever the open block has a
        /// free page of it, and the invariants hold for blocks filled out of page order (TLC,
        /// both page orders).
        #[test]
        fn typed_allocation_keeps_invariants(
            lpns in proptest::collection::vec(0u32..96, 1..1500),
            prefs in proptest::collection::vec(0u8..5, 1..64),
            staggered in any::<bool>(),
        ) {
            let geo = Geometry {
                channels: 1,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 1,
                blocks_per_plane: 12,
                pages_per_block: 12,
                page_size_bytes: 4096,
                cell: CellType::Tlc,
            };
            let mut f = Ftl::new(geo, 96, 2, Allocation::Static, VictimPolicy::Greedy, 10.0);
            let order = if staggered { PageOrder::Staggered } else { PageOrder::Sequential };
            f.set_layout(BlockLayout::new(12, 3, order));
            let mut it = prefs
                .iter()
                .map(|&p| [None, Some(PageType::Lsb), Some(PageType::Csb), Some(PageType::Msb), None][p as usize])
                .cycle();
            for (i, &l) in lpns.iter().enumerate() {
                write_typed(&mut f, l, &mut it);
                if i % 53 == 0 {
                    prop_assert_eq!(f.check_invariants(), Ok(()));
                }
            }
            prop_assert_eq!(f.check_invariants(), Ok(()));
        }
    }

    /// Without preferences, typed allocation fills a block in page order (as `allocate_in`).
    #[test]
    fn untyped_allocation_is_page_order_in_both_layouts() {
        for order in [PageOrder::Sequential, PageOrder::Staggered] {
            let geo = Geometry {
                channels: 1,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 1,
                blocks_per_plane: 4,
                pages_per_block: 12,
                page_size_bytes: 4096,
                cell: CellType::Tlc,
            };
            let mut f = Ftl::new(geo, 24, 1, Allocation::Static, VictimPolicy::Greedy, 10.0);
            f.set_layout(BlockLayout::new(12, 3, order));
            // One preference first switches the block to typed allocation; the rest follow
            // page order among the free pages.
            let (first, _) = f
                .allocate_typed(0, 0, 0, false, 0, Some(PageType::Msb))
                .unwrap();
            assert_eq!(f.page_type(first), PageType::Msb);
            let mut got = vec![first];
            for _ in 1..12 {
                got.push(f.allocate_typed(0, 0, 0, false, 0, None).unwrap().0);
            }
            let mut rest: Vec<u32> = (0..12).filter(|&p| p != first).collect();
            rest.sort();
            assert_eq!(&got[1..], &rest[..], "{order:?}");
        }
    }

    #[test]
    fn greedy_picks_fewest_valid() {
        let mut f = small(VictimPolicy::Greedy);
        let mut m = 0;
        // Fill plane 0 (even LPNs) with 3 blocks' worth, then invalidate most of block 2.
        for l in (0..48).step_by(2) {
            write(&mut f, l, &mut m);
        }
        for l in (32..46).step_by(2) {
            write(&mut f, l, &mut m);
        }
        let v = f.select_victim(0, 0).unwrap();
        assert_eq!(f.block_valid(v), 1);
    }

    #[test]
    fn host_cannot_take_reserve() {
        let mut f = small(VictimPolicy::Greedy);
        // Open host blocks until only the reserve remains in plane 0.
        let mut n = 0;
        while f.allocate(0, 0, true, 0).is_ok() {
            n += 1;
        }
        assert_eq!(f.free_blocks(0), HOST_RESERVE_BLOCKS);
        assert_eq!(n, (12 - HOST_RESERVE_BLOCKS) * 8);
        assert!(f.allocate(0, 1, false, 0).is_ok());
    }
}
