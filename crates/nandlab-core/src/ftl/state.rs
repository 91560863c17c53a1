//! Per-page state: the 2-bit state bitmap, the P2L and per-page metadata; programs,
//! relocations, TRIM and invalidation (which keep the block valid counts and the greedy
//! buckets current).

use super::*;

impl Ftl {
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
    pub(super) fn state_bits(&self, ppn: u32) -> u8 {
        ((self.state[(ppn / STATE_PER_WORD) as usize] >> ((ppn % STATE_PER_WORD) * 2)) & 3) as u8
    }
    #[inline]
    pub(super) fn set_state_bits(&mut self, ppn: u32, v: PageState) {
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
    pub(super) fn write_page(&mut self, ppn: u32, lpn: u32, mode: u8, ecc: u8, time_s: i32) {
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
    pub(super) fn invalidate(&mut self, ppn: u32) {
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

    /// Set the program time of a page (preconditioning ages).
    pub fn set_program_s(&mut self, ppn: u32, t: i32) {
        self.program_s[ppn as usize] = t;
        if ppn.is_multiple_of(self.geo.pages_per_block) {
            self.blk_data_s[self.geo.block_of_ppn(ppn) as usize] = t;
        }
    }

    // ----- bucket / fifo bookkeeping ----------------------------------------------------
}
