//! Onode pages, onode writes and multi-level GC (MLGC).
//!
//! Source: §4.2 (OBFS: an onode update migrates the page's other valid onodes at once),
//! §4.4.2 and F29 (MLGC: stale onode bytes go to a byte-level GC table of ⟨PPN, offset,
//! length⟩ entries, 8 B each; when it is full the page with the most invalid bytes gives up
//! its valid bytes and is invalidated), A2 l.40–48 (the onode queue, packed
//! `page / onode_bytes` to a page).
//!
//! Readings (\[N\], spec §1–2): onode = `osd.onode_bytes` (100 B); YAFFS2-like: one object
//! header per page.

use super::*;

impl Device {
    /// Where `oid`'s onode is on flash: (page, slot).
    pub fn onode_location(&self, oid: ObjectId) -> Option<(u32, u32)> {
        let &s = self.index.get(&oid)?;
        let ob = &self.objs[s as usize];
        (ob.onode_ppn != NONE).then_some((ob.onode_ppn, ob.onode_idx))
    }

    /// The byte-level GC table: (page, invalid bytes, entries) of every page in it, by page.
    pub fn gc_table(&self) -> Vec<(u32, u32, u32)> {
        let mut v: Vec<_> = self.gct.iter().map(|(&p, &(b, e))| (p, b, e)).collect();
        v.sort_unstable();
        v
    }

    /// Entries in the byte-level GC table.
    pub fn gc_table_entries(&self) -> u64 {
        self.gct_entries
    }

    /// The flash versions of the onodes of `slots` held in onode page `ppn` (each at its
    /// object's `onode_idx`).
    pub(super) fn onode_recs_from(&self, ppn: u32, slots: &[u32]) -> Vec<OnodeRec> {
        let Some(PageContent::Onode(recs)) = self.content_of(ppn) else {
            return Vec::new();
        };
        slots
            .iter()
            .filter_map(|&s| {
                let ob = &self.objs[s as usize];
                let oid = ob.oid;
                // a removed object's record there is its tombstone
                let tomb = !ob.live;
                let mine = |r: &&OnodeRec| r.oid == oid && r.tomb == tomb;
                // Its own slot: a page of the onode write buffer may hold older versions of
                // the object in earlier slots (issue 30).
                recs.get(ob.onode_idx as usize)
                    .filter(mine)
                    .or_else(|| recs.iter().rev().find(mine))
                    .copied()
            })
            .collect()
    }

    /// The DRAM onode of `s` as it would be written now.
    pub(super) fn onode_rec(&self, s: u32, csn: u64, tomb: bool) -> OnodeRec {
        let ob = &self.objs[s as usize];
        let root = if ob.root == NONE || self.yaffs {
            NONE
        } else {
            let n = &self.nodes.nodes[ob.root as usize];
            if self.o.virtual_tree {
                n.va
            } else {
                n.ppn
            }
        };
        OnodeRec {
            oid: ob.oid,
            csn,
            size: ob.size,
            root,
            n_inline: ob.n_inline,
            inline: ob.inline,
            tomb,
            shrink: self.yaffs && !tomb && ob.shrink_pending,
        }
    }

    pub(super) fn alloc_opage(&mut self) -> u32 {
        if let Some(r) = self.opages_free.pop() {
            r
        } else {
            self.opages.push(OPage::default());
            (self.opages.len() - 1) as u32
        }
    }

    pub(super) fn free_opage(&mut self, r: u32) {
        let p = &mut self.opages[r as usize];
        p.slots.clear();
        p.live = 0;
        self.opages_free.push(r);
    }

    pub(super) fn rec_of(&self, ppn: u32) -> u32 {
        let (c, off) = self.split(ppn);
        match (self.pages[c].as_deref(), self.sparse[c].as_deref()) {
            (Some(p), _) => p.back[off],
            (None, Some(sp)) => sp.rec(off).back,
            (None, None) => NONE,
        }
    }

    pub(super) fn gct_drop(&mut self, ppn: u32) {
        if let Some((bytes, n)) = self.gct.remove(&ppn) {
            self.gct_order.remove(&(bytes, ppn));
            self.gct_entries -= n as u64;
        }
    }

    /// The onode of `s` leaves its page (a newer one is being written, or the object is
    /// removed). OBFS: the page's other valid onodes migrate now (§4.2). MLGC: the stale
    /// bytes are recorded in the byte-level GC table; when it is over its size, the page with
    /// the most invalid bytes gives up its valid bytes and is invalidated (§4.4.2).
    pub(super) fn release_onode(&mut self, s: u32, src: Src) {
        let ob = &mut self.objs[s as usize];
        let ppn = ob.onode_ppn;
        if ppn == NONE {
            return;
        }
        ob.onode_ppn = NONE;
        let rec = self.rec_of(ppn);
        if rec == NONE {
            return;
        }
        self.opages[rec as usize].live -= 1;
        if self.opages[rec as usize].live == 0 {
            self.gct_drop(ppn);
            self.invalidate(ppn);
            self.free_opage(rec);
            return;
        }
        if !self.o.mlgc {
            let moved = self.evacuate_onode_page(ppn, rec, src);
            self.counters.survivor_onodes += moved as u64;
            return;
        }
        let ob_bytes = self.o.onode_bytes;
        let e = self.gct.entry(ppn).or_insert((0, 0));
        let old = *e;
        e.0 += ob_bytes;
        e.1 += 1;
        let new = *e;
        if old.1 > 0 {
            self.gct_order.remove(&(old.0, ppn));
        }
        self.gct_order.insert((new.0, ppn));
        self.gct_entries += 1;
        while self.gct_entries > self.gct_max_entries {
            let Some(&(bytes, victim)) = self.gct_order.iter().next_back() else {
                break;
            };
            let vrec = self.rec_of(victim);
            self.gct_drop(victim);
            self.counters.mlgc_evictions += 1;
            let moved = self.evacuate_onode_page(victim, vrec, Src::Mlgc);
            self.counters.mlgc_moved_bytes += moved as u64 * ob_bytes as u64;
            let _ = bytes;
        }
        self.dram.gc_table_bytes = self.dram.gc_table_bytes.max(self.gct_entries * 8);
    }

    /// Move the valid onodes of onode page `ppn` to the pending onode writes and invalidate
    /// the page. Returns how many moved.
    pub(super) fn evacuate_onode_page(&mut self, ppn: u32, rec: u32, src: Src) -> u32 {
        let mut moved = 0;
        if rec != NONE {
            let n = self.opages[rec as usize].slots.len();
            for k in 0..n {
                let t = self.opages[rec as usize].slots[k];
                let ob = &mut self.objs[t as usize];
                if ob.onode_ppn == ppn && ob.onode_idx == k as u32 {
                    ob.onode_ppn = NONE;
                    ob.move_from = ppn;
                    self.pending.push((t, src, false));
                    moved += 1;
                }
            }
            self.free_opage(rec);
        }
        self.invalidate(ppn);
        moved
    }

    /// Write the pending onodes (A2 l.40–48): their old locations are released first (OBFS
    /// survivors and MLGC evictions join the queue), then each version goes to the onode
    /// write buffer ([`Device::obuf_append`]), and every full buffer is programmed
    /// ([`Device::program_obuf`]). YAFFS2-like: one object header per page, programmed at
    /// once.
    pub(super) fn write_pending_onodes(&mut self) -> Result<(), OsdError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut list = std::mem::take(&mut self.pend_scratch);
        list.clear();
        list.append(&mut self.pending);
        // Old locations first: OBFS survivors and MLGC evictions join the same pages.
        let n0 = list.len();
        for &(s, src, tomb) in &list[..n0] {
            if !tomb && self.objs[s as usize].live {
                self.release_onode(s, src);
            }
        }
        list.append(&mut self.pending);
        {
            let objs = &mut self.objs;
            list.retain(|&(s, _, tomb)| {
                let ob = &mut objs[s as usize];
                if tomb {
                    return true;
                }
                if (!ob.live && ob.move_from == NONE) || ob.pend_mark {
                    return false;
                }
                ob.pend_mark = true;
                true
            });
            for &(s, _, _) in list.iter() {
                objs[s as usize].pend_mark = false;
            }
        }
        if !self.yaffs {
            // ONFD: every onode version goes to the onode write buffer, programmed when full.
            for &(s, src, tomb) in list.iter() {
                self.obuf_append(s, src, tomb);
            }
            list.clear();
            self.pend_scratch = list;
            while self.obuf.len() >= self.onodes_per_page as usize {
                self.program_obuf(None)?;
            }
            self.close_stage();
            return Ok(());
        }
        let per = self.onodes_per_page as usize;
        for group in list.chunks(per) {
            let (s0, src, _) = group[0];
            let die = self.next_die(ONODE)?;
            let new_csn = self.sn + 1;
            if self.contents.is_some() {
                let mut recs = Vec::with_capacity(group.len());
                for &(s, _, tomb) in group {
                    let ob = &self.objs[s as usize];
                    let r = if !tomb && ob.move_from != NONE && !ob.commit_req {
                        self.onode_recs_from(ob.move_from, &[s])
                            .first()
                            .copied()
                            .unwrap_or_else(|| self.onode_rec(s, ob.onode_csn, !ob.live))
                    } else {
                        self.onode_rec(s, new_csn, tomb)
                    };
                    recs.push(r);
                }
                self.next_content = Some(PageContent::Onode(recs));
            }
            let rec = self.alloc_opage();
            let n = group.len() as u32;
            let oid = self.objs[s0 as usize].oid;
            let ppn = self.program(ONODE, die, src, oid, n, n * self.o.onode_bytes, rec)?;
            let mut live = 0;
            for (k, &(s, _, tomb)) in group.iter().enumerate() {
                self.opages[rec as usize].slots.push(s);
                if tomb {
                    // A tombstone stays valid (GC moves it) so that no older onode of the
                    // removed object can come back at recovery (spec §2 gap 4).
                    let ob = &mut self.objs[s as usize];
                    ob.onode_ppn = ppn;
                    ob.onode_idx = k as u32;
                    ob.onode_csn = new_csn;
                    ob.lcs = new_csn;
                    self.unpin_all(s);
                    self.drop_tail(s);
                    self.set_uncommitted(s, false);
                    live += 1;
                } else {
                    let ob = &mut self.objs[s as usize];
                    // GC during `next_die` may have moved an older copy: drop it.
                    if ob.onode_ppn != NONE {
                        let (op, oi) = (ob.onode_ppn, ob.onode_idx);
                        let _ = oi;
                        let r = self.rec_of(op);
                        if r != NONE {
                            self.opages[r as usize].live -= 1;
                            if self.opages[r as usize].live == 0 {
                                self.gct_drop(op);
                                self.invalidate(op);
                                self.free_opage(r);
                            }
                        }
                    }
                    let ob = &mut self.objs[s as usize];
                    ob.onode_ppn = ppn;
                    ob.onode_idx = k as u32;
                    let mut clean = false;
                    let committed = ob.move_from == NONE || ob.commit_req;
                    if self.yaffs {
                        // A new header is a shrink header if a truncate asked for one; a moved
                        // one stays what it was.
                        if committed {
                            ob.onode_shrink = ob.shrink_pending;
                            ob.shrink_pending = false;
                        }
                        if ob.onode_shrink && committed {
                            let c = (ppn / self.ppc) as usize;
                            self.chunks[c].shrink = true;
                            self.shrink_ppns.insert(ppn);
                        }
                    }
                    let ob = &mut self.objs[s as usize];
                    ob.commit_req = false;
                    if committed {
                        ob.onode_csn = new_csn;
                        ob.lcs = new_csn;
                        if ob.tail_page == u64::MAX && !ob.onode_dirty {
                            let nodes = &self.nodes;
                            clean = ob.dirty.iter().all(|&id| {
                                let n = &nodes.nodes[id as usize];
                                n.free || n.dirty == 0 || n.obj != s
                            });
                        }
                    }
                    ob.move_from = NONE;
                    if committed {
                        self.unpin_all(s);
                    }
                    if clean {
                        self.set_uncommitted(s, false);
                    }
                    live += 1;
                }
            }
            self.opages[rec as usize].live = live;
            if live == 0 {
                self.invalidate(ppn);
                self.free_opage(rec);
            }
        }
        list.clear();
        self.pend_scratch = list;
        self.close_stage();
        Ok(())
    }

    /// Put a version of the onode of `s` into the onode write buffer (§4.5.4.1: new
    /// partial-page data is staged in a page-size buffer; §4.6.2: "several write operations
    /// to onodes ... incur one page write"; spec §2 "the new onode is packed into the onode
    /// write buffer"). Every version takes a slot, even when an older version of the same
    /// object waits in the buffer (that slot is then stale: written, but garbage from birth),
    /// so onode page writes follow the number of onode updates as Fig. 39(c) and 40(c) show
    /// (reading \[N\], issue 30). A new version is the DRAM onode as it is now, with the SN of
    /// the newest page programmed as its content SN (what it covers: data programmed later is
    /// re-applied at recovery); a move (OBFS survivor, MLGC eviction) keeps its flash
    /// version.
    pub(super) fn obuf_append(&mut self, s: u32, src: Src, tomb: bool) {
        let ob = &self.objs[s as usize];
        let commit = tomb || ob.move_from == NONE || ob.commit_req;
        let csn = if commit { self.sn } else { ob.onode_csn };
        let rec = if self.contents.is_none() {
            None
        } else if commit {
            Some(self.onode_rec(s, csn, tomb))
        } else {
            Some(
                self.onode_recs_from(ob.move_from, &[s])
                    .first()
                    .copied()
                    .unwrap_or_else(|| self.onode_rec(s, ob.onode_csn, !ob.live)),
            )
        };
        self.obuf_seq += 1;
        let seq = self.obuf_seq;
        let ob = &mut self.objs[s as usize];
        ob.commit_req = false;
        ob.move_from = NONE;
        ob.obuf_seq = seq;
        let pin_mark = ob.pins.len() as u32;
        self.obuf.push(OEnt {
            slot: s,
            src,
            tomb,
            commit,
            csn,
            pin_mark,
            seq,
            rec,
        });
        self.counters.onodes_buffered += 1;
        // The capacitor programs the buffer first at power loss: an object this version
        // covers wholly leaves IC_OBJ now (the back-up set counts the buffer as one page).
        let ob = &self.objs[s as usize];
        let clean = tomb
            || (commit && ob.live && ob.tail_page == u64::MAX && !ob.onode_dirty && {
                let nodes = &self.nodes;
                ob.dirty.iter().all(|&id| {
                    let n = &nodes.nodes[id as usize];
                    n.free || n.dirty == 0 || n.obj != s
                })
            });
        if clean {
            self.set_uncommitted(s, false);
        }
    }

    /// The negative control of [`Device::power_loss_with`]: the buffer is lost, but the objects
    /// whose newest version it held are taken as committed (none of them goes to IC_OBJ).
    pub(super) fn drop_obuf(&mut self) {
        for e in std::mem::take(&mut self.obuf) {
            let s = e.slot;
            if self.objs[s as usize].obuf_seq != e.seq {
                continue;
            }
            self.objs[s as usize].obuf_seq = 0;
            if e.commit || e.tomb {
                self.set_uncommitted(s, false);
            }
        }
    }

    /// Program the onode write buffer (up to a page of it, in buffer order) on `die`, or on
    /// the onode stream's next die after GC made room there. A version still the object's
    /// newest becomes its onode on flash; a committed one (not a move) makes its content SN
    /// the object's LCS and releases the index pages it pinned before the version was
    /// buffered. Besides when it is full,
    /// the buffer is programmed by a FLUSH of an object with a version in it, when GC under
    /// the extent tree needs the pins it holds released, at the end of recovery, and by the
    /// capacitor at power loss (readings \[N\], issue 30).
    pub(super) fn program_obuf(&mut self, die: Option<u32>) -> Result<(), OsdError> {
        if self.obuf.is_empty() {
            return Ok(());
        }
        let die = match die {
            Some(d) => d,
            None => self.next_die(ONODE)?,
        };
        if self.obuf.is_empty() {
            // GC on the way programmed it.
            return Ok(());
        }
        let n = self.obuf.len().min(self.onodes_per_page as usize);
        // Taken out only once programmed: a cut in the program leaves it to the capacitor.
        let group: Vec<OEnt> = self.obuf[..n].to_vec();
        if self.contents.is_some() {
            let recs = group.iter().filter_map(|e| e.rec).collect();
            self.next_content = Some(PageContent::Onode(recs));
        }
        let rec = self.alloc_opage();
        let oid = self.objs[group[0].slot as usize].oid;
        let n = n as u32;
        let bytes = n * self.o.onode_bytes;
        let ppn = match self.program(ONODE, die, group[0].src, oid, n, bytes, rec) {
            Ok(p) => p,
            Err(e) => {
                self.free_opage(rec);
                return Err(e);
            }
        };
        self.obuf.drain(..n as usize);
        if n < self.onodes_per_page {
            self.counters.onode_buffer_early += 1;
        }
        let mut live = 0;
        for (k, e) in group.iter().enumerate() {
            let s = e.slot;
            self.opages[rec as usize].slots.push(s);
            if self.objs[s as usize].obuf_seq != e.seq {
                // A newer version of the object was buffered after this one.
                continue;
            }
            live += 1;
            let ob = &mut self.objs[s as usize];
            ob.obuf_seq = 0;
            debug_assert!(ob.onode_ppn == NONE, "a buffered onode is also on flash");
            ob.onode_ppn = ppn;
            ob.onode_idx = k as u32;
            if e.tomb {
                // A tombstone stays valid (GC moves it) so that no older onode of the
                // removed object can come back at recovery (spec §2 gap 4).
                ob.onode_csn = e.csn;
                ob.lcs = e.csn;
                self.unpin_all(s);
                self.drop_tail(s);
                self.set_uncommitted(s, false);
            } else if e.commit {
                // Whether the object is committed was settled when the version was buffered
                // ([`Device::obuf_append`]): what changed since keeps it uncommitted, and this
                // version (a snapshot) does not cover that.
                ob.onode_csn = e.csn;
                ob.lcs = e.csn;
                self.unpin_to(s, e.pin_mark);
            }
        }
        self.opages[rec as usize].live = live;
        if live == 0 {
            self.invalidate(ppn);
            self.free_opage(rec);
        }
        Ok(())
    }
}
