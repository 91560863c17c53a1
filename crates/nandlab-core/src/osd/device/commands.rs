//! The object commands (Table 15) and the end of a command: A2's index and onode stages
//! without the diff cache, its eviction with it; the DRAM peaks.
//!
//! Source: §4.5.2 and T15 (CREATE, REMOVE, WRITE, READ, GET_ATTRIBUTE, SET_ATTRIBUTE),
//! §4.5.4.2 and A2 (data → index → onode), §4.6.2 (a 4 KB read ≈ 3 page reads).
//!
//! Readings (\[N\], spec §1): REMOVE and TRUNCATE are not described in the thesis: they
//! invalidate data and free index nodes; REMOVE writes a tombstone onode.

use super::*;

impl Device {
    pub(super) fn slot(&self, oid: ObjectId, cmd: &'static str) -> Result<u32, OsdError> {
        match self.index.get(&oid) {
            Some(&s) => Ok(s),
            None => Err(OsdError::UnknownObject { oid, cmd }),
        }
    }

    /// The slot of `oid` for command `cmd` ([`Device::slot`]), touched by the command (`host`:
    /// it changes the object) with its onode in DRAM.
    fn open_obj(&mut self, oid: ObjectId, cmd: &'static str, host: bool) -> Result<u32, OsdError> {
        let s = self.slot(oid, cmd)?;
        self.touch_obj(s, host);
        self.need_onode(s);
        Ok(s)
    }

    /// Apply one command; its cost is left in [`Device::plan`].
    pub fn execute(&mut self, op: &OsdOp) -> Result<(), OsdError> {
        self.execute_batch(std::slice::from_ref(op))
    }

    /// Apply several commands as one: the device runs its queues once for all of them (one
    /// data, index and onode pass, as A2 does for the object operations of one I/O), so their
    /// onodes pack into shared pages. Used to build packed onode pages in tests (F29).
    pub fn execute_batch(&mut self, ops: &[OsdOp]) -> Result<(), OsdError> {
        self.plan.clear();
        self.index_reads_cmd = 0;
        self.index_used_cmd = false;
        let mut r = Ok(());
        for op in ops {
            r = self.execute_inner(op);
            if r.is_err() {
                break;
            }
        }
        // finish: A2's index and onode stages, or the diff cache's eviction
        let r = r.and_then(|_| self.finish());
        self.clear_touched();
        r
    }

    /// Forget which objects the command touched (their flags and the list).
    pub(super) fn clear_touched(&mut self) {
        for &s in &self.touched {
            let ob = &mut self.objs[s as usize];
            ob.touched = false;
            ob.touched_host = false;
            ob.onode_read = false;
        }
        self.touched.clear();
    }

    pub(super) fn finish(&mut self) -> Result<(), OsdError> {
        self.bound_backup()?;
        let mut done = std::mem::take(&mut self.touched);
        // (The round lists are scratch vectors of the device: no allocation per command.)
        if self.cache_on {
            let mut round = std::mem::take(&mut self.finish_list);
            round.clear();
            round.extend_from_slice(&done);
            for _ in 0..16 {
                for &s in &round {
                    if self.objs[s as usize].live && self.has_cache_state(s) {
                        self.lru_front(s);
                    }
                }
                self.write_pending_onodes()?;
                self.evict()?;
                if self.touched.is_empty() {
                    break;
                }
                round.clear();
                round.append(&mut self.touched);
                done.extend_from_slice(&round);
            }
            self.finish_list = round;
        } else {
            // A2: every touched object's index, then its onode; GC during those writes may
            // dirty more (extent-tree cascades of moved pages): commit those too.
            let mut list = std::mem::take(&mut self.finish_list);
            list.clear();
            list.extend(done.iter().copied().filter(|&s| self.objs[s as usize].live));
            let mut again = std::mem::take(&mut self.finish_again);
            let mut host = true;
            for _ in 0..16 {
                self.flush_objects(&list, |ob| {
                    if host && ob.touched_host {
                        Src::Host
                    } else {
                        Src::Gc
                    }
                })?;
                self.write_pending_onodes()?;
                host = false;
                again.clear();
                again.append(&mut self.touched);
                done.extend_from_slice(&again);
                again.extend(list.iter().copied().filter(|&s| {
                    let ob = &self.objs[s as usize];
                    ob.onode_dirty || !ob.dirty.is_empty()
                }));
                again.retain(|&s| self.objs[s as usize].live);
                again.sort_unstable();
                again.dedup();
                if again.is_empty() {
                    break;
                }
                std::mem::swap(&mut list, &mut again);
            }
            self.finish_list = list;
            self.finish_again = again;
        }
        self.touched = done;
        if self.index_used_cmd {
            self.counters.index_ops += 1;
            if self.index_reads_cmd == 0 {
                self.counters.index_hits += 1;
            }
        }
        let d = &mut self.dram;
        d.diff_cache_bytes = d.diff_cache_bytes.max(
            self.nodes.dirty_bytes
                + self.clean_pages * self.page as u64
                + self.dirty_onodes * self.o.onode_bytes as u64,
        );
        d.global_index_bytes = d.global_index_bytes.max(self.index.len() as u64 * 16);
        let pt = self.page_table_bytes();
        let d = &mut self.dram;
        d.page_table_bytes = d.page_table_bytes.max(pt);
        if self.yaffs {
            d.ram_index_bytes = d.ram_index_bytes.max(self.mapped * 4);
        }
        Ok(())
    }

    /// Walk the index paths to pages `p0..=p1` of `s` except its tail page, one walk per
    /// leaf, not per page ([`Device::lookup`]'s bound; `write` as there), and emit the path
    /// reads; returns the tail page.
    fn walk_pages(&mut self, s: u32, p0: u64, p1: u64, write: bool) -> u64 {
        let tail = self.objs[s as usize].tail_page;
        let mut walked_until = 0;
        for i in p0..=p1 {
            if i != tail && i >= walked_until {
                walked_until = self.lookup(s, i, write);
            }
        }
        self.emit_path_reads();
        tail
    }

    pub(super) fn execute_inner(&mut self, op: &OsdOp) -> Result<(), OsdError> {
        let ps = self.page as u64;
        match *op {
            OsdOp::Create { oid } => {
                if self.index.contains_key(&oid) {
                    return Err(OsdError::ObjectExists { oid });
                }
                let s = self.objs.len() as u32;
                self.objs.push(Obj::new(oid));
                self.index.insert(oid, s);
                self.set_onode_dirty(s, true);
                self.touch_obj(s, true);
            }
            OsdOp::GetAttr { oid } => {
                self.open_obj(oid, "get_attr", false)?;
            }
            OsdOp::SetAttr { oid } => {
                let s = self.open_obj(oid, "set_attr", true)?;
                self.set_onode_dirty(s, true);
            }
            OsdOp::Flush { oid } => {
                let s = self.slot(oid, "flush")?;
                self.touch_obj(s, false);
                self.flush_tail(s)?;
                self.close_stage();
                // The object's buffered state goes to flash: its onode too, when a version of
                // it waits in the onode write buffer (reading [N], issue 30).
                if self.objs[s as usize].obuf_seq != 0 {
                    self.program_obuf(None)?;
                    self.close_stage();
                }
            }
            OsdOp::Read {
                oid,
                offset_bytes,
                len_bytes,
            } => {
                let s = self.open_obj(oid, "read", false)?;
                let size = self.objs[s as usize].size;
                if len_bytes == 0 || offset_bytes >= size {
                    return Ok(());
                }
                let end = (offset_bytes + len_bytes).min(size);
                let (p0, p1) = (offset_bytes / ps, (end - 1) / ps);
                let tail = self.walk_pages(s, p0, p1, false);
                // One extent search per extent, not per page: reads change no mapping.
                let mut near = super::objects::MapCursor::default();
                for i in p0..=p1 {
                    if i == tail {
                        continue;
                    }
                    if let Some(v) = self.map_get_near(s, i, &mut near) {
                        self.read(DATA, leaf_parts(v).0, Src::Host);
                    }
                }
                self.close_stage();
            }
            OsdOp::Write {
                oid,
                offset_bytes,
                len_bytes,
            } => {
                let s = self.open_obj(oid, "write", true)?;
                if len_bytes == 0 {
                    return Ok(());
                }
                let end = offset_bytes.saturating_add(len_bytes);
                let (p0, p1) = (offset_bytes / ps, (end - 1) / ps);
                if p1 >= u32::MAX as u64 {
                    return Err(OsdError::TooLarge { oid, offset_bytes });
                }
                let tail = self.walk_pages(s, p0, p1, true);
                // Read-before-write of partial pages over existing data (§4.5.4.1).
                let edges = [p0, p1];
                let n_edges = if p0 == p1 { 1 } else { 2 };
                for &i in &edges[..n_edges] {
                    let b0 = offset_bytes.max(i * ps) - i * ps;
                    let b1 = end.min((i + 1) * ps) - i * ps;
                    let full = b0 == 0 && b1 == ps;
                    if !full && i != tail {
                        if let Some(v) = self.map_get(s, i) {
                            self.read(DATA, leaf_parts(v).0, Src::Host);
                            self.counters.rmw += 1;
                        }
                    }
                }
                self.close_stage();
                for i in p0..=p1 {
                    let b0 = offset_bytes.max(i * ps) - i * ps;
                    let b1 = (end.min((i + 1) * ps) - i * ps) as u32;
                    let full = b0 == 0 && b1 as u64 == ps;
                    let b0 = b0 as u32;
                    if full {
                        let c = self.data_content(s, i, 0, b1);
                        self.program_data(s, i, ps as u32, c)?;
                        if self.objs[s as usize].tail_page == i {
                            self.drop_tail(s);
                        }
                    } else if self.objs[s as usize].tail_page == i {
                        let rec = self.contents.is_some();
                        let wid = self.write_id;
                        let ob = &mut self.objs[s as usize];
                        ob.tail_fill = ob.tail_fill.max(b1);
                        if rec {
                            overlay(&mut ob.tail_segs, b0, b1, wid);
                        }
                        if ob.tail_fill as u64 == ps {
                            self.flush_tail(s)?;
                        }
                    } else if let Some(v) = self.map_get(s, i) {
                        let len = leaf_parts(v).1.max(b1);
                        let c = self.data_content(s, i, b0, b1);
                        self.program_data(s, i, len, c)?;
                    } else if self.yaffs {
                        // YAFFS2 writes partial chunks at once (its tags carry the byte count).
                        let c = self.data_content(s, i, b0, b1);
                        self.program_data(s, i, b1, c)?;
                    } else {
                        self.start_tail(s, i, b0, b1)?;
                    }
                }
                self.close_stage();
                let ob = &mut self.objs[s as usize];
                ob.size = ob.size.max(end);
                self.set_onode_dirty(s, true);
            }
            OsdOp::Truncate { oid, size_bytes } => {
                let s = self.open_obj(oid, "truncate", true)?;
                let keep = size_bytes.div_ceil(ps);
                self.collect_entries(s);
                let doomed: Vec<(u64, u64)> = self
                    .entries_scratch
                    .iter()
                    .copied()
                    .filter(|e| e.0 >= keep)
                    .collect();
                if let Some(&(k, _)) = doomed.first() {
                    self.lookup(s, k, true);
                    self.emit_path_reads();
                }
                for &(k, _) in &doomed {
                    if let Some(v) = self.map_remove(s, k) {
                        self.invalidate(leaf_parts(v).0);
                    }
                }
                if size_bytes % ps != 0 {
                    let last = size_bytes / ps;
                    let rem = (size_bytes % ps) as u32;
                    if let Some(v) = self.map_get(s, last) {
                        let (p, l) = leaf_parts(v);
                        if l > rem {
                            self.map_set(s, last, leaf_val(p, rem), true);
                        }
                    }
                }
                let ob = &mut self.objs[s as usize];
                if ob.tail_page != u64::MAX && ob.tail_page >= keep {
                    ob.tail_page = u64::MAX;
                    ob.tail_fill = 0;
                    self.tails_used -= 1;
                } else if ob.tail_page != u64::MAX && ob.tail_page == size_bytes / ps {
                    ob.tail_fill = ob.tail_fill.min((size_bytes % ps) as u32);
                }
                let ob = &mut self.objs[s as usize];
                // YAFFS2 writes the header of a truncate as a shrink header: a later scan
                // cuts every older data page to it (spec §3; YAFFS2's `is_shrink`).
                if self.yaffs && size_bytes < ob.size {
                    ob.shrink_pending = true;
                }
                ob.size = size_bytes;
                self.set_onode_dirty(s, true);
                if self.cache_on {
                    // Recovery re-applies data written after the LCS from the OOB, which
                    // cannot undo a truncation: a truncate commits the object's metadata at
                    // once ([N]; with A2's end-of-command flush it is committed anyway).
                    self.flush_objects(&[s], |_| Src::Host)?;
                    self.write_pending_onodes()?;
                }
            }
            OsdOp::Remove { oid } => {
                let s = self.slot(oid, "remove")?;
                self.need_onode(s);
                // Invalidate the data, free the index (its pages and VAs), drop DRAM state.
                self.collect_entries(s);
                for i in 0..self.entries_scratch.len() {
                    let (p, _) = leaf_parts(self.entries_scratch[i].1);
                    self.invalidate(p);
                }
                self.mapped -= self.entries_scratch.len() as u64;
                let root = self.objs[s as usize].root;
                if root != NONE {
                    let mut all = std::mem::take(&mut self.nodes_scratch);
                    self.nodes.all_nodes(root, &mut all);
                    for &id in &all {
                        if self.objs[s as usize].clean_cached.contains(&id) {
                            self.clean_pages -= 1;
                        }
                        self.nodes.release(id);
                    }
                    all.clear();
                    self.nodes_scratch = all;
                    if self.yaffs {
                        self.nodes.freed.clear();
                    } else {
                        self.drain_freed();
                    }
                }
                let ob = &mut self.objs[s as usize];
                ob.root = NONE;
                ob.n_inline = 0;
                ob.dirty.clear();
                ob.clean_cached.clear();
                // A buffered tail stays in DRAM until the tombstone is on flash: if power
                // fails first, the object (and that acknowledged data) must come back.
                self.set_onode_dirty(s, false);
                self.lru_remove(s);
                self.release_onode(s, Src::Host);
                self.objs[s as usize].live = false;
                self.index.remove(&oid);
                // A tombstone onode keeps a deleted object from coming back (spec §2 [N]).
                self.pending.push((s, Src::Host, true));
                self.touch_obj(s, true);
            }
        }
        Ok(())
    }
}
