//! [`Ftl::check_invariants`]: the invariants of the module documentation, checked in debug
//! builds and by the property tests.

use super::*;

impl Ftl {
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
    pub(super) fn check_superblocks(&self) -> Result<(), String> {
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
