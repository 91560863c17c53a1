//! Chunk GC: greedy victim (fewest valid pages) per die, valid pages moved to the die's open
//! chunk of their type, the moved pages' metadata committed before the erase.
//!
//! Source: §4.5.4.1 ("the chunk with the fewest valid pages is selected for reclamation"),
//! A2 l.10/26/42 (GC when clean chunks < T_chunk; migrated pages re-enter their queues by
//! type, §4.5.4.2), §4.4.2 (MLGC: only an onode page's valid bytes move).
//!
//! Readings (\[N\]): T_chunk = `osd.gc_clean_chunks`; GC is per die; YAFFS2-like: superseded
//! shrink headers are carried to a new page while an older discarded page may need them.

use super::*;

impl Device {
    /// Greedy chunk GC on `die` (§4.5.4.1): the full chunk with the fewest valid pages; its
    /// valid pages move to the die's open chunk of their type (only the valid bytes of an
    /// onode page, §4.4.2), then its blocks are erased. Returns whether a chunk was reclaimed.
    pub(super) fn gc(&mut self, die: u32) -> Result<bool, OsdError> {
        let base = die * self.cpd;
        let mut best: Option<(u32, u32)> = None;
        let vt = self.o.virtual_tree;
        for c in base..base + self.cpd {
            let m = &self.chunks[c as usize];
            // The pages GC must move: the valid ones and, under the virtual tree, the pinned
            // ones ([`Device::relocate_pins`]); the extent tree leaves a pinned chunk alone.
            let cost = m.valid + m.pins;
            if m.state == C_FULL && (vt || m.pins == 0) && best.is_none_or(|(v, _)| cost < v) {
                best = Some((cost, c));
            }
        }
        if !vt && !self.obuf.is_empty() {
            // Extent tree: the best victim holds pages pinned until onode versions waiting in
            // the onode write buffer are on flash: program it, then look again (issue 30).
            let mut any: Option<(u32, u32)> = None;
            for c in base..base + self.cpd {
                let m = &self.chunks[c as usize];
                if m.state == C_FULL && any.is_none_or(|(v, _)| m.valid < v) {
                    any = Some((m.valid, c));
                }
            }
            if let Some((v, c)) = any {
                if self.chunks[c as usize].pins > 0 && best.is_none_or(|(b, _)| v < b) {
                    self.in_gc = true;
                    let r = self.program_obuf(Some(die));
                    self.in_gc = false;
                    r?;
                    self.counters.onode_buffer_gc += 1;
                    self.plan.push_stage(&mut self.gc_progs);
                    best = None;
                    for c in base..base + self.cpd {
                        let m = &self.chunks[c as usize];
                        if m.state == C_FULL && m.pins == 0 && best.is_none_or(|(b, _)| m.valid < b)
                        {
                            best = Some((m.valid, c));
                        }
                    }
                }
            }
        }
        let Some((cost, victim)) = best else {
            return Ok(false);
        };
        if cost >= self.ppc {
            return Ok(false);
        }
        self.in_gc = true;
        let r = self.gc_chunk(die, victim);
        self.in_gc = false;
        r?;
        self.counters.gc_chunks += 1;
        // A2: GC stages run before the program that needed the space.
        self.plan.push_stage(&mut self.gc_reads);
        self.plan.push_stage(&mut self.gc_progs);
        self.plan.push_stage(&mut self.gc_erases);
        Ok(true)
    }

    /// SN of the first page programmed in chunk `c` (its age, as YAFFS2's block sequence
    /// number).
    pub(super) fn chunk_sn(&self, c: u32) -> u64 {
        self.chunks[c as usize].first_sn
    }

    /// The age ([`Device::chunk_sn`]) of the oldest chunk other than `except` holding a
    /// discarded page (YAFFS2's oldest dirty sequence number); `u64::MAX` if none.
    pub(super) fn oldest_dirty_sn(&self, except: u32) -> u64 {
        let mut o = u64::MAX;
        for (c, m) in self.chunks.iter().enumerate() {
            if c as u32 != except && m.state != C_FREE && m.valid < m.wp {
                o = o.min(self.chunk_sn(c as u32));
            }
        }
        o
    }

    /// YAFFS2-like, before GC erases `victim`: a superseded shrink header in it is still
    /// needed while a chunk older than the truncate it records holds discarded pages (an
    /// older page of the object past the shrunk size may be among them, and a scan would
    /// bring it back). YAFFS2 keeps such a block from GC until it is the oldest dirty one
    /// (`yaffs_block_ok_for_gc`); GC here is per die, where that rule can leave a die with
    /// no victim, so the header is copied instead (content SN and flag kept; the copy is
    /// not valid: no object reads it, only the scan) and dropped once no older discarded
    /// page is left.
    pub(super) fn carry_shrink_headers(&mut self, die: u32, victim: u32) -> Result<(), OsdError> {
        if !self.chunks[victim as usize].shrink {
            return Ok(());
        }
        let lo = victim * self.ppc;
        let list: Vec<u32> = self.shrink_ppns.range(lo..lo + self.ppc).copied().collect();
        let oldest = self.oldest_dirty_sn(victim);
        for old in list {
            self.shrink_ppns.remove(&old);
            let (c, off) = self.split(old);
            let Some((st, csn, oid, aux, len)) = self
                .page_at(c, off)
                .map(|p| (p.state, p.csn, p.oid, p.aux, p.len))
            else {
                continue;
            };
            if st != INVALID || oldest > csn {
                continue;
            }
            self.read(ONODE, old, Src::Gc);
            self.next_content = self.content_of(old).cloned();
            self.next_csn = csn;
            let new = self.program(ONODE, die, Src::Gc, oid, aux, len, NONE)?;
            self.invalidate(new);
            self.shrink_ppns.insert(new);
            self.chunks[(new / self.ppc) as usize].shrink = true;
            self.shrink_carried += 1;
        }
        Ok(())
    }

    /// The values node `n` holds on flash: a leaf's extent entries; an internal node's
    /// children by VA (virtual tree, `vt`) or by PPN (extent tree).
    pub(super) fn node_flash_vals(&self, n: &crate::osd::tree::Node, vt: bool) -> Vec<u64> {
        if n.level == 0 {
            return n.vals.clone();
        }
        n.vals
            .iter()
            .map(|&c| {
                let ch = &self.nodes.nodes[c as usize];
                (if vt { ch.va } else { ch.ppn }) as u64
            })
            .collect()
    }

    pub(super) fn gc_chunk(&mut self, die: u32, victim: u32) -> Result<(), OsdError> {
        let base_ppn = victim * self.ppc;
        // Objects whose data or index pages this GC moves (`touched` cannot say: during a
        // command's final flush it has been handed over already).
        let mut moved_objs: Vec<u32> = Vec::new();
        for off in 0..self.ppc as usize {
            // A chunk with nothing valid may have dropped its per-page state already.
            let Some(p) = self.page_at(victim as usize, off) else {
                break;
            };
            let (state, ty, oid, aux, len, back) =
                (p.state, p.ptype as usize, p.oid, p.aux, p.len, p.back);
            if state != VALID {
                continue;
            }
            // With the virtual tree and the diff cache the moves are committed lazily, so each
            // one can add an object to the back-up set: commit those moved so far when it
            // would outgrow the capacitor's budget (issue 17, [`Device::bound_backup`]).
            if self.cache_on
                && self.o.virtual_tree
                && !moved_objs.is_empty()
                && self.backup_pages_bound() > self.backup_limit()
            {
                self.commit_moved(&mut moved_objs, true)?;
            }
            let old = base_ppn + off as u32;
            self.read(ty.min(ONODE), old, Src::Gc);
            if ty != ONODE {
                self.next_content = self.content_of(old).cloned();
                self.next_csn = self.csn_of(old);
            }
            match ty {
                BACKUP if self.recovering => {
                    // Recovery is not finished: the capacitor flush it works from must
                    // survive a cut, so GC copies it.
                    let new = self.program(BACKUP, die, Src::Recovery, 0, 0, len, NONE)?;
                    let _ = new;
                    self.invalidate(old);
                }
                BACKUP => {
                    // An old capacitor flush: superseded once recovery finished; drop it.
                    self.next_content = None;
                    self.next_csn = 0;
                    self.invalidate(old);
                }
                DATA if back as usize >= self.objs.len() => {
                    // A valid data page no object maps: garbage (only the `no_reachability`
                    // negative control of the crash test leaves such pages valid).
                    self.next_content = None;
                    self.next_csn = 0;
                    self.invalidate(old);
                }
                DATA => {
                    // The mapped length (a truncate may have cut the page since it was written).
                    let len = self
                        .map_get(back, aux as u64)
                        .map_or(len, |v| leaf_parts(v).1);
                    let new = self.program(DATA, die, Src::Gc, oid, aux, len, back)?;
                    self.invalidate(old);
                    self.map_set(back, aux as u64, leaf_val(new, len), false);
                    // The leaf may be dirty already (an outer flush owns it): list it anyway,
                    // so the commit before this erase writes it.
                    let root = self.objs[back as usize].root;
                    if root != NONE && !self.yaffs {
                        let mut path = std::mem::take(&mut self.path);
                        let leaf = self.nodes.find_leaf(root, aux as u64, &mut path);
                        self.path = path;
                        self.objs[back as usize].dirty.push(leaf);
                    }
                    moved_objs.push(back);
                    self.touch_obj(back, false);
                }
                INDEX => {
                    let id = back;
                    let new = self.program(INDEX, die, Src::Gc, oid, aux, 0, id)?;
                    self.invalidate(old);
                    let n = &mut self.nodes.nodes[id as usize];
                    n.ppn = new;
                    let (va, parent, obj) = (n.va, n.parent, n.obj);
                    if self.o.virtual_tree {
                        self.pt_set(va, new);
                    } else if parent != NONE {
                        self.nodes.touch(parent, 1);
                        self.drain_dirty();
                        self.objs[obj as usize].dirty.push(parent);
                    } else {
                        self.set_onode_dirty(obj, true);
                    }
                    moved_objs.push(obj);
                    self.touch_obj(obj, false);
                }
                _ => {
                    // Only the valid onodes move (for OBFS every onode of a valid page is).
                    let rec = back;
                    let mut slots = std::mem::take(&mut self.opages[rec as usize].slots);
                    let mut k = 0;
                    while k < slots.len() {
                        let s = slots[k];
                        let ob = &self.objs[s as usize];
                        if !(ob.onode_ppn == old && ob.onode_idx == k as u32) {
                            slots[k] = NONE;
                        }
                        k += 1;
                    }
                    slots.retain(|&s| s != NONE);
                    self.gct_drop(old);
                    if self.contents.is_some() {
                        let recs = self.onode_recs_from(old, &slots);
                        self.next_content = Some(PageContent::Onode(recs));
                    }
                    let nrec = self.alloc_opage();
                    let n = slots.len() as u32;
                    let first_oid = slots.first().map_or(oid, |&s| self.objs[s as usize].oid);
                    let new = self.program(
                        ONODE,
                        die,
                        Src::Gc,
                        first_oid,
                        n,
                        n * self.o.onode_bytes,
                        nrec,
                    )?;
                    for (i, &s) in slots.iter().enumerate() {
                        let ob = &mut self.objs[s as usize];
                        ob.onode_ppn = new;
                        ob.onode_idx = i as u32;
                    }
                    if self.shrink_ppns.remove(&old) {
                        self.shrink_ppns.insert(new);
                        self.chunks[(new / self.ppc) as usize].shrink = true;
                    }
                    self.opages[nrec as usize].live = n;
                    self.opages[nrec as usize].slots.extend_from_slice(&slots);
                    slots.clear();
                    self.opages[rec as usize].slots = slots;
                    self.free_opage(rec);
                    self.invalidate(old);
                }
            }
        }
        // The moved pages' new addresses must be on flash before their old copies are erased:
        // except with the virtual tree and the diff cache (the page table, the OOB and
        // recovery's data re-apply cover them, §4.4.5), commit the metadata of everything
        // the moves touched first (A2's "goto handle_data_queue").
        // With them, the moved objects stay uncommitted: when that would take the back-up set
        // over the capacitor's budget ([`Device::bound_backup`], issue 17), commit them too.
        // During recovery's write-back they are committed as well: a second power loss there
        // has no capacitor flush of its own to list them in IC_OBJ, so an object consistent
        // at the first loss would be rebuilt from its committed tree, whose page GC moved and
        // erased (found by the mixed crash workload's second cuts, issue 30).
        if moved_objs.is_empty() {
            // Nothing reachable through an index or onode moved: nothing to commit (the
            // command's own queued onodes wait for its end).
        } else if self.yaffs {
            self.write_pending_onodes()?;
        } else if !(self.cache_on && self.o.virtual_tree)
            || self.recovering
            || self.backup_pages_bound() > self.backup_limit()
        {
            let dmm = self.cache_on && self.o.virtual_tree;
            self.commit_moved(&mut moved_objs, dmm)?;
        }
        // During recovery's write-back the commit's onodes must be on flash before the erase:
        // a second power loss there has no capacitor flush to save the onode write buffer, and
        // the onode it drops would leave the object at its old tree, which reaches the pages
        // about to be erased (mixed crash workload, extent tree and OBFS, issue 30).
        if self.recovering {
            while !self.obuf.is_empty() {
                self.program_obuf(None)?;
            }
        }
        if self.chunks[victim as usize].pins > 0 {
            self.relocate_pins(die, victim)?;
        }
        if self.yaffs {
            self.carry_shrink_headers(die, victim)?;
        }
        // Erase the victim's blocks.
        for b in 0..self.chunk_blocks {
            let first = base_ppn + b * self.ppb;
            let op_index = self.flash_ops;
            self.flash_ops += 1;
            if let Some(log) = self.op_log.as_mut() {
                log.push(255);
            }
            if op_index == self.cut_at {
                if let Some(p) = self.pages[victim as usize].as_mut() {
                    let a = (b * self.ppb) as usize;
                    p.state[a..a + self.ppb as usize].fill(TORN);
                }
                return Err(OsdError::PowerCut { op: op_index });
            }
            if let Some(map) = self.contents.as_mut() {
                for q in first..first + self.ppb {
                    map.set(q, None);
                }
            }
            if let Some(p) = self.pages[victim as usize].as_mut() {
                let a = (b * self.ppb) as usize;
                p.state[a..a + self.ppb as usize].fill(FREE);
            }
            self.gc_erases.push(FlashOp {
                kind: OpKind::Erase,
                ppn: first,
                die,
                src: Src::Gc,
            });
            let blk = (victim * self.chunk_blocks + b) as usize;
            self.erase_count[blk] += 1;
            self.counters.erases += 1;
        }
        if let Some(p) = self.pages[victim as usize].as_mut() {
            p.state.fill(FREE);
        }
        self.sparse[victim as usize] = None;
        let m = &mut self.chunks[victim as usize];
        m.state = C_FREE;
        m.valid = 0;
        m.wp = 0;
        m.shrink = false;
        if self.yaffs {
            let lo = victim * self.ppc;
            let gone: Vec<u32> = self.shrink_ppns.range(lo..lo + self.ppc).copied().collect();
            for q in gone {
                self.shrink_ppns.remove(&q);
            }
        }
        self.stripes.leave(victim);
        self.free[die as usize].push(victim);
        Ok(())
    }

    /// Virtual tree: copy the victim's pinned pages (superseded index pages that an
    /// uncommitted object's last consistent state may still reach, [`Device::pin`]) to the
    /// die's open index chunk before the erase. A copy keeps the page's VA and content SN, so
    /// recovery's rollback (A1 l.8–11) finds it as the same version; it is not valid (no node
    /// reads it) and stays pinned, at its new place, until the object's commit (issue 30:
    /// before, GC did not take such a chunk, a rule the thesis does not have).
    pub(super) fn relocate_pins(&mut self, die: u32, victim: u32) -> Result<(), OsdError> {
        let lo = victim * self.ppc;
        let list: Vec<(u32, Pin)> = self
            .pinned
            .range(lo..lo + self.ppc)
            .map(|(&p, &q)| (p, q))
            .collect();
        for (old, q) in list {
            self.read(INDEX, old, Src::Gc);
            self.next_content = self.content_of(old).cloned();
            self.next_csn = q.csn;
            let oid = self.objs[q.slot as usize].oid;
            let new = self.program(INDEX, die, Src::Gc, oid, q.aux, 0, NONE)?;
            self.invalidate(new);
            self.pinned.remove(&old);
            self.chunks[victim as usize].pins -= 1;
            self.chunks[(new / self.ppc) as usize].pins += 1;
            self.pinned.insert(new, q);
            self.objs[q.slot as usize].pins.push(new);
            self.counters.pinned_moves += 1;
        }
        Ok(())
    }

    /// Commit the metadata (index, then onode) of the live objects in `moved_objs` whose
    /// pages GC moved; empties the list. `all_onodes`: also write the onode of each that is
    /// still uncommitted (the virtual tree's index writes leave the onode clean, yet the
    /// object belongs to IC_OBJ until an onode of it is written).
    pub(super) fn commit_moved(
        &mut self,
        moved_objs: &mut Vec<u32>,
        all_onodes: bool,
    ) -> Result<(), OsdError> {
        moved_objs.sort_unstable();
        moved_objs.dedup();
        let objs: Vec<u32> = moved_objs
            .iter()
            .copied()
            .filter(|&s| {
                let ob = &self.objs[s as usize];
                ob.live && (ob.onode_dirty || !ob.dirty.is_empty())
            })
            .collect();
        moved_objs.clear();
        // Commit a whole tree: an outer flush that this GC interrupted may hold some of the
        // object's dirty nodes in its buckets (not in `dirty`); the onode written here must
        // not reach nodes that are not on flash yet (a later cut would recover a torn tree).
        let mut all = std::mem::take(&mut self.nodes_scratch);
        for &s in &objs {
            let root = self.objs[s as usize].root;
            if root == NONE || self.yaffs {
                continue;
            }
            self.nodes.all_nodes(root, &mut all);
            for &id in &all {
                if self.nodes.nodes[id as usize].dirty > 0 {
                    self.objs[s as usize].dirty.push(id);
                }
            }
        }
        all.clear();
        self.nodes_scratch = all;
        self.flush_objects(&objs, |_| Src::Gc)?;
        if all_onodes {
            for &s in &objs {
                if self.objs[s as usize].uncommitted {
                    self.objs[s as usize].commit_req = true;
                    self.pending.push((s, Src::Gc, false));
                }
            }
        }
        self.write_pending_onodes()
    }
}
