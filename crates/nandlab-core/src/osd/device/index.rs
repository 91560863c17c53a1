//! The per-object B+ trees' flash side: flushing dirty nodes (the extent tree's cascade to the
//! root and the onode; the virtual tree's page-table update), the virtual tree's two-level
//! page table (VA → PA), and the pins that keep superseded index pages readable until the
//! object's next commit.
//!
//! Source: §4.1.2 (extent B+ tree, μ-FTL), §4.4.3 and T13 (virtual B+ tree: only the page
//! table changes when a node is rewritten or moved; the onode only when the root VA
//! changes), §4.4.3.3 (page table size), A2 l.24–39 (an object's index flushed as one
//! operation).
//!
//! Readings (\[N\]): one node = one page; all dirty nodes of a flush are programmed in one
//! stage (addresses allocated first); a superseded index page stays pinned (its chunk is not
//! a GC victim) until the object's next commit, so a cut finds the committed tree whole.

use super::*;

impl Device {
    /// Height of `oid`'s B+ tree (0: no tree, its extents are inline in the onode).
    pub fn tree_height(&self, oid: ObjectId) -> u32 {
        match self.index.get(&oid) {
            Some(&s) if self.objs[s as usize].root != NONE => {
                self.nodes.height(self.objs[s as usize].root)
            }
            _ => 0,
        }
    }

    /// Index nodes of `oid`'s B+ tree.
    pub fn index_nodes(&self, oid: ObjectId) -> usize {
        match self.index.get(&oid) {
            Some(&s) if self.objs[s as usize].root != NONE => {
                let mut v = Vec::new();
                self.nodes.all_nodes(self.objs[s as usize].root, &mut v);
                v.len()
            }
            _ => 0,
        }
    }

    /// Current page-table size, bytes.
    pub fn page_table_bytes(&self) -> u64 {
        let tables = self.pt_dir.iter().filter(|t| t.is_some()).count() as u64;
        self.pt_dir.len() as u64 * 8 + tables * 4096
    }

    pub(super) fn alloc_va(&mut self) -> Result<u32, OsdError> {
        let va = if let Some(v) = self.va_free.pop() {
            v
        } else {
            if self.va_next >= self.o.page_table_max_vas {
                return Err(OsdError::PageTableFull {
                    max: self.o.page_table_max_vas,
                });
            }
            self.va_next += 1;
            self.va_next - 1
        };
        self.va_live += 1;
        Ok(va)
    }

    pub(super) fn pt_set(&mut self, va: u32, ppn: u32) {
        if va == NONE {
            return;
        }
        let (hi, lo) = ((va >> 10) as usize, (va & 1023) as usize);
        if self.pt_dir.len() <= hi {
            self.pt_dir.resize(hi + 1, None);
        }
        let t = self.pt_dir[hi].get_or_insert_with(|| vec![NONE; 1024].into_boxed_slice());
        t[lo] = ppn;
    }

    pub(super) fn free_va(&mut self, va: u32) {
        if va == NONE {
            return;
        }
        self.pt_set(va, NONE);
        self.va_free.push(va);
        self.va_live -= 1;
    }

    /// The page-table entry of `va`.
    pub fn pt_get(&self, va: u32) -> u32 {
        let (hi, lo) = ((va >> 10) as usize, (va & 1023) as usize);
        self.pt_dir
            .get(hi)
            .and_then(|t| t.as_ref())
            .map_or(NONE, |t| t[lo])
    }

    pub(super) fn drain_dirty(&mut self) {
        for i in 0..self.nodes.newly_dirty.len() {
            let id = self.nodes.newly_dirty[i];
            let obj = self.nodes.nodes[id as usize].obj;
            self.objs[obj as usize].dirty.push(id);
            self.set_uncommitted(obj, true);
        }
        self.nodes.newly_dirty.clear();
    }

    pub(super) fn drain_freed(&mut self) {
        while let Some((id, ppn, va)) = self.nodes.freed.pop() {
            let obj = self.nodes.nodes[id as usize].obj;
            let aux = if self.o.virtual_tree { va } else { id };
            self.pin(obj, ppn, aux);
            self.invalidate(ppn);
            self.free_va(va);
        }
    }

    /// Index page `ppn` of object `s` was superseded (rewritten elsewhere, or its node
    /// freed): it is invalid, but the object's last committed state on flash may still reach
    /// it (the extent tree by PA from the committed onode; the virtual tree through the LCS
    /// version of a VA that recovery rolls back to) until the object's next commit (an onode
    /// write, or under the virtual tree a flush leaving its tree clean). Until then GC moves
    /// it with its chunk under the virtual tree ([`Device::relocate_pins`]; the thesis has no
    /// rule that keeps a chunk from GC) and, under the extent tree, whose committed tree
    /// reaches it by PA, does not take its chunk (issue 30: see `gc`). `aux` is its OOB VA
    /// (virtual tree) or node id; called before the page is invalidated (its content SN is
    /// read here).
    pub(super) fn pin(&mut self, s: u32, ppn: u32, aux: u32) {
        if ppn == NONE {
            return;
        }
        let csn = self.csn_of(ppn);
        let c = (ppn / self.ppc) as usize;
        self.chunks[c].pins += 1;
        self.objs[s as usize].pins.push(ppn);
        let prev = self.pinned.insert(ppn, Pin { slot: s, aux, csn });
        debug_assert!(prev.is_none(), "page {ppn} pinned twice");
    }

    /// `s` was committed (its onode written, or its virtual tree flushed clean): its
    /// superseded index pages are free to go.
    pub(super) fn unpin_all(&mut self, s: u32) {
        let mut pins = std::mem::take(&mut self.objs[s as usize].pins);
        for &p in &pins {
            // A page GC relocated stays in the list at its old address (and that address may
            // be pinned again by another object since): only the object's current pins count.
            if self.pinned.get(&p).is_some_and(|q| q.slot == s) {
                self.pinned.remove(&p);
                self.chunks[(p / self.ppc) as usize].pins -= 1;
            }
        }
        pins.clear();
        self.objs[s as usize].pins = pins;
    }

    /// Release the pins `s` took before its `mark`-th (those its onode version buffered then
    /// no longer reaches); later ones stay until a later version is programmed.
    pub(super) fn unpin_to(&mut self, s: u32, mark: u32) {
        let mut pins = std::mem::take(&mut self.objs[s as usize].pins);
        let m = (mark as usize).min(pins.len());
        for &p in &pins[..m] {
            if self.pinned.get(&p).is_some_and(|q| q.slot == s) {
                self.pinned.remove(&p);
                self.chunks[(p / self.ppc) as usize].pins -= 1;
            }
        }
        pins.drain(..m);
        self.objs[s as usize].pins = pins;
    }

    pub(super) fn after_tree_op(&mut self, s: u32, root: u32, ch: Change) {
        self.objs[s as usize].root = root;
        if self.yaffs {
            // YAFFS2's tnode tree is RAM only: nothing is ever written.
            for i in 0..self.nodes.newly_dirty.len() {
                let id = self.nodes.newly_dirty[i];
                self.nodes.clean(id);
            }
            self.nodes.newly_dirty.clear();
            self.nodes.freed.clear();
            return;
        }
        if ch.root_changed {
            self.set_onode_dirty(s, true);
        }
        self.drain_dirty();
        self.drain_freed();
    }

    /// Commit the dirty index nodes of the objects in `objs` (leaves first; in the extent tree
    /// each written node dirties its parent, the root its onode; one stage for all)
    /// and queue their dirty onodes. `evict`: a diff-cache eviction, which reads each old
    /// leaf it merges into (§4.4.4).
    pub(super) fn flush_objects(
        &mut self,
        objs: &[u32],
        src_of: impl Fn(&Obj) -> Src,
    ) -> Result<(), OsdError> {
        let evict = self.cache_on;
        let mut buckets = std::mem::take(&mut self.buckets);
        if buckets.is_empty() {
            // re-entered from GC inside an outer flush (commit before erase)
            buckets = vec![Vec::new(); 64];
        }
        let mut cur = std::mem::take(&mut self.bucket_scratch);
        // A GC inside this flush may dirty nodes written already (a moved data page's leaf):
        // flush again until the objects' trees are clean, so the onode committed after it
        // never reaches a stale node (a cut would lose the moved pages: their copies are
        // older than that onode, so recovery does not re-apply them).
        for _round in 0..8 {
            for &s in objs {
                let ob = &mut self.objs[s as usize];
                for id in ob.dirty.drain(..) {
                    let n = &self.nodes.nodes[id as usize];
                    if !n.free && n.dirty > 0 && n.obj == s {
                        buckets[n.level as usize].push(id);
                    }
                }
            }
            for level in 0..buckets.len() {
                if buckets[level].is_empty() {
                    continue;
                }
                std::mem::swap(&mut cur, &mut buckets[level]);
                cur.sort_unstable();
                cur.dedup();
                if evict && level == 0 {
                    for &id in &cur {
                        let n = &self.nodes.nodes[id as usize];
                        if n.ppn != NONE && !self.nodes.whole(id) {
                            let p = n.ppn;
                            self.read(INDEX, p, Src::CacheEvict);
                        }
                    }
                    self.close_stage();
                }
                for &id in &cur {
                    let n = &self.nodes.nodes[id as usize];
                    if n.free || n.dirty == 0 {
                        continue;
                    }
                    let src = src_of(&self.objs[n.obj as usize]);
                    self.write_node(id, src)?;
                    // In the extent tree the parent now holds a stale PA: it is written in this
                    // flush even when it was dirty already (an outer flush that GC interrupted
                    // may own it; the erase after this flush must not orphan the new node).
                    let parent = self.nodes.nodes[id as usize].parent;
                    if !self.o.virtual_tree && parent != NONE {
                        let l = self.nodes.nodes[parent as usize].level as usize;
                        buckets[l].push(parent);
                    }
                    // Parents dirtied by the write go to their level's bucket.
                    for i in 0..self.nodes.newly_dirty.len() {
                        let p = self.nodes.newly_dirty[i];
                        let l = self.nodes.nodes[p as usize].level as usize;
                        buckets[l].push(p);
                    }
                    self.nodes.newly_dirty.clear();
                }
                cur.clear();
            }
            let again = objs.iter().any(|&s| {
                let nodes = &self.nodes;
                self.objs[s as usize].dirty.iter().any(|&id| {
                    let n = &nodes.nodes[id as usize];
                    !n.free && n.dirty > 0 && n.obj == s
                })
            });
            if !again {
                break;
            }
        }
        // A2 flushes an object's index as one operation (l.30): its pages, every level, are
        // programmed together (their addresses are allocated before, so a parent already
        // holds its children's new addresses).
        self.close_stage();
        self.bucket_scratch = cur;
        self.buckets = buckets;
        for &s in objs {
            if self.objs[s as usize].onode_dirty {
                let src = src_of(&self.objs[s as usize]);
                self.set_onode_dirty(s, false);
                self.objs[s as usize].commit_req = true;
                self.pending.push((s, src, false));
            } else if self.o.virtual_tree {
                // The virtual tree's root VA is in the onode and does not change when nodes
                // move (§4.4.3.1): a flush that leaves the tree clean, with no onode change and
                // no buffered data, is a consistent state without an onode write. Without
                // this, the object would stay uncommitted until its next onode write (rare
                // when the size does not change), its superseded index pages pinned from GC
                // all that time (issue 17: GC starved, Fig. 43's virtual tree wrote more).
                let ob = &self.objs[s as usize];
                let nodes = &self.nodes;
                let clean = ob.live
                    && ob.onode_ppn != NONE
                    && ob.tail_page == u64::MAX
                    && !ob.commit_req
                    && ob.obuf_seq == 0
                    && !self.pending.iter().any(|&(p, _, _)| p == s)
                    && ob.dirty.iter().all(|&id| {
                        let n = &nodes.nodes[id as usize];
                        n.free || n.dirty == 0 || n.obj != s
                    });
                if clean {
                    self.objs[s as usize].lcs = self.sn;
                    self.unpin_all(s);
                    self.set_uncommitted(s, false);
                }
            }
        }
        Ok(())
    }

    pub(super) fn write_node(&mut self, id: u32, src: Src) -> Result<(), OsdError> {
        let obj = self.nodes.nodes[id as usize].obj;
        let oid = self.objs[obj as usize].oid;
        let vt = self.o.virtual_tree;
        let mut new_va = false;
        if vt && self.nodes.nodes[id as usize].va == NONE {
            let va = self.alloc_va()?;
            self.nodes.nodes[id as usize].va = va;
            new_va = true;
        }
        let die = self.next_die(INDEX)?;
        let n = &self.nodes.nodes[id as usize];
        if n.free || n.dirty == 0 {
            // GC during next_die cannot clean a node, but be safe.
            return Ok(());
        }
        let aux = if vt { n.va } else { id };
        if self.contents.is_some() {
            let vals = self.node_flash_vals(n, vt);
            self.next_content = Some(PageContent::Index {
                level: n.level,
                keys: n.keys.clone(),
                vals,
            });
        }
        let ppn = self.program(INDEX, die, src, oid, aux, 0, id)?;
        let n = &mut self.nodes.nodes[id as usize];
        let (old, va, parent) = (n.ppn, n.va, n.parent);
        n.ppn = ppn;
        self.nodes.clean(id);
        self.pin(obj, old, aux);
        self.invalidate(old);
        if vt {
            self.pt_set(va, ppn);
            if parent == NONE && new_va {
                self.set_onode_dirty(obj, true);
            } else if new_va && self.nodes.nodes[parent as usize].dirty == 0 {
                // A new node whose parent is clean: a GC move inside this flush cut an
                // extent and split a leaf (issue 30) after the parent was written, so its page
                // holds no VA for this child yet: write it again.
                self.nodes.touch(parent, 1);
            }
        } else if parent != NONE {
            self.nodes.touch(parent, 1);
        } else {
            self.set_onode_dirty(obj, true);
        }
        Ok(())
    }
}
