//! Algorithm 1's scan and the switches of the broken variants ([`Variant`]).
//!
//! [`recover`] rebuilds the objects from a [`FlashImage`] alone — pages, OOB and contents;
//! no DRAM state of the device survives into it:
//!
//! 1. The capacitor-backed flush (the newest `BACKUP` pages): IC_OBJ = ⟨oid, LCS⟩ and the
//!    dirty onodes of the diff cache.
//! 2. Algorithm 1's scan over every readable page: onodes — *each* onode of a page (gap 1),
//!    the highest version per object wins (lower versions are what the byte-level GC table
//!    would hold, gap 2), tombstones remove (gap 4); index pages of the virtual tree — VA →
//!    the newest version, except that for an object in IC_OBJ versions newer than its LCS are
//!    skipped (A1 l.8–11: the rollback to the last consistent state). Comparisons use the
//!    content SN (`data_sn`, kept by GC moves) so that a GC copy of an old version stays
//!    old; among copies of one version the newest copy wins.
//! 3. Each object's tree from its onode's root (PA in the extent tree, VA through the rebuilt
//!    page table), then step 2 of §4.4.5.1: for an object in IC_OBJ, every data page written
//!    after its LCS is re-applied from its OOB ⟨offset, length⟩, in content-SN order (gap 3);
//!    attributes come from the flushed dirty onode. Entries past the size are dropped.
//!
//! YAFFS2-like: the full scan of §3 — the newest object header per object, and per data
//! page index the newest data page by its tags.
//!
//! 4. A running device from all that ([`Device::from_recovery`]: object table, trees loaded
//!    node by node, page table, GC table, valid counts by reachability), which re-applies the
//!    data and writes the index and onode of each IC_OBJ object back
//!    ([`Device::finish_recovery`], F33). The capacitor flush stays on flash until that is done, and an
//!    object whose newest onode is newer than its LCS has left IC_OBJ (its write-back
//!    finished), so a cut inside recovery is simply recovered again, to the same state
//!    (checked).
//!
//! Source: §4.4.5.1, Algorithm 1, T14, F33–34; the gaps of spec §2 (every onode of a page,
//! lower-SN duplicates, data in `data_sn` order, tombstones, reachability).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::*;
use crate::osd::tree::leaf_parts;

/// Which parts of recovery run (the full design, or a deliberately broken one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// The capacitor-backed flush at power loss.
    pub capacitor: bool,
    /// The rollback of objects in IC_OBJ to their last consistent state (A1 l.8–11).
    pub rollback: bool,
    /// Step 2: re-apply data written after the LCS.
    pub reapply: bool,
    /// The recovered device's valid pages and page table by reachability from the recovered
    /// metadata (spec §2 gap 5); off: the page states and every VA the scan found are kept
    /// as flash left them (the negative control of the table checks).
    pub reachability: bool,
    /// The onode write buffer programmed by the capacitor at power loss (off: left out,
    /// yet its onodes taken as written — the negative control of issue 30).
    pub onode_buffer: bool,
}

impl Variant {
    /// The full design.
    pub const FULL: Variant = Variant {
        capacitor: true,
        rollback: true,
        reapply: true,
        reachability: true,
        onode_buffer: true,
    };
}

/// One recovered object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecObject {
    pub size: u64,
    /// Data page index → (PPN, valid length).
    pub pages: BTreeMap<u64, (u32, u32)>,
    /// Where its newest onode on flash is: (page, slot in the page, content SN); `None` when
    /// only the capacitor flush holds it.
    pub onode: Option<(u32, u32, u64)>,
    /// Index root of that onode (PA or VA; [`NONE`]: inline extents only) and its inline
    /// extents.
    pub root: u32,
    pub inline: Vec<(u64, u64)>,
    /// In IC_OBJ: data written after the LCS is re-applied, in content-SN order (page index,
    /// PPN, length), then its index and onode are written back (F33).
    pub ic: bool,
    pub reapply: Vec<(u64, u32, u32)>,
}

/// What recovery rebuilt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub objects: BTreeMap<u64, RecObject>,
    /// Removed objects whose newest onode is a tombstone: (oid, page, slot, content SN).
    pub tombs: Vec<(u64, u32, u32, u64)>,
    /// The rebuilt virtual-tree page table (VA → PPN), after the rollback.
    pub page_table: BTreeMap<u32, u32>,
    /// Entries of the rebuilt virtual-tree page table.
    pub page_table_entries: usize,
    /// Objects in IC_OBJ.
    pub ic_objects: usize,
    /// Data pages re-applied (step 2).
    pub reapplied_pages: u64,
    /// Pages recovery writes back (recovered leaves and onodes of IC_OBJ objects, F33).
    pub writes: u64,
    /// Index pages an onode's tree referred to that were missing or unreadable.
    pub broken_refs: u64,
    /// YAFFS2-like: data pages dropped by a shrink header (a later truncate).
    pub shrunk_pages: u64,
}

type Reapply = (u64, u64, u64, u32, u32);

fn newer(a: (u64, u64), b: (u64, u64)) -> bool {
    a > b
}

/// Rebuild the objects from flash. See the module documentation.
pub fn recover(img: &FlashImage, v: Variant, leaf_cap: usize) -> Recovered {
    // 1. the capacitor flush
    let mut ic: IdMap<u64, u64> = IdMap::default();
    let mut backup_onodes: HashMap<u64, OnodeRec> = HashMap::new();
    let mut epoch = 0;
    // One pass finds the back-up and onode pages (the scan below reads every page once more).
    let (mut backups, mut onode_pages) = (Vec::new(), Vec::new());
    for (ppn, ty, _) in img.scan_types() {
        if ty == BACKUP || ty == ONODE {
            if let Some(p) = img.page(ppn) {
                if ty == BACKUP {
                    backups.push(p);
                } else {
                    onode_pages.push(p);
                }
            }
        }
    }
    for p in &backups {
        if let Some(PageContent::Backup { epoch: e, .. }) = p.content {
            epoch = epoch.max(*e);
        }
    }
    for p in &backups {
        if let Some(PageContent::Backup {
            epoch: e,
            ic: list,
            onodes,
        }) = p.content
        {
            if *e == epoch {
                ic.extend(list.iter().copied());
                for r in onodes {
                    backup_onodes.insert(r.oid, *r);
                }
            }
        }
    }
    // 2. Algorithm 1's scan: onodes first — (record, SN of its page, page, slot)
    let mut glb: HashMap<u64, (OnodeRec, u64, u32, u32)> = HashMap::new();
    // YAFFS2 shrink headers: per object, (content SN, size) of each truncate's header
    let mut shrinks: IdMap<u64, Vec<(u64, u64)>> = IdMap::default();
    for p in &onode_pages {
        if let Some(PageContent::Onode(recs)) = p.content {
            for (k, r) in recs.iter().enumerate() {
                if r.shrink {
                    shrinks.entry(r.oid).or_default().push((r.csn, r.size));
                }
                let key = (r.csn, p.sn);
                match glb.get(&r.oid) {
                    // Within one page a later slot is a later version (the onode write
                    // buffer holds every version of an object until it is programmed).
                    Some(&(old, sn, _, _)) if !newer(key, (old.csn, sn)) && sn != p.sn => {}
                    _ => {
                        glb.insert(r.oid, (*r, p.sn, p.ppn, k as u32));
                    }
                }
            }
        }
    }
    // An object whose newest onode is newer than its LCS was committed after the capacitor
    // flush (by an interrupted recovery, F33's write-back, or a later run): its flash state
    // is consistent again and it leaves IC_OBJ.
    ic.retain(|oid, lcs| glb.get(oid).is_none_or(|g| g.0.csn <= *lcs));
    let mut vb: IdMap<u32, (u64, u64, u32)> = IdMap::default();
    // per object: (content SN, SN, page index, PPN, length) of data written after the LCS
    let mut reapply: IdMap<u64, Vec<Reapply>> = IdMap::default();
    let mut yaffs_data: HashMap<(u64, u64), (u64, u64, u32, u32)> = HashMap::new();
    let mut shrunk = 0;
    for (ppn, ty, oid) in img.scan_types() {
        // Only index pages (virtual tree), data pages of IC_OBJ objects, or every data page
        // (YAFFS2-like) matter here: read the rest of their OOB.
        let wanted = match ty {
            INDEX => img.virtual_tree,
            DATA => img.yaffs || ic.contains_key(&oid),
            _ => false,
        };
        let Some(p) = wanted.then(|| img.page(ppn)).flatten() else {
            continue;
        };
        match p.ptype {
            INDEX if img.virtual_tree => {
                if v.rollback {
                    if let Some(&lcs) = ic.get(&p.oid) {
                        if p.csn > lcs {
                            continue;
                        }
                    }
                }
                let key = (p.csn, p.sn);
                match vb.get(&p.aux) {
                    Some(&(c, s, _)) if !newer(key, (c, s)) => {}
                    _ => {
                        vb.insert(p.aux, (p.csn, p.sn, p.ppn));
                    }
                }
            }
            DATA => {
                if img.yaffs {
                    // A shrink header newer than the page cuts it (YAFFS2 scan): pages past
                    // the shrunk size are dropped, a page across it keeps the bytes below.
                    let mut len = p.len;
                    if let Some(list) = shrinks.get(&p.oid) {
                        let start = p.aux as u64 * img.page_bytes as u64;
                        for &(c, size) in list {
                            if c > p.csn {
                                len = len.min(size.saturating_sub(start).min(len as u64) as u32);
                            }
                        }
                    }
                    if len == 0 {
                        shrunk += 1;
                        continue;
                    }
                    let k = (p.oid, p.aux as u64);
                    let key = (p.csn, p.sn);
                    match yaffs_data.get(&k) {
                        Some(&(c, s, _, _)) if !newer(key, (c, s)) => {}
                        _ => {
                            yaffs_data.insert(k, (p.csn, p.sn, p.ppn, len));
                        }
                    }
                } else if let Some(&lcs) = ic.get(&p.oid) {
                    if p.sn > lcs {
                        reapply.entry(p.oid).or_default().push((
                            p.csn,
                            p.sn,
                            p.aux as u64,
                            p.ppn,
                            p.len,
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    // 3. objects
    let mut out = Recovered {
        objects: BTreeMap::new(),
        tombs: Vec::new(),
        page_table: vb.iter().map(|(&va, &(_, _, p))| (va, p)).collect(),
        page_table_entries: vb.len(),
        ic_objects: ic.len(),
        reapplied_pages: 0,
        writes: 0,
        broken_refs: 0,
        shrunk_pages: shrunk,
    };
    let mut yaffs_by_obj: HashMap<u64, BTreeMap<u64, (u32, u32)>> = HashMap::new();
    for (&(o, idx), &(_, _, ppn, len)) in &yaffs_data {
        yaffs_by_obj.entry(o).or_default().insert(idx, (ppn, len));
    }
    let mut oids: Vec<u64> = glb.keys().copied().collect();
    for &o in backup_onodes.keys() {
        if !glb.contains_key(&o) {
            oids.push(o);
        }
    }
    oids.sort_unstable();
    oids.dedup();
    for oid in oids {
        let g = glb.get(&oid).copied();
        let base = g.map(|x| x.0);
        if let Some((b, _, ppn, k)) = g {
            if b.tomb {
                out.tombs.push((oid, ppn, k, b.csn));
                continue;
            }
        }
        let in_ic = ic.contains_key(&oid);
        let attrs = if in_ic {
            backup_onodes.get(&oid).copied().or(base)
        } else {
            base
        };
        let Some(attrs) = attrs else { continue };
        // (page index, (PPN, length)) in the order found; a later entry of an index wins.
        let mut pages: Vec<(u64, (u32, u32))> = Vec::new();
        let mut obj = RecObject {
            size: attrs.size,
            pages: BTreeMap::new(),
            onode: g.map(|(b, _, ppn, k)| (ppn, k, b.csn)),
            root: NONE,
            inline: Vec::new(),
            ic: in_ic,
            reapply: Vec::new(),
        };
        if img.yaffs {
            if let Some(m) = yaffs_by_obj.remove(&oid) {
                pages = m.into_iter().collect();
            }
        } else if let Some(b) = base {
            obj.inline = b.inline[..b.n_inline as usize].to_vec();
            obj.root = b.root;
            for &(k, val) in &obj.inline {
                expand(img, oid, k, val, &mut pages);
            }
            if b.root != NONE {
                walk(img, &vb, oid, b.root, &mut pages, &mut out.broken_refs);
            }
        }
        if v.reapply && in_ic {
            if let Some(list) = reapply.get_mut(&oid) {
                list.sort_unstable();
                for &(_, _, idx, ppn, len) in list.iter() {
                    pages.push((idx, (ppn, len)));
                    obj.reapply.push((idx, ppn, len));
                    out.reapplied_pages += 1;
                }
                out.writes += (list.len() as u64).div_ceil(leaf_cap.max(1) as u64) + 1;
            }
        }
        let keep = attrs.size.div_ceil(img.page_bytes as u64);
        pages.retain(|&(k, _)| k < keep);
        // Stable sort, then the last of each index (as inserting them in this order).
        pages.sort_by_key(|e| e.0);
        let mut map = BTreeMap::new();
        let mut it = pages.into_iter().peekable();
        while let Some(e) = it.next() {
            if it.peek().is_none_or(|n| n.0 != e.0) {
                map.insert(e.0, e.1);
            }
        }
        obj.pages = map;
        out.objects.insert(oid, obj);
    }
    out.writes += 1; // the end-of-recovery marker
    out
}

fn walk(
    img: &FlashImage,
    vb: &IdMap<u32, (u64, u64, u32)>,
    oid: u64,
    root: u32,
    pages: &mut Vec<(u64, (u32, u32))>,
    broken: &mut u64,
) {
    let mut stack = vec![root];
    while let Some(addr) = stack.pop() {
        let ppn = if img.virtual_tree {
            match vb.get(&addr) {
                Some(&(_, _, p)) => p,
                None => {
                    *broken += 1;
                    continue;
                }
            }
        } else {
            addr
        };
        let Some(PageContent::Index { level, keys, vals }) = img
            .page(ppn)
            .filter(|p| p.ptype == INDEX)
            .and_then(|p| p.content)
        else {
            *broken += 1;
            continue;
        };
        if *level == 0 {
            for (&k, &val) in keys.iter().zip(vals) {
                expand(img, oid, k, val, pages);
            }
        } else {
            stack.extend(vals.iter().map(|&c| c as u32));
        }
    }
}

/// The pages of the extent ⟨`k`, `val`⟩ of object `oid`: page `j` where the stripe table
/// rebuilt from OOB puts it ([`super::Stripes::nth`]), kept only if that page is readable and
/// its OOB names `oid` and page `k + j` (a reference of a last consistent state into a chunk
/// erased and reused since resolves to another page: its data is gone, and what superseded it
/// is re-applied).
fn expand(img: &FlashImage, oid: u64, k: u64, val: u64, pages: &mut Vec<(u64, (u32, u32))>) {
    let pb = img.page_bytes as u64;
    let (pa, len) = leaf_parts(val);
    let n = ext_pages(len, pb);
    for j in 0..n {
        let Some(p) = img.stripes.nth(pa, j) else {
            continue;
        };
        // (`pa` is the stored address of the first page: a stripe address or a PPN.)
        let ok = img
            .page(p)
            .is_some_and(|f| f.ptype == DATA && f.oid == oid && f.aux as u64 == k + j);
        if ok {
            pages.push((k + j, (p, ext_page_len(len, j, n, pb))));
        }
    }
}
