//! The per-object index: an extent B+ tree (μ-FTL \[21\], §4.1.2), one node = one flash page.
//!
//! All objects' nodes live in one arena ([`Nodes`]); a node id is an index into it and freed
//! nodes are reused (their vectors keep their capacity, so a steady state allocates nothing).
//! Leaf entries are extents: the first data-page index of the object → ⟨PA of its first page,
//! length in bytes⟩ (spec §1: data pages are aligned to the object offset, so an entry's
//! offset is its page index times the page size; every page of an extent but the last is
//! whole). Where page `j` of an extent lies is the device's numbering ([`Geo`]: across the
//! dies of a stripe, issue 30). Internal entries map the smallest key below a child to the
//! child's node id. Pages are set and unmapped one at a time ([`Nodes::set_page`],
//! [`Nodes::remove_page`], [`ext_set`]): the extent covering the page is cut around it, and
//! a page that continues its neighbour's extent (next page index at the next address) joins
//! it. An extent never reaches past the key range its leaf routes (joins happen within a
//! leaf; a split cuts between entries), so the leaf that routes a page holds the extent
//! covering it.
//!
//! The tree does not write pages: it keeps a *dirty count* per node (entries changed since
//! the node was last written) and the list of dirty nodes of each object, and the device
//! decides when to write them (at the end of a command under A2, or at diff-cache eviction).
//! Splits mark both halves and the parent; merges mark the survivor and the parent, and free
//! the absorbed node (its page becomes invalid). Insertion splits a full node in half;
//! deletion merges a node that falls under half full into its left (else right) sibling when
//! both fit in one node, and collapses a root left with one child. A node under half full
//! whose siblings are too full to merge stays as it is (no redistribution, \[N\]: the thesis's
//! Table 13 counts only splits and merges).

use crate::exec::NONE;

/// One node.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// 0 = leaf.
    pub level: u8,
    /// Leaf: data-page index; internal: smallest key under the child.
    pub keys: Vec<u64>,
    /// Leaf: PA | (length << 32); internal: child node id.
    pub vals: Vec<u64>,
    /// Parent node id, or [`NONE`] for the root.
    pub parent: u32,
    /// Where the node is on flash ([`NONE`]: not yet written).
    pub ppn: u32,
    /// Virtual address (virtual tree), or [`NONE`].
    pub va: u32,
    /// Entries changed since the node was last written (0 = clean).
    pub dirty: u32,
    /// Owning object slot.
    pub obj: u32,
    /// Free (in the arena's free list).
    pub free: bool,
}

/// Where [`Nodes::get_extent_near`] found the last key.
#[derive(Clone, Copy, Debug)]
pub struct LeafCursor {
    leaf: u32,
    /// End of the key range routed to `leaf`.
    end: u64,
    /// Entries of `leaf` at or below the last key.
    above: usize,
}

/// What a structural change did, for the device's bookkeeping.
#[derive(Debug, Default, Clone, Copy)]
pub struct Change {
    /// Nodes split (the thesis's `l`).
    pub splits: u32,
    /// Nodes merged away.
    pub merges: u32,
    /// The root changed (new root on a split to the top, or a collapse).
    pub root_changed: bool,
}

/// The arena of every object's nodes.
#[derive(Clone, Debug, Default)]
pub struct Nodes {
    pub nodes: Vec<Node>,
    free: Vec<u32>,
    /// Leaf capacity (entries).
    pub leaf_cap: usize,
    /// Internal-node capacity (entries).
    pub internal_cap: usize,
    /// Nodes freed by the last operations, with the page and VA they held (the device
    /// invalidates the pages and frees the VAs); drained by the device.
    pub freed: Vec<(u32, u32, u32)>,
    /// Nodes that became dirty (0 → >0) since the device last drained this list.
    pub newly_dirty: Vec<u32>,
    /// Live nodes.
    pub live: u64,
    /// Diff-cache accounting of dirty nodes (§4.4.4, spec \[N\]): a node with `d` changed
    /// entries costs `d × entry_bytes`, or a whole page beyond `whole_after` entries.
    pub entry_bytes: u64,
    pub page_bytes: u64,
    pub whole_after: u32,
    /// Sum of that cost over every dirty node, bytes.
    pub dirty_bytes: u64,
}

/// Pack a leaf value.
#[inline]
pub fn leaf_val(ppn: u32, len: u32) -> u64 {
    ppn as u64 | ((len as u64) << 32)
}

/// Unpack a leaf value into (PA, length).
#[inline]
pub fn leaf_parts(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

/// How the device numbers the pages of a multi-page extent. A leaf entry stores the
/// *address* of its first page (the device's numbering: a stripe address across dies, or a
/// PPN, [`crate::osd::device::Stripes`]); the values this module takes and returns per page
/// are PPNs.
pub trait Geo {
    /// The address a leaf entry stores for the page at `ppn`.
    fn addr(&self, ppn: u32) -> u32;
    /// The address `j` pages after address `a` (`None`: past the end of its numbering).
    fn next(&self, a: u32, j: u64) -> Option<u32>;
    /// The PPN at address `a` (`None`: no page there any more).
    fn ppn(&self, a: u32) -> Option<u32>;
}

/// Pages of an extent of `len` bytes (a leaf value's length; at least one page).
#[inline]
pub fn ext_pages(len: u32, page: u64) -> u64 {
    (len as u64).div_ceil(page).max(1)
}

/// Valid bytes of page `j` of an extent of `len` bytes and `n` pages: whole pages but the
/// last.
#[inline]
pub fn ext_page_len(len: u32, j: u64, n: u64, page: u64) -> u32 {
    if j + 1 < n {
        page as u32
    } else {
        (len as u64 - (n - 1) * page) as u32
    }
}

/// The per-page leaf value (PPN, valid bytes) of page `j` of the extent value `v`.
#[inline]
pub fn ext_page<G: Geo>(v: u64, j: u64, page: u64, geo: &G) -> u64 {
    let (a, len) = leaf_parts(v);
    let n = ext_pages(len, page);
    let p = geo.next(a, j).and_then(|x| geo.ppn(x)).unwrap_or(NONE);
    leaf_val(p, ext_page_len(len, j, n, page))
}

/// The extent covering page `k` in the sorted extent list `keys`/`vals`: its first page
/// index and its leaf value.
#[inline]
pub fn ext_find(keys: &[u64], vals: &[u64], k: u64, page: u64) -> Option<(u64, u64)> {
    let i = match keys.binary_search(&k) {
        Ok(i) => i,
        Err(0) => return None,
        Err(i) => i - 1,
    };
    (k - keys[i] < ext_pages(leaf_parts(vals[i]).1, page)).then_some((keys[i], vals[i]))
}

/// Page `k` in the sorted extent list `keys`/`vals`: its leaf value (PPN, valid bytes).
#[inline]
pub fn ext_get<G: Geo>(keys: &[u64], vals: &[u64], k: u64, page: u64, geo: &G) -> Option<u64> {
    ext_find(keys, vals, k, page).map(|(first, v)| ext_page(v, k - first, page, geo))
}

/// Map page `k` to `new` (a one-page leaf value: PPN, valid bytes) in the sorted extent list
/// `keys`/`vals`: the extent covering `k` is cut around it (up to three entries), and the new
/// page joins the extent ending just before it, or the one starting just after it, when its
/// address is where that extent continues (`geo`) and the pages between are whole. Returns
/// the old value of page `k` (PPN, valid bytes) and the entries written (the diff cache's
/// count).
pub fn ext_set<G: Geo>(
    keys: &mut Vec<u64>,
    vals: &mut Vec<u64>,
    k: u64,
    new: u64,
    page: u64,
    geo: &G,
) -> (Option<u64>, u32) {
    let (nppn, nlen) = leaf_parts(new);
    let na = geo.addr(nppn);
    let new = leaf_val(na, nlen);
    let mut changed = 0u32;
    let mut old = None;
    let at = match keys.binary_search(&k) {
        Ok(i) => Some(i),
        Err(0) => None,
        Err(i) => Some(i - 1),
    };
    let covering = at.filter(|&i| k < keys[i] + ext_pages(leaf_parts(vals[i]).1, page));
    let pos = if let Some(i) = covering {
        let (sa, slen) = leaf_parts(vals[i]);
        let n = ext_pages(slen, page);
        let j = k - keys[i];
        old = Some(ext_page(vals[i], j, page, geo));
        let right = (j + 1 < n).then(|| {
            leaf_val(
                geo.next(sa, j + 1).unwrap_or(NONE),
                (slen as u64 - (j + 1) * page) as u32,
            )
        });
        let pos = if j > 0 {
            vals[i] = leaf_val(sa, (j * page) as u32);
            keys.insert(i + 1, k);
            vals.insert(i + 1, new);
            changed += 2;
            i + 1
        } else {
            vals[i] = new;
            changed += 1;
            i
        };
        if let Some(r) = right {
            keys.insert(pos + 1, k + 1);
            vals.insert(pos + 1, r);
            changed += 1;
        }
        pos
    } else {
        let pos = at.map_or(0, |i| i + 1);
        keys.insert(pos, k);
        vals.insert(pos, new);
        changed += 1;
        pos
    };
    // Join the extent starting right after it.
    if nlen as u64 == page && pos + 1 < keys.len() && keys[pos + 1] == k + 1 {
        let (ra, rlen) = leaf_parts(vals[pos + 1]);
        if geo.next(na, 1) == Some(ra) && rlen as u64 + page <= u32::MAX as u64 {
            vals[pos] = leaf_val(na, (page + rlen as u64) as u32);
            keys.remove(pos + 1);
            vals.remove(pos + 1);
            changed += 1;
        }
    }
    // Join the extent ending right before it.
    if pos > 0 {
        let (la, llen) = leaf_parts(vals[pos - 1]);
        let ln = ext_pages(llen, page);
        if llen > 0 && (llen as u64).is_multiple_of(page) && keys[pos - 1] + ln == k {
            let (ca, clen) = leaf_parts(vals[pos]);
            if geo.next(la, ln) == Some(ca) && llen as u64 + clen as u64 <= u32::MAX as u64 {
                vals[pos - 1] = leaf_val(la, llen + clen);
                keys.remove(pos);
                vals.remove(pos);
                changed += 1;
            }
        }
    }
    (old, changed)
}

/// Unmap page `k` in the sorted extent list: the extent covering it is cut (up to two
/// entries). Returns the old value of page `k` (PPN, valid bytes) and the entries written.
pub fn ext_remove<G: Geo>(
    keys: &mut Vec<u64>,
    vals: &mut Vec<u64>,
    k: u64,
    page: u64,
    geo: &G,
) -> Option<(u64, u32)> {
    let i = match keys.binary_search(&k) {
        Ok(i) => i,
        Err(0) => return None,
        Err(i) => i - 1,
    };
    let (sa, slen) = leaf_parts(vals[i]);
    let n = ext_pages(slen, page);
    let j = k - keys[i];
    if j >= n {
        return None;
    }
    let old = ext_page(vals[i], j, page, geo);
    let right = (j + 1 < n).then(|| {
        leaf_val(
            geo.next(sa, j + 1).unwrap_or(NONE),
            (slen as u64 - (j + 1) * page) as u32,
        )
    });
    let changed = match (j > 0, right) {
        (false, None) => {
            keys.remove(i);
            vals.remove(i);
            1
        }
        (false, Some(r)) => {
            keys[i] = k + 1;
            vals[i] = r;
            1
        }
        (true, r) => {
            vals[i] = leaf_val(sa, (j * page) as u32);
            if let Some(r) = r {
                keys.insert(i + 1, k + 1);
                vals.insert(i + 1, r);
                2
            } else {
                1
            }
        }
    };
    Some((old, changed))
}

impl Nodes {
    /// An arena with the given node capacities.
    pub fn new(leaf_cap: usize, internal_cap: usize) -> Nodes {
        Nodes {
            leaf_cap,
            internal_cap,
            entry_bytes: 12,
            page_bytes: 2048,
            whole_after: 16,
            ..Default::default()
        }
    }

    /// DRAM cost of a node with `d` changed entries.
    #[inline]
    pub fn cost(&self, d: u32) -> u64 {
        if d == 0 {
            0
        } else if d > self.whole_after {
            self.page_bytes
        } else {
            (d as u64 * self.entry_bytes).min(self.page_bytes)
        }
    }

    /// Whether node `id` is held whole in the diff cache (more changed entries than the
    /// threshold).
    #[inline]
    pub fn whole(&self, id: u32) -> bool {
        self.nodes[id as usize].dirty > self.whole_after
    }

    /// The node was written: clean.
    #[inline]
    pub fn clean(&mut self, id: u32) {
        let d = self.nodes[id as usize].dirty;
        self.dirty_bytes -= self.cost(d);
        self.nodes[id as usize].dirty = 0;
    }

    fn cap(&self, level: u8) -> usize {
        if level == 0 {
            self.leaf_cap
        } else {
            self.internal_cap
        }
    }

    /// A new empty node of `obj` at `level`.
    pub fn alloc(&mut self, obj: u32, level: u8) -> u32 {
        self.live += 1;
        let n = Node {
            level,
            keys: Vec::new(),
            vals: Vec::new(),
            parent: NONE,
            ppn: NONE,
            va: NONE,
            dirty: 0,
            obj,
            free: false,
        };
        if let Some(id) = self.free.pop() {
            let slot = &mut self.nodes[id as usize];
            let (mut k, mut v) = (
                std::mem::take(&mut slot.keys),
                std::mem::take(&mut slot.vals),
            );
            k.clear();
            v.clear();
            *slot = Node {
                keys: k,
                vals: v,
                ..n
            };
            id
        } else {
            self.nodes.push(n);
            (self.nodes.len() - 1) as u32
        }
    }

    /// Free node `id` (records its page and VA in [`Nodes::freed`]).
    pub fn release(&mut self, id: u32) {
        self.clean(id);
        let n = &mut self.nodes[id as usize];
        debug_assert!(!n.free);
        self.freed.push((id, n.ppn, n.va));
        n.free = true;
        n.dirty = 0;
        n.ppn = NONE;
        n.va = NONE;
        self.free.push(id);
        self.live -= 1;
    }

    /// Mark `id` dirty by `by` entries.
    #[inline]
    pub fn touch(&mut self, id: u32, by: u32) {
        let d = self.nodes[id as usize].dirty;
        if d == 0 {
            self.newly_dirty.push(id);
        }
        let nd = d + by.max(1);
        self.dirty_bytes = self.dirty_bytes + self.cost(nd) - self.cost(d);
        self.nodes[id as usize].dirty = nd;
    }

    /// The child of internal node `id` that covers `key`.
    #[inline]
    fn child_for(&self, id: u32, key: u64) -> (usize, u32) {
        let n = &self.nodes[id as usize];
        let i = match n.keys.binary_search(&key) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => i - 1,
        };
        (i, n.vals[i] as u32)
    }

    /// The leaf that routes `key` under `root`.
    #[inline]
    fn leaf_for(&self, root: u32, key: u64) -> u32 {
        let mut id = root;
        while self.nodes[id as usize].level > 0 {
            id = self.child_for(id, key).1;
        }
        id
    }

    /// The leaf that covers `key` under `root`, and the path (root first) into `path`.
    pub fn find_leaf(&self, root: u32, key: u64, path: &mut Vec<u32>) -> u32 {
        path.clear();
        let mut id = root;
        loop {
            path.push(id);
            if self.nodes[id as usize].level == 0 {
                return id;
            }
            id = self.child_for(id, key).1;
        }
    }

    /// [`Nodes::find_leaf`], also returning the end of the key range routed to that leaf:
    /// every key from `key` up to (not including) the bound takes the same path (the
    /// smallest separator right of the path; `u64::MAX` when there is none).
    pub fn find_leaf_bound(&self, root: u32, key: u64, path: &mut Vec<u32>) -> (u32, u64) {
        path.clear();
        let mut id = root;
        let mut bound = u64::MAX;
        loop {
            path.push(id);
            let n = &self.nodes[id as usize];
            if n.level == 0 {
                return (id, bound);
            }
            let (i, child) = self.child_for(id, key);
            if let Some(&next) = n.keys.get(i + 1) {
                bound = bound.min(next);
            }
            id = child;
        }
    }

    /// Height (levels) of the tree under `root`.
    pub fn height(&self, root: u32) -> u32 {
        self.nodes[root as usize].level as u32 + 1
    }

    /// The value of `key`, if mapped.
    pub fn get(&self, root: u32, key: u64) -> Option<u64> {
        let mut id = root;
        loop {
            let n = &self.nodes[id as usize];
            if n.level == 0 {
                return n.keys.binary_search(&key).ok().map(|i| n.vals[i]);
            }
            id = self.child_for(id, key).1;
        }
    }

    /// The leaf value (PA, valid bytes) of data page `key` (leaf entries are extents).
    pub fn get_page<G: Geo>(&self, root: u32, key: u64, geo: &G) -> Option<u64> {
        let mut id = root;
        loop {
            let n = &self.nodes[id as usize];
            if n.level == 0 {
                return ext_get(&n.keys, &n.vals, key, self.page_bytes, geo);
            }
            id = self.child_for(id, key).1;
        }
    }

    /// The extent covering data page `key`: its first page index and leaf value (PA of its
    /// first page, bytes). `cur` (start with `None`) carries over to the next call for a
    /// larger key while the tree does not change: it remembers the leaf of the last key, the end of the key range routed to
    /// it, and how far into it the keys went, so that a key in that range needs neither a
    /// descent nor a binary search of the leaf, only a step past the entries below it (a
    /// multi-page READ over short extents, as YAFFS2's log makes them, searched the tree
    /// for every page).
    pub fn get_extent_near(
        &self,
        root: u32,
        key: u64,
        cur: &mut Option<LeafCursor>,
    ) -> Option<(u64, u64)> {
        let c = match cur {
            Some(c) if key < c.end => c,
            _ => {
                let mut id = root;
                let mut end = u64::MAX;
                while self.nodes[id as usize].level > 0 {
                    let (i, child) = self.child_for(id, key);
                    if let Some(&next) = self.nodes[id as usize].keys.get(i + 1) {
                        end = end.min(next);
                    }
                    id = child;
                }
                let keys = &self.nodes[id as usize].keys;
                cur.insert(LeafCursor {
                    leaf: id,
                    end,
                    above: keys.partition_point(|&k| k <= key),
                })
            }
        };
        let n = &self.nodes[c.leaf as usize];
        while n.keys.get(c.above).is_some_and(|&k| k <= key) {
            c.above += 1;
        }
        // The last entry at or below `key` (as `ext_find`'s binary search finds it).
        let i = c.above.checked_sub(1)?;
        (key - n.keys[i] < ext_pages(leaf_parts(n.vals[i]).1, self.page_bytes))
            .then_some((n.keys[i], n.vals[i]))
    }

    /// Map data page `key` to `val` (one page) in the extent tree at `*root` ([`ext_set`]
    /// in the leaf that routes `key`: an extent never reaches past its leaf's key range, so
    /// the leaf that routes a page holds the extent covering it); returns its old value.
    pub fn set_page<G: Geo>(
        &mut self,
        root: &mut u32,
        key: u64,
        val: u64,
        geo: &G,
        ch: &mut Change,
    ) -> Option<u64> {
        let (id, old) = self.edit_leaf(*root, key, |keys, vals, pb| {
            Some(ext_set(keys, vals, key, val, pb, geo))
        })?; // ext_set always edits: never returns here
             // A cut adds up to two entries: split. Joined extents can leave a leaf under half
             // full; it stays so until a removal merges it (as an insertion never merged before
             // extents: a page set, e.g. a GC move, frees no node).
        if self.nodes[id as usize].keys.len() > self.leaf_cap {
            self.split_up(root, id, ch);
        }
        old
    }

    /// Unmap data page `key` in the extent tree at `*root`; returns its old value. Merges
    /// as [`Nodes::remove`].
    pub fn remove_page<G: Geo>(
        &mut self,
        root: &mut u32,
        key: u64,
        geo: &G,
        ch: &mut Change,
    ) -> Option<u64> {
        let (id, old) = self.edit_leaf(*root, key, |keys, vals, pb| {
            ext_remove(keys, vals, key, pb, geo).map(|(old, changed)| (Some(old), changed))
        })?;
        // Unmapping a page inside an extent cuts it in two: a full leaf can overflow.
        if self.nodes[id as usize].keys.len() > self.leaf_cap {
            self.split_up(root, id, ch);
        } else {
            self.merge_up(root, id, ch);
        }
        old
    }

    /// Apply `edit` (an extent edit, given the page size: its result and how many entries it
    /// changed, or `None` for no edit) to the leaf that routes `key` under `root`; fix the
    /// separators above when its first key moved (not when it emptied: the caller merges it)
    /// and mark it dirty. Returns the leaf and the edit's result.
    #[inline]
    fn edit_leaf<R>(
        &mut self,
        root: u32,
        key: u64,
        edit: impl FnOnce(&mut Vec<u64>, &mut Vec<u64>, u64) -> Option<(R, u32)>,
    ) -> Option<(u32, R)> {
        let id = self.leaf_for(root, key);
        let pb = self.page_bytes;
        let n = &mut self.nodes[id as usize];
        let first = n.keys.first().copied();
        let (r, changed) = edit(&mut n.keys, &mut n.vals, pb)?;
        if !n.keys.is_empty() && n.keys.first().copied() != first {
            self.fix_min_key(id);
        }
        self.touch(id, changed);
        Some((id, r))
    }

    /// Insert or replace `key` → `val` in the tree at `*root`; returns the old value.
    pub fn upsert(&mut self, root: &mut u32, key: u64, val: u64, ch: &mut Change) -> Option<u64> {
        let id = self.leaf_for(*root, key);
        let n = &mut self.nodes[id as usize];
        match n.keys.binary_search(&key) {
            Ok(i) => {
                let old = n.vals[i];
                n.vals[i] = val;
                self.touch(id, 1);
                Some(old)
            }
            Err(i) => {
                n.keys.insert(i, key);
                n.vals.insert(i, val);
                if i == 0 {
                    self.fix_min_key(id);
                }
                self.touch(id, 1);
                self.split_up(root, id, ch);
                None
            }
        }
    }

    /// After the smallest key of `id` changed, update the separator keys above it — only
    /// those at the first position of a node (routing never reads them: [`Nodes::child_for`]
    /// sends every key below the second separator to the first child), up to the first node
    /// that is not a first child.
    ///
    /// A separator at any other position is a lower bound of its child's keys and stays as
    /// it is: routing already sends a key to child `i` only if it is at least that
    /// separator, so an insertion below the child's smallest key never needs it lowered, and
    /// raising it to a new smallest key (after a removal) would change the parent in DRAM
    /// only, leaving its clean flash copy with another separator. Issue 17: recovery's data
    /// re-apply into a leaf whose entries were all dropped (their pages erased by GC after
    /// newer versions were written) raised the root's separator from 340 to 342 without
    /// rewriting the root; the two keys below it then went to the left sibling, so the flash
    /// root routed them to the wrong leaf (22 of 1,000 index-targeted DMM cuts with a 16 KiB
    /// diff cache had a wrong table).
    fn fix_min_key(&mut self, mut id: u32) {
        loop {
            let p = self.nodes[id as usize].parent;
            if p == NONE {
                return;
            }
            let Some(&k) = self.nodes[id as usize].keys.first() else {
                return;
            };
            let pn = &mut self.nodes[p as usize];
            let Some(i) = pn.vals.iter().position(|&c| c as u32 == id) else {
                return;
            };
            if i != 0 || pn.keys[0] == k {
                return;
            }
            // Keys of the first child are only a lower bound; keep them exact anyway.
            pn.keys[0] = k;
            id = p;
        }
    }

    fn split_up(&mut self, root: &mut u32, mut id: u32, ch: &mut Change) {
        loop {
            let level = self.nodes[id as usize].level;
            if self.nodes[id as usize].keys.len() <= self.cap(level) {
                return;
            }
            ch.splits += 1;
            let obj = self.nodes[id as usize].obj;
            let right = self.alloc(obj, level);
            let (rk, rv) = {
                let n = &mut self.nodes[id as usize];
                let mid = n.keys.len() / 2;
                (n.keys.split_off(mid), n.vals.split_off(mid))
            };
            if level > 0 {
                for &c in &rv {
                    self.nodes[c as usize].parent = right;
                }
            }
            let sep = rk[0];
            let nr = rk.len() as u32;
            {
                let r = &mut self.nodes[right as usize];
                r.keys = rk;
                r.vals = rv;
            }
            // Both halves are rewritten whole.
            let nl = self.nodes[id as usize].keys.len() as u32;
            self.touch(id, nl);
            self.touch(right, nr);
            let parent = self.nodes[id as usize].parent;
            if parent == NONE {
                let new_root = self.alloc(obj, level + 1);
                let k0 = self.nodes[id as usize].keys[0];
                {
                    let r = &mut self.nodes[new_root as usize];
                    r.keys.push(k0);
                    r.vals.push(id as u64);
                    r.keys.push(sep);
                    r.vals.push(right as u64);
                }
                self.nodes[id as usize].parent = new_root;
                self.nodes[right as usize].parent = new_root;
                self.touch(new_root, 2);
                *root = new_root;
                ch.root_changed = true;
                return;
            }
            self.nodes[right as usize].parent = parent;
            let p = &mut self.nodes[parent as usize];
            let i = p
                .vals
                .iter()
                .position(|&c| c as u32 == id)
                .expect("a child is listed in its parent");
            p.keys.insert(i + 1, sep);
            p.vals.insert(i + 1, right as u64);
            self.touch(parent, 1);
            id = parent;
        }
    }

    /// Remove `key` from the tree at `*root`; returns its value. Merges as described in the
    /// module doc. The tree never becomes empty here: the last leaf stays (possibly empty).
    pub fn remove(&mut self, root: &mut u32, key: u64, ch: &mut Change) -> Option<u64> {
        let id = self.leaf_for(*root, key);
        let n = &mut self.nodes[id as usize];
        let i = n.keys.binary_search(&key).ok()?;
        n.keys.remove(i);
        let old = n.vals.remove(i);
        if i == 0 && !self.nodes[id as usize].keys.is_empty() {
            self.fix_min_key(id);
        }
        self.touch(id, 1);
        self.merge_up(root, id, ch);
        Some(old)
    }

    fn merge_up(&mut self, root: &mut u32, mut id: u32, ch: &mut Change) {
        loop {
            let parent = self.nodes[id as usize].parent;
            if parent == NONE {
                // A root with one child collapses.
                let n = &self.nodes[id as usize];
                if n.level > 0 && n.keys.len() == 1 {
                    let child = n.vals[0] as u32;
                    self.release(id);
                    self.nodes[child as usize].parent = NONE;
                    *root = child;
                    ch.root_changed = true;
                }
                return;
            }
            let level = self.nodes[id as usize].level;
            let cap = self.cap(level);
            let len = self.nodes[id as usize].keys.len();
            if len * 2 >= cap {
                return;
            }
            let p = &self.nodes[parent as usize];
            let i = p
                .vals
                .iter()
                .position(|&c| c as u32 == id)
                .expect("a child is listed in its parent");
            // Merge the right node of a sibling pair into the left one.
            let (left, right, ri) = if i > 0 {
                (p.vals[i - 1] as u32, id, i)
            } else if p.vals.len() > 1 {
                (id, p.vals[1] as u32, 1)
            } else {
                return;
            };
            let total =
                self.nodes[left as usize].keys.len() + self.nodes[right as usize].keys.len();
            if total > cap {
                return;
            }
            ch.merges += 1;
            let (rk, rv) = {
                let r = &mut self.nodes[right as usize];
                (std::mem::take(&mut r.keys), std::mem::take(&mut r.vals))
            };
            if level > 0 {
                for &c in &rv {
                    self.nodes[c as usize].parent = left;
                }
            }
            let l = &mut self.nodes[left as usize];
            let moved = rk.len() as u32;
            l.keys.extend_from_slice(&rk);
            l.vals.extend_from_slice(&rv);
            // Give the emptied vectors back for reuse.
            let r = &mut self.nodes[right as usize];
            r.keys = rk;
            r.vals = rv;
            r.keys.clear();
            r.vals.clear();
            self.touch(left, moved);
            self.release(right);
            let p = &mut self.nodes[parent as usize];
            p.keys.remove(ri);
            p.vals.remove(ri);
            self.touch(parent, 1);
            id = parent;
        }
    }

    /// Every leaf entry of the tree under `root`, in key order (`out` cleared first).
    pub fn entries(&self, root: u32, out: &mut Vec<(u64, u64)>) {
        out.clear();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            let n = &self.nodes[id as usize];
            if n.level == 0 {
                out.extend(n.keys.iter().copied().zip(n.vals.iter().copied()));
            } else {
                stack.extend(n.vals.iter().rev().map(|&c| c as u32));
            }
        }
        out.sort_unstable_by_key(|e| e.0);
    }

    /// Every node of the tree under `root` (`out` cleared first).
    pub fn all_nodes(&self, root: u32, out: &mut Vec<u32>) {
        out.clear();
        out.push(root);
        let mut i = 0;
        while i < out.len() {
            let n = &self.nodes[out[i] as usize];
            if n.level > 0 {
                out.extend(n.vals.iter().map(|&c| c as u32));
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests;
