//! Read-back and the consistency checks: space accounting, valid counts equal reachability,
//! and the DRAM tables equal the truth derived from flash.
//!
//! Source: spec §7 item 6 (the rebuilt global index, VB page table and GC table equal the
//! ground truth; valid counts equal reachability).

use super::*;

/// A byte-range view of one object: its size and, per data page, the write ids of its bytes
/// (record mode). What the crash harness compares.
pub type LogicalObject = (u64, std::collections::BTreeMap<u64, Vec<(u32, u32, u64)>>);

impl Device {
    /// Check the space accounting: each chunk's valid count equals its valid pages, and
    /// every live object's data, index and onode pages are valid (debug aid and test).
    pub fn check(&mut self) -> Result<(), String> {
        for (c, m) in self.chunks.iter().enumerate() {
            let n = match (self.pages[c].as_ref(), self.sparse[c].as_ref()) {
                (Some(p), _) => p.state.iter().filter(|&&s| s == VALID).count(),
                (None, Some(sp)) => sp.valid.iter().map(|w| w.count_ones() as usize).sum(),
                (None, None) => 0,
            };
            if n as u32 != m.valid {
                return Err(format!("chunk {c}: valid {} but {n} valid pages", m.valid));
            }
        }
        for s in 0..self.objs.len() as u32 {
            if !self.objs[s as usize].live {
                continue;
            }
            let ob = &self.objs[s as usize];
            if ob.onode_ppn != NONE && !self.page_valid(ob.onode_ppn) {
                return Err(format!("object {}: onode page invalid", ob.oid));
            }
            if ob.root != NONE && !self.yaffs {
                let mut all = Vec::new();
                self.nodes.all_nodes(ob.root, &mut all);
                for id in all {
                    let p = self.nodes.nodes[id as usize].ppn;
                    if p != NONE && !self.page_valid(p) {
                        return Err(format!("object {}: index node {id} page invalid", ob.oid));
                    }
                }
            }
            self.collect_entries(s);
            for &(k, v) in &self.entries_scratch {
                let (p, _) = leaf_parts(v);
                if !self.page_valid(p) {
                    return Err(format!(
                        "object {}: data page {k} at {p} invalid",
                        self.objs[s as usize].oid
                    ));
                }
            }
        }
        Ok(())
    }

    /// The live objects: (object id, slot), in slot order (the objects [`Device::logical`]
    /// lists).
    pub fn live_objects(&self) -> Vec<(u64, u32)> {
        (0..self.objs.len() as u32)
            .filter(|&s| {
                let ob = &self.objs[s as usize];
                ob.live && self.index.get(&ob.oid) == Some(&s)
            })
            .map(|s| (self.objs[s as usize].oid, s))
            .collect()
    }

    /// The size of the object in slot `s`.
    pub fn object_size(&self, s: u32) -> u64 {
        self.objs[s as usize].size
    }

    /// Whether object `oid` is live.
    pub fn has_object(&self, oid: ObjectId) -> bool {
        self.index
            .get(&oid)
            .is_some_and(|&s| self.objs[s as usize].live)
    }

    /// The object in slot `s` as [`Device::logical`] reads it back, without building it:
    /// `f(page index, write-id segments, length)` for each mapped data page in index order
    /// (the segments as recorded, to be cut to `length`: the mapped valid length, or the tail
    /// buffer's fill for the page the tail buffer holds; `None` for a page not valid on flash
    /// or holding no data). Returns the size.
    pub fn read_back(
        &mut self,
        s: u32,
        mut f: impl FnMut(u64, Option<&[(u32, u32, u64)]>, u32),
    ) -> u64 {
        self.collect_entries(s);
        let entries = std::mem::take(&mut self.entries_scratch);
        let ob = &self.objs[s as usize];
        let (tail, fill, size) = (ob.tail_page, ob.tail_fill, ob.size);
        let tail_segs: &[(u32, u32, u64)] = &ob.tail_segs;
        let mut tail_done = tail == u64::MAX;
        for &(k, v) in &entries {
            if !tail_done && tail <= k {
                f(tail, Some(tail_segs), fill);
                tail_done = true;
                if tail == k {
                    continue;
                }
            }
            let (p, l) = leaf_parts(v);
            match self.content_of(p) {
                Some(PageContent::Data(d)) if self.page_valid(p) => f(k, Some(d), l),
                _ => f(k, None, 0),
            }
        }
        if !tail_done {
            f(tail, Some(tail_segs), fill);
        }
        self.entries_scratch = entries;
        size
    }

    /// A 64-bit digest of [`Device::logical`] (SipHash over the same values, computed without
    /// building it): two devices whose digests are equal read back the same objects, up to a
    /// hash collision (the crash harness's second-cut check; on a difference it builds both
    /// to name it).
    pub fn logical_digest(&mut self) -> u64 {
        use std::hash::Hasher;
        let mut h = std::hash::DefaultHasher::new();
        for (oid, s) in self.live_objects() {
            h.write_u64(oid);
            let mut n = 0u64;
            let size = self.read_back(s, |k, segs, l| {
                n += 1;
                h.write_u64(k);
                let Some(segs) = segs else {
                    h.write_u8(1);
                    return;
                };
                h.write_u8(0);
                for &(a, b, w) in segs.iter().filter(|x| x.0 < l) {
                    h.write_u32(a);
                    h.write_u32(b.min(l));
                    h.write_u64(w);
                }
                h.write_u8(2);
            });
            h.write_u64(size);
            h.write_u64(n);
        }
        h.finish()
    }

    /// Every live object as the device would read it back now: size and write ids per data
    /// page (flash pages through the DRAM mapping, cut to the mapped length, and the tail
    /// buffer). Record mode only (else the pages are empty).
    pub fn logical(&mut self) -> std::collections::BTreeMap<u64, LogicalObject> {
        let mut out = std::collections::BTreeMap::new();
        for s in 0..self.objs.len() as u32 {
            let ob = &self.objs[s as usize];
            if !ob.live || self.index.get(&ob.oid) != Some(&s) {
                continue;
            }
            let (oid, size) = (ob.oid, ob.size);
            self.collect_entries(s);
            let mut pages = std::collections::BTreeMap::new();
            for &(k, v) in &self.entries_scratch {
                let (p, l) = leaf_parts(v);
                let segs = match self.content_of(p) {
                    Some(PageContent::Data(d)) if self.page_valid(p) => clip(d, l),
                    _ => vec![(0, 0, u64::MAX)],
                };
                pages.insert(k, segs);
            }
            let ob = &self.objs[s as usize];
            if ob.tail_page != u64::MAX {
                pages.insert(ob.tail_page, clip(&ob.tail_segs, ob.tail_fill));
            }
            out.insert(oid, (size, pages));
        }
        out
    }

    /// Valid counts equal reachability (spec §2 gap 5, §7 item 6): the valid pages are
    /// exactly those the DRAM metadata reaches — each live object's data pages and index
    /// nodes, the onode pages holding a current onode or tombstone — and each chunk's valid
    /// count is its number of valid pages.
    pub fn check_reachability(&mut self) -> Result<(), String> {
        self.check()?;
        // Per page: 1 + the smallest type the metadata reaches it as (0: unreached). A map
        // over the device instead of a sorted list: one pass, no sort (issue 17).
        let npages = self.pages.len() * self.ppc as usize;
        let mut reach = vec![0u8; npages];
        let mut nreach = 0usize;
        let mut all = Vec::new();
        let mut mark = |ppn: u32, ty: usize, reach: &mut Vec<u8>| {
            if let Some(r) = reach.get_mut(ppn as usize) {
                if *r == 0 {
                    nreach += 1;
                    *r = ty as u8 + 1;
                } else {
                    *r = (*r).min(ty as u8 + 1);
                }
            } else {
                // Off the device: counted, so the totals cannot agree.
                nreach += 1;
            }
        };
        for s in 0..self.objs.len() as u32 {
            let ob = &self.objs[s as usize];
            if ob.onode_ppn != NONE {
                mark(ob.onode_ppn, ONODE, &mut reach);
            }
            if !ob.live {
                continue;
            }
            if ob.root != NONE && !self.yaffs {
                self.nodes.all_nodes(ob.root, &mut all);
                for &id in &all {
                    let p = self.nodes.nodes[id as usize].ppn;
                    if p != NONE {
                        mark(p, INDEX, &mut reach);
                    }
                }
            }
            self.collect_entries(s);
            for &(_, v) in &self.entries_scratch {
                mark(leaf_parts(v).0, DATA, &mut reach);
            }
        }
        let (mut nvalid, mut unreached, mut invalid) = (0usize, Vec::new(), Vec::new());
        for c in 0..self.pages.len() {
            let base = c * self.ppc as usize;
            if self.pages[c].is_none() && self.sparse[c].is_none() {
                for off in 0..self.ppc as usize {
                    if reach[base + off] != 0 && invalid.len() < 3 {
                        invalid.push(((base + off) as u32, reach[base + off] as usize - 1));
                    }
                }
                continue;
            }
            for off in 0..self.ppc as usize {
                let r = reach[base + off];
                let Some(p) = self.page_at(c, off) else {
                    continue;
                };
                if p.state == VALID {
                    nvalid += 1;
                    let ty = if self.yaffs {
                        (p.ptype as usize).min(BACKUP)
                    } else {
                        p.ptype as usize
                    };
                    if r != ty as u8 + 1 {
                        if unreached.len() < 3 {
                            unreached.push(((base + off) as u32, ty));
                        }
                        if r != 0 && invalid.len() < 3 {
                            invalid.push(((base + off) as u32, r as usize - 1));
                        }
                    }
                } else if r != 0 && invalid.len() < 3 {
                    invalid.push(((base + off) as u32, r as usize - 1));
                }
            }
        }
        if !unreached.is_empty() || !invalid.is_empty() || nreach != nvalid {
            return Err(format!(
                "{nvalid} valid pages, {nreach} reachable: valid but unreachable {unreached:?}, \
                 reachable but not valid {invalid:?}"
            ));
        }
        Ok(())
    }

    /// The DRAM tables equal the truth derived from flash by reachability (spec §7 item 6):
    /// the global index maps each live object to a flash onode of that object (whose size and
    /// root are the DRAM ones when nothing of it is uncommitted); the page table holds
    /// exactly the VA → PPN of every written node, each page an index page carrying that VA;
    /// every clean node's page holds its DRAM keys and values (record mode); the byte-level
    /// GC table lists only onode pages holding at least its count of stale onodes.
    pub fn check_tables(&mut self) -> Result<(), String> {
        let vt = self.o.virtual_tree;
        let mut live_index = 0;
        for s in 0..self.objs.len() as u32 {
            let ob = &self.objs[s as usize];
            if !ob.live || ob.oid == u64::MAX {
                continue;
            }
            live_index += 1;
            if self.index.get(&ob.oid) != Some(&s) {
                return Err(format!("object {}: not in the global index", ob.oid));
            }
            if ob.onode_ppn == NONE {
                if !ob.uncommitted && !ob.onode_dirty && ob.obuf_seq == 0 {
                    return Err(format!("object {}: committed without an onode", ob.oid));
                }
                continue;
            }
            if let Some(recs) = self.contents.as_ref().map(|c| c.get(ob.onode_ppn)) {
                let r = match recs {
                    Some(PageContent::Onode(r)) => r.get(ob.onode_idx as usize).copied(),
                    _ => None,
                };
                let Some(r) = r else {
                    return Err(format!("object {}: its onode slot holds nothing", ob.oid));
                };
                if r.oid != ob.oid || r.tomb {
                    return Err(format!("object {}: its onode slot holds {:?}", ob.oid, r));
                }
                if !ob.uncommitted && !ob.onode_dirty && ob.move_from == NONE {
                    let want = self.onode_rec(s, r.csn, false);
                    if (r.size, r.root, r.n_inline) != (want.size, want.root, want.n_inline) {
                        return Err(format!(
                            "object {}: onode on flash {r:?}, in DRAM {want:?}",
                            ob.oid
                        ));
                    }
                }
            }
        }
        if live_index != self.index.len() {
            return Err(format!(
                "global index has {} objects, {live_index} live",
                self.index.len()
            ));
        }
        let mut written = 0u64;
        for id in 0..self.nodes.nodes.len() {
            let n = &self.nodes.nodes[id];
            if n.free || n.ppn == NONE || self.yaffs {
                continue;
            }
            let (c, off) = self.split(n.ppn);
            let p = self
                .page_at(c, off)
                .ok_or("node page in an unopened chunk")?;
            if p.ptype as usize != INDEX || p.state != VALID {
                return Err(format!(
                    "node {id}: page {} is not a valid index page",
                    n.ppn
                ));
            }
            if vt {
                written += 1;
                if self.pt_get(n.va) != n.ppn || p.aux != n.va {
                    return Err(format!(
                        "node {id}: VA {} at {}, page table says {}, OOB VA {}",
                        n.va,
                        n.ppn,
                        self.pt_get(n.va),
                        p.aux
                    ));
                }
            }
            if n.dirty == 0 {
                if let Some(PageContent::Index { level, keys, vals }) = self.content_of(n.ppn) {
                    let dram = self.node_flash_vals(n, vt);
                    // An internal node's first key is only a lower bound (routing never
                    // reads it; the tree refreshes it without rewriting the node).
                    let from = (n.level > 0) as usize;
                    let keys_differ =
                        keys.len() != n.keys.len() || keys.get(from..) != n.keys.get(from..);
                    if *level != n.level || keys_differ || *vals != dram {
                        // A clean parent may hold a child whose new page is not written yet
                        // only in the extent tree's flush; the virtual tree never.
                        let child_dirty = n.level > 0
                            && !vt
                            && n.vals
                                .iter()
                                .any(|&c| self.nodes.nodes[c as usize].dirty > 0);
                        if !child_dirty {
                            return Err(format!(
                                "node {id} (level {}): clean, but its page {} differs \
                                 ({} keys on flash, {} in DRAM; first differing (key, \
                                 value) pair {:?})",
                                n.level,
                                n.ppn,
                                keys.len(),
                                n.keys.len(),
                                keys.iter()
                                    .zip(&n.keys)
                                    .zip(vals.iter().zip(&dram))
                                    .find(|((a, b), (c, d))| a != b || c != d),
                            ));
                        }
                    }
                }
            }
        }
        if vt {
            let mut entries = 0u64;
            for t in self.pt_dir.iter().flatten() {
                entries += t.iter().filter(|&&p| p != NONE).count() as u64;
            }
            if entries != written || self.va_live as u64 != written {
                return Err(format!(
                    "page table: {entries} entries, {} VAs live, {written} written nodes",
                    self.va_live
                ));
            }
        }
        for (&ppn, &(bytes, n)) in &self.gct {
            let r = self.rec_of(ppn);
            if r == NONE || !self.page_valid(ppn) {
                return Err(format!("GC table: page {ppn} is not a valid onode page"));
            }
            let op = &self.opages[r as usize];
            let stale = op.slots.len() as u32 - op.live;
            if n > stale || bytes != n * self.o.onode_bytes {
                return Err(format!(
                    "GC table: page {ppn}: {n} entries ({bytes} B), {stale} stale onodes"
                ));
            }
        }
        Ok(())
    }
}
