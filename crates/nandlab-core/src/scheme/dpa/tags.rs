//! The life of a DPA-PPU tag in DPA-DRM (Guo §2.5, §2.6.2): written with its data page (R4),
//! gathered into an open redundant page (R2), delayed in the DRAM buffer and flushed with its
//! RAID-5 parity, invalidated by overwrites, and compacted (R8 of the [`super`] module
//! documentation).

use super::*;

impl Dpa {
    // ----- write path

    /// Emit `a`: into the engine's actions (timed) or the untimed queue.
    #[inline]
    pub(super) fn emit(&mut self, a: Action, out: &mut Vec<Action>) {
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
    pub(super) fn write_tags(&mut self, lpn: u32, out: &mut Vec<Action>) {
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
    pub(super) fn add_tag(&mut self, lpn: u32, out: &mut Vec<Action>) {
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
    pub(super) fn open_page(&mut self, group: u32) -> u32 {
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
    pub(super) fn page_full(&mut self, g: u32, out: &mut Vec<Action>) {
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

    /// Emit the program of redundant or parity page `g` (its hidden LPN). Returns whether it is
    /// timed; an untimed one (preconditioning) is counted here.
    fn program_hidden(&mut self, g: u32, wait: bool, out: &mut Vec<Action>) -> bool {
        let h = self.hidden_lpn(g);
        self.emit(Action::Program { lpn: h, wait }, out);
        if self.untimed {
            self.counters.precondition_hidden_writes += 1;
        }
        !self.untimed
    }

    /// Program redundant page `g` (and the parity of its stripe when this completes it).
    pub(super) fn flush(&mut self, g: u32, wait: bool, out: &mut Vec<Action>) {
        self.set_st(g, ST_FLUSHED);
        if self.program_hidden(g, wait, out) {
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
            if self.program_hidden(p, wait, out) {
                self.counters.parity_page_writes += 1;
            }
        }
    }

    /// One tag of redundant page `g` became invalid.
    pub(super) fn tag_died(&mut self, g: u32, out: &mut Vec<Action>) {
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
    pub(super) fn drop_flushed(&mut self, g: u32, out: &mut Vec<Action>) {
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
    pub(super) fn compact(&mut self, g: u32, out: &mut Vec<Action>) {
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

    pub(super) fn placement_of(&self, lpn: u32, source: Source) -> Placement {
        let stream = if lpn >= self.logical && self.logical > 0 {
            self.red_stream
        } else if source == Source::Host {
            0
        } else {
            self.gc_stream
        };
        Placement::in_region(stream, 0)
    }
}
