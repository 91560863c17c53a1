//! Objects: the DRAM onode and its mapping (inline extents or a B+ tree), lookups, the data
//! path of a WRITE, and the page-size tail buffers of new partial-page data.
//!
//! Source: §4.1.2 and F37 (onode = inode + index root), §4.5.4.1 (partial page writes:
//! read-before-write into existing data, new data staged in a page-size buffer), §4.5.4.2
//! and A2 (onode → index → data).
//!
//! Readings (\[N\], spec §1): an object of at most `osd.inline_pages` data pages is mapped
//! inline in its onode; beyond that it has a B+ tree (see [`OsdConfig::inline_pages`] for
//! why the bound counts pages, not extents);
//! data pages aligned to the object offset; one tail buffer per object, at most
//! `osd.tail_buffers` in all (the oldest is flushed to make room).

use super::*;

/// What [`Device::map_get_near`] keeps between the pages of one object it is asked for.
#[derive(Default)]
pub(super) struct MapCursor {
    ext: Option<(u64, u64)>,
    leaf: Option<crate::osd::tree::LeafCursor>,
}

impl Device {
    /// Objects with state newer than their last commit (what IC_OBJ would list at a power
    /// loss), and chunks holding superseded index pages an uncommitted object's last
    /// consistent state may still reach (pinned: moved by GC under the virtual tree, not
    /// taken under the extent tree). Without
    /// the diff cache both are 0 between commands. Tests and diagnostics.
    pub fn uncommitted(&self) -> (u64, usize) {
        let pinned = self.chunks.iter().filter(|m| m.pins > 0).count();
        (self.uncommitted_objs, pinned)
    }

    /// Data bytes of `oid` mapped to flash: (page index, PPN, valid length) per page.
    pub fn data_map(&mut self, oid: ObjectId) -> Vec<(u64, u32, u32)> {
        let Some(&s) = self.index.get(&oid) else {
            return Vec::new();
        };
        self.collect_entries(s);
        self.entries_scratch
            .iter()
            .map(|&(k, v)| {
                let (p, l) = leaf_parts(v);
                (k, p, l)
            })
            .collect()
    }

    /// The leaf entries of `oid` as the index holds them (inline extents or the B+ tree's
    /// leaves), in key order: (first page index, PPN of the first page, bytes); a multi-page
    /// extent's pages are numbered across the dies of a stripe ([`Stripes`]). Tests and
    /// diagnostics.
    pub fn extents(&self, oid: ObjectId) -> Vec<(u64, u32, u32)> {
        let Some(&s) = self.index.get(&oid) else {
            return Vec::new();
        };
        let ob = &self.objs[s as usize];
        let mut e = Vec::new();
        if ob.root == NONE {
            e.extend_from_slice(&ob.inline[..ob.n_inline as usize]);
            e.sort_unstable_by_key(|x| x.0);
        } else {
            self.nodes.entries(ob.root, &mut e);
        }
        e.into_iter()
            .map(|(k, v)| {
                let (a, l) = leaf_parts(v);
                (k, self.stripes.ppn(a).unwrap_or(NONE), l)
            })
            .collect()
    }

    /// Set or clear an object's `uncommitted` flag, keeping [`Device::uncommitted_objs`] and
    /// [`Device::uncommitted_q`] up to date.
    pub(super) fn set_uncommitted(&mut self, s: u32, u: bool) {
        let ob = &mut self.objs[s as usize];
        if ob.uncommitted == u {
            return;
        }
        ob.uncommitted = u;
        if u {
            ob.unc_seq = ob.unc_seq.wrapping_add(1);
            let seq = ob.unc_seq;
            self.uncommitted_objs += 1;
            self.uncommitted_q.push_back((s, seq));
            if self.uncommitted_q.len() as u64 > 4 * self.uncommitted_objs + 64 {
                let objs = &self.objs;
                self.uncommitted_q.retain(|&(t, q)| {
                    let ob = &objs[t as usize];
                    ob.uncommitted && ob.unc_seq == q
                });
            }
        } else {
            self.uncommitted_objs -= 1;
        }
    }

    pub(super) fn set_onode_dirty(&mut self, s: u32, d: bool) {
        if d {
            self.set_uncommitted(s, true);
        }
        let ob = &mut self.objs[s as usize];
        if ob.onode_dirty != d {
            ob.onode_dirty = d;
            if d {
                self.dirty_onodes += 1;
            } else {
                self.dirty_onodes -= 1;
            }
        }
    }

    /// The extent (inline or leaf entry) covering data page `key` of `s`: its first page
    /// index and leaf value. `leaf`: as in [`Nodes::get_extent_near`].
    fn map_extent(
        &self,
        s: u32,
        key: u64,
        leaf: &mut Option<crate::osd::tree::LeafCursor>,
    ) -> Option<(u64, u64)> {
        let ob = &self.objs[s as usize];
        let pb = self.page as u64;
        if ob.root == NONE {
            let n = ob.n_inline as usize;
            ob.inline[..n]
                .iter()
                .find(|e| key >= e.0 && key < e.0 + ext_pages(leaf_parts(e.1).1, pb))
                .copied()
        } else {
            self.nodes.get_extent_near(ob.root, key, leaf)
        }
    }

    /// The leaf value (PA, valid bytes) of data page `key` of `s`.
    pub(super) fn map_get(&self, s: u32, key: u64) -> Option<u64> {
        self.map_get_near(s, key, &mut MapCursor::default())
    }

    /// [`Device::map_get`] for pages looked up in ascending order while the mapping of `s`
    /// does not change: `near` keeps the extent found last, and a page it covers needs no
    /// tree descent and leaf search (a multi-page READ does one per extent, not per page),
    /// and the leaf it was in ([`Nodes::get_extent_near`]).
    pub(super) fn map_get_near(&self, s: u32, key: u64, near: &mut MapCursor) -> Option<u64> {
        let pb = self.page as u64;
        let covers =
            |&(first, v): &(u64, u64)| key >= first && key - first < ext_pages(leaf_parts(v).1, pb);
        if !near.ext.as_ref().is_some_and(covers) {
            near.ext = self.map_extent(s, key, &mut near.leaf);
        }
        near.ext
            .map(|(first, v)| ext_page(v, key - first, pb, &self.stripes))
            // (A page an extent no longer resolves to is never mapped in a consistent device.)
            .filter(|&v| leaf_parts(v).0 != NONE)
    }

    /// The inline extents of `s` in the scratch lists, sorted.
    fn inline_to_scratch(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        let mut e = ob.inline;
        let n = ob.n_inline as usize;
        e[..n].sort_unstable_by_key(|x| x.0);
        self.ext_keys.clear();
        self.ext_vals.clear();
        for &(k, v) in &e[..n] {
            self.ext_keys.push(k);
            self.ext_vals.push(v);
        }
    }

    /// The scratch extent lists become the mapping of `s` (an object without a tree): inline
    /// while they map at most `osd.inline_pages` pages (a small object, §4.6.3.2), else a B+
    /// tree (YAFFS2-like: always its RAM tree).
    fn scratch_to_mapping(&mut self, s: u32) {
        if !self.yaffs {
            self.set_onode_dirty(s, true);
        }
        if !self.yaffs && self.fits_inline(&self.ext_vals) {
            let ob = &mut self.objs[s as usize];
            ob.n_inline = self.ext_keys.len() as u8;
            for (i, (&key, &v)) in self.ext_keys.iter().zip(&self.ext_vals).enumerate() {
                ob.inline[i] = (key, v);
            }
            return;
        }
        // Beyond K inline extents (or YAFFS2's RAM tnodes): a B+ tree.
        let mut root = self.nodes.alloc(s, 0);
        let mut ch = Change::default();
        for i in 0..self.ext_keys.len() {
            let (key, v) = (self.ext_keys[i], self.ext_vals[i]);
            self.nodes.upsert(&mut root, key, v, &mut ch);
        }
        let ob = &mut self.objs[s as usize];
        ob.n_inline = 0;
        ob.root = root;
        self.after_tree_op(s, root, ch);
    }

    /// Whether extents with leaf values `vals` may stay inline in the onode: they map at most
    /// `osd.inline_pages` data pages in all (so at most that many extents: the onode has room
    /// for two).
    pub(super) fn fits_inline(&self, vals: &[u64]) -> bool {
        let k = self.o.inline_pages as u64;
        let pb = self.page as u64;
        vals.len() as u64 <= k
            && vals
                .iter()
                .map(|&v| ext_pages(leaf_parts(v).1, pb))
                .sum::<u64>()
                <= k
    }

    /// Map page `key` of `s` to `val` (one page); returns the old value. Marks what it
    /// changed dirty. Leaf entries and inline extents are multi-page extents ([`ext_set`]).
    pub(super) fn map_set(&mut self, s: u32, key: u64, val: u64, _host: bool) -> Option<u64> {
        let pb = self.page as u64;
        let old = if self.objs[s as usize].root == NONE {
            self.inline_to_scratch(s);
            let (keys, vals) = (&mut self.ext_keys, &mut self.ext_vals);
            let (old, _) = crate::osd::tree::ext_set(keys, vals, key, val, pb, &self.stripes);
            self.scratch_to_mapping(s);
            old
        } else {
            let mut root = self.objs[s as usize].root;
            let mut ch = Change::default();
            let old = self
                .nodes
                .set_page(&mut root, key, val, &self.stripes, &mut ch);
            self.after_tree_op(s, root, ch);
            old
        };
        if old.is_none() {
            self.mapped += 1;
        }
        old
    }

    /// Unmap page `key` of `s`; returns its old value.
    pub(super) fn map_remove(&mut self, s: u32, key: u64) -> Option<u64> {
        let pb = self.page as u64;
        let old = if self.objs[s as usize].root == NONE {
            self.inline_to_scratch(s);
            let (keys, vals) = (&mut self.ext_keys, &mut self.ext_vals);
            let (old, _) = crate::osd::tree::ext_remove(keys, vals, key, pb, &self.stripes)?;
            self.scratch_to_mapping(s);
            Some(old)
        } else {
            let mut root = self.objs[s as usize].root;
            let mut ch = Change::default();
            let old = self
                .nodes
                .remove_page(&mut root, key, &self.stripes, &mut ch);
            self.after_tree_op(s, root, ch);
            old
        };
        if old.is_some() {
            self.mapped -= 1;
        }
        old
    }

    /// Every mapped page of `s` in page order, into `entries_scratch` as (page index, leaf
    /// value of the page): its extents expanded.
    pub(super) fn collect_entries(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        let mut ext = std::mem::take(&mut self.entries_scratch);
        if ob.root == NONE {
            ext.clear();
            ext.extend_from_slice(&ob.inline[..ob.n_inline as usize]);
            ext.sort_unstable_by_key(|e| e.0);
        } else {
            self.nodes.entries(ob.root, &mut ext);
        }
        let pb = self.page as u64;
        // Stored addresses → PPNs, one entry per page (in place when every entry is one page
        // stored by its PPN).
        if ext.iter().all(|&(_, v)| {
            let (a, len) = leaf_parts(v);
            len as u64 <= pb && a & STRIPED == 0
        }) {
            self.entries_scratch = ext;
            return;
        }
        let mut out = Vec::with_capacity(ext.len());
        for &(k, v) in &ext {
            let n = ext_pages(leaf_parts(v).1, pb);
            for j in 0..n {
                out.push((k + j, ext_page(v, j, pb, &self.stripes)));
            }
        }
        self.entries_scratch = out;
    }

    pub(super) fn touch_obj(&mut self, s: u32, host: bool) {
        let ob = &mut self.objs[s as usize];
        if !ob.touched {
            ob.touched = true;
            self.touched.push(s);
        }
        ob.touched_host |= host;
    }

    /// Read the onode unless DRAM holds it (dirty in the diff cache, or read already in
    /// this command).
    pub(super) fn need_onode(&mut self, s: u32) {
        let ob = &self.objs[s as usize];
        if ob.onode_read || ob.onode_ppn == NONE || (self.cache_on && ob.onode_dirty) {
            return;
        }
        let p = ob.onode_ppn;
        self.objs[s as usize].onode_read = true;
        self.read(ONODE, p, Src::Host);
        self.close_stage();
    }

    /// Walk the tree of `s` to the leaf of `key`, noting the index pages that must be read
    /// from flash (root first). `update`: the walk is for an entry update (a diff-cache
    /// entry needs no leaf read). Returns the end of the key range that takes the same path
    /// ([`Nodes::find_leaf_bound`]; `u64::MAX` without a tree): until the tree changes,
    /// walking again for a key in `key..end` would change nothing (its reads are the ones
    /// noted now, which [`Device::emit_path_reads`] deduplicates, and its upper nodes are
    /// in `clean_cached` now), so callers skip it (saves a descent per page of a multi-page
    /// command).
    pub(super) fn lookup(&mut self, s: u32, key: u64, update: bool) -> u64 {
        let root = self.objs[s as usize].root;
        if root == NONE || self.yaffs {
            return u64::MAX;
        }
        self.index_used_cmd = true;
        let mut path = std::mem::take(&mut self.path);
        let (_, end) = self.nodes.find_leaf_bound(root, key, &mut path);
        for &id in &path {
            let n = &self.nodes.nodes[id as usize];
            if n.ppn == NONE {
                continue;
            }
            let cached = if !self.cache_on {
                false
            } else if n.level > 0 {
                n.dirty > 0 || self.objs[s as usize].clean_cached.contains(&id)
            } else {
                self.nodes.whole(id) || (update && n.dirty > 0)
            };
            if cached {
                continue;
            }
            self.path_reads.push((n.level, n.ppn));
            if self.cache_on && n.level > 0 {
                self.objs[s as usize].clean_cached.push(id);
                self.clean_pages += 1;
            }
        }
        self.path = path;
        end
    }

    pub(super) fn emit_path_reads(&mut self) {
        if self.path_reads.is_empty() {
            return;
        }
        let mut v = std::mem::take(&mut self.path_reads);
        v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.dedup();
        let mut level = v[0].0;
        for &(l, ppn) in &v {
            if l != level {
                self.close_stage();
                level = l;
            }
            self.read(INDEX, ppn, Src::Host);
            self.index_reads_cmd += 1;
        }
        self.close_stage();
        v.clear();
        self.path_reads = v;
    }

    pub(super) fn program_data(
        &mut self,
        s: u32,
        i: u64,
        len: u32,
        content: Option<PageContent>,
    ) -> Result<(), OsdError> {
        let oid = self.objs[s as usize].oid;
        let die = self.next_die(DATA)?;
        self.next_content = content;
        self.next_csn = 0;
        self.program_data_on(s, i, len, die, oid)
    }

    /// Data content for page `i` of `s`: the old page's with `[a, b)` written.
    pub(super) fn data_content(&self, s: u32, i: u64, a: u32, b: u32) -> Option<PageContent> {
        self.contents.as_ref()?;
        let mut segs = match self.map_get(s, i) {
            Some(v) => match self.content_of(leaf_parts(v).0) {
                // Bytes past the mapped length were cut by a truncate: they read as zeros.
                Some(PageContent::Data(d)) => clip(d, leaf_parts(v).1),
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        overlay(&mut segs, a, b, self.write_id);
        Some(PageContent::Data(segs))
    }

    pub(super) fn program_data_on(
        &mut self,
        s: u32,
        i: u64,
        len: u32,
        die: u32,
        oid: u64,
    ) -> Result<(), OsdError> {
        let ppn = self.program(DATA, die, Src::Host, oid, i as u32, len, s)?;
        if let Some(old) = self.map_set(s, i, leaf_val(ppn, len), true) {
            self.invalidate(leaf_parts(old).0);
        }
        self.touch_obj(s, true);
        Ok(())
    }

    pub(super) fn flush_tail(&mut self, s: u32) -> Result<(), OsdError> {
        let ob = &self.objs[s as usize];
        if ob.tail_page == u64::MAX {
            return Ok(());
        }
        let (page, fill, oid) = (ob.tail_page, ob.tail_fill, ob.oid);
        // The buffer stays in DRAM until its page is programmed (a power cut in between
        // leaves it to the capacitor flush).
        let die = self.next_die(DATA)?;
        let segs = self.objs[s as usize].tail_segs.clone();
        self.next_content = self.contents.is_some().then_some(PageContent::Data(segs));
        self.next_csn = 0;
        self.program_data_on(s, page, fill, die, oid)?;
        let ob = &mut self.objs[s as usize];
        ob.tail_page = u64::MAX;
        ob.tail_fill = 0;
        ob.tail_segs.clear();
        self.tails_used -= 1;
        self.counters.tail_flushes += 1;
        Ok(())
    }

    /// Drop `s`'s tail buffer, if it has one, without writing it (its page was written whole,
    /// or the object is gone).
    pub(super) fn drop_tail(&mut self, s: u32) {
        let ob = &mut self.objs[s as usize];
        if ob.tail_page != u64::MAX {
            ob.tail_page = u64::MAX;
            ob.tail_segs.clear();
            self.tails_used -= 1;
        }
    }

    pub(super) fn start_tail(
        &mut self,
        s: u32,
        page: u64,
        start: u32,
        fill: u32,
    ) -> Result<(), OsdError> {
        self.flush_tail(s)?;
        while self.tails_used >= self.o.tail_buffers {
            let Some((t, p)) = self.tails.pop_front() else {
                break;
            };
            if self.objs[t as usize].tail_page == p {
                if self.objs[t as usize].live {
                    self.flush_tail(t)?;
                } else {
                    self.drop_tail(t);
                }
            }
        }
        let rec = self.contents.is_some();
        let wid = self.write_id;
        let ob = &mut self.objs[s as usize];
        ob.tail_page = page;
        ob.tail_fill = fill;
        ob.tail_segs.clear();
        if rec {
            ob.tail_segs.push((start, fill, wid));
        }
        self.set_uncommitted(s, true);
        self.tails_used += 1;
        self.tails.push_back((s, page));
        if self.tails.len() > 4 * self.o.tail_buffers as usize {
            // Drop stale queue entries (flushed tails) so the queue stays bounded.
            let objs = &self.objs;
            self.tails.retain(|&(t, p)| objs[t as usize].tail_page == p);
        }
        self.dram.tail_buffer_bytes = self
            .dram
            .tail_buffer_bytes
            .max(self.tails_used as u64 * self.page as u64);
        Ok(())
    }
}
