//! Allocation: where a page goes — static (CWDP) or dynamic striping, typed (page-type-aware)
//! allocation, super-pages of a die's planes in lockstep (superblock cursors, padding) and the
//! mapping unit's page-sized LPN groups.

use super::*;

impl Ftl {
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
                if self.can_open(pool, host) {
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
    pub(super) fn members(&self, victim: u32) -> impl Iterator<Item = u32> {
        let bpp = self.geo.blocks_per_plane;
        (0..self.group).map(move |k| victim + k * bpp)
    }

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
        b != NONE || self.can_open(pool, host)
    }

    /// Whether `pool` has a free block to open: more than the GC reserve for host allocations
    /// (`host`: [`HOST_RESERVE_BLOCKS`]), any for the others.
    #[inline]
    fn can_open(&self, pool: u32, host: bool) -> bool {
        let reserve = if host { HOST_RESERVE_BLOCKS } else { 0 };
        self.free[pool as usize].len() > reserve
    }

    /// Take `pool`'s next free block to open ([`NoSpace`] unless [`Ftl::can_open`]).
    #[inline]
    fn take_free(&mut self, pool: u32, host: bool) -> Result<u32, NoSpace> {
        if !self.can_open(pool, host) {
            return Err(NoSpace);
        }
        self.free[pool as usize].pop_front().ok_or(NoSpace)
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
    /// opened or a block became full: only then can the pool's need for GC or its GC
    /// candidates have changed), with a preferred page type: the page goes to the open block's
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
            b = self.take_free(pool, host)?;
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
    pub(super) fn allocate_super(
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
            rep = self.take_free(pool, host)?;
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
    pub(super) fn typed_page(&mut self, slot: usize, taken: u32, prefer: Option<PageType>) -> u32 {
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
}
