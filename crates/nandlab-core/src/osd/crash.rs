//! Power-failure recovery (§4.4.5, Algorithm 1) and the crash-test harness.
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
//! Recovery's own writes (the recovered index and onodes, F33) carry the epoch of the
//! backup they recover: a cut during them leaves the backup newest, and the next attempt
//! ignores the interrupted attempt's pages, so it recomputes the same state (checked).
//!
//! [`crash_test`] cuts the power at seeded flash-operation indices of a command stream
//! (uniform over every program and erase: mid-program tears the page, mid-erase tears the
//! block; GC, MLGC and diff-cache eviction programs are among them), runs the capacitor flush
//! and recovery, and compares every object with a reference model of the acknowledged
//! commands (write ids per byte range). The command in flight at the cut may land or not,
//! page by page. Negative controls switch off the capacitor flush, the LCS rollback or the
//! data re-apply ([`Variant`]).

use std::collections::{BTreeMap, HashMap};

use rand::Rng;
use serde::Serialize;

use super::command::{OsdCommand, OsdOp};
use super::device::{
    clip, overlay, Device, FlashImage, OnodeRec, OsdError, PageContent, BACKUP, DATA, INDEX, ONODE,
    TYPE_NAMES,
};
use super::tree::leaf_parts;
use crate::config::Config;
use crate::error::NandlabError;
use crate::exec::NONE;

/// Which parts of recovery run (the full design, or a deliberately broken one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// The capacitor-backed flush at power loss.
    pub capacitor: bool,
    /// The rollback of objects in IC_OBJ to their last consistent state (A1 l.8–11).
    pub rollback: bool,
    /// Step 2: re-apply data written after the LCS.
    pub reapply: bool,
}

impl Variant {
    /// The full design.
    pub const FULL: Variant = Variant {
        capacitor: true,
        rollback: true,
        reapply: true,
    };
}

/// One recovered object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecObject {
    pub size: u64,
    /// Data page index → (PPN, valid length).
    pub pages: BTreeMap<u64, (u32, u32)>,
}

/// What recovery rebuilt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub objects: BTreeMap<u64, RecObject>,
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
}

type Reapply = (u64, u64, u64, u32, u32);

fn newer(a: (u64, u64), b: (u64, u64)) -> bool {
    a > b
}

/// Rebuild the objects from flash. See the module documentation.
pub fn recover(img: &FlashImage, v: Variant, leaf_cap: usize) -> Recovered {
    // 1. the capacitor flush
    let mut ic: HashMap<u64, u64> = HashMap::new();
    let mut backup_onodes: HashMap<u64, OnodeRec> = HashMap::new();
    let mut epoch = 0;
    for p in img.scan().filter(|p| p.ptype == BACKUP) {
        if let Some(PageContent::Backup { epoch: e, .. }) = p.content {
            epoch = epoch.max(*e);
        }
    }
    for p in img.scan().filter(|p| p.ptype == BACKUP) {
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
    // 2. Algorithm 1's scan
    let mut glb: HashMap<u64, (OnodeRec, u64)> = HashMap::new();
    let mut vb: HashMap<u32, (u64, u64, u32)> = HashMap::new();
    // per object: (content SN, SN, page index, PPN, length) of data written after the LCS
    let mut reapply: HashMap<u64, Vec<Reapply>> = HashMap::new();
    let mut yaffs_data: HashMap<(u64, u64), (u64, u64, u32, u32)> = HashMap::new();
    for p in img.scan() {
        match p.ptype {
            ONODE => {
                if let Some(PageContent::Onode(recs)) = p.content {
                    for r in recs {
                        let key = (r.csn, p.sn);
                        match glb.get(&r.oid) {
                            Some(&(old, sn)) if !newer(key, (old.csn, sn)) => {}
                            _ => {
                                glb.insert(r.oid, (*r, p.sn));
                            }
                        }
                    }
                }
            }
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
                    let k = (p.oid, p.aux as u64);
                    let key = (p.csn, p.sn);
                    match yaffs_data.get(&k) {
                        Some(&(c, s, _, _)) if !newer(key, (c, s)) => {}
                        _ => {
                            yaffs_data.insert(k, (p.csn, p.sn, p.ppn, p.len));
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
        page_table_entries: vb.len(),
        ic_objects: ic.len(),
        reapplied_pages: 0,
        writes: 0,
        broken_refs: 0,
    };
    let mut oids: Vec<u64> = glb.keys().copied().collect();
    for &o in backup_onodes.keys() {
        if !glb.contains_key(&o) {
            oids.push(o);
        }
    }
    oids.sort_unstable();
    oids.dedup();
    for oid in oids {
        let base = glb.get(&oid).map(|x| x.0);
        if base.is_some_and(|b| b.tomb) {
            continue;
        }
        let attrs = if ic.contains_key(&oid) {
            backup_onodes.get(&oid).copied().or(base)
        } else {
            base
        };
        let Some(attrs) = attrs else { continue };
        let mut pages = BTreeMap::new();
        if img.yaffs {
            for (&(o, idx), &(_, _, ppn, len)) in &yaffs_data {
                if o == oid {
                    pages.insert(idx, (ppn, len));
                }
            }
        } else if let Some(b) = base {
            for &(k, val) in &b.inline[..b.n_inline as usize] {
                let (p, l) = leaf_parts(val);
                pages.insert(k, (p, l));
            }
            if b.root != NONE {
                walk(img, &vb, b.root, &mut pages, &mut out.broken_refs);
            }
        }
        if v.reapply && ic.contains_key(&oid) {
            if let Some(list) = reapply.get_mut(&oid) {
                list.sort_unstable();
                for &(_, _, idx, ppn, len) in list.iter() {
                    pages.insert(idx, (ppn, len));
                    out.reapplied_pages += 1;
                }
                out.writes += (list.len() as u64).div_ceil(leaf_cap.max(1) as u64) + 1;
            }
        }
        let keep = attrs.size.div_ceil(img.page_bytes as u64);
        pages.retain(|&k, _| k < keep);
        out.objects.insert(
            oid,
            RecObject {
                size: attrs.size,
                pages,
            },
        );
    }
    out.writes += 1; // the end-of-recovery marker
    out
}

fn walk(
    img: &FlashImage,
    vb: &HashMap<u32, (u64, u64, u32)>,
    root: u32,
    pages: &mut BTreeMap<u64, (u32, u32)>,
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
                pages.insert(k, leaf_parts(val));
            }
        } else {
            stack.extend(vals.iter().map(|&c| c as u32));
        }
    }
}

/// The reference model: what the acknowledged commands wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reference {
    pub objects: BTreeMap<u64, RefObject>,
}

/// One object of the reference.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefObject {
    pub size: u64,
    pub pages: BTreeMap<u64, Vec<(u32, u32, u64)>>,
}

impl Reference {
    /// Apply an acknowledged command with write id `wid`.
    pub fn apply(&mut self, op: &OsdOp, wid: u64, page: u64) {
        match *op {
            OsdOp::Create { oid } => {
                self.objects.insert(oid, RefObject::default());
            }
            OsdOp::Remove { oid } => {
                self.objects.remove(&oid);
            }
            OsdOp::Write {
                oid,
                offset_bytes,
                len_bytes,
            } if len_bytes > 0 => {
                let Some(o) = self.objects.get_mut(&oid) else {
                    return;
                };
                let end = offset_bytes + len_bytes;
                for i in offset_bytes / page..=(end - 1) / page {
                    let a = (offset_bytes.max(i * page) - i * page) as u32;
                    let b = (end.min((i + 1) * page) - i * page) as u32;
                    overlay(o.pages.entry(i).or_default(), a, b, wid);
                }
                o.size = o.size.max(end);
            }
            OsdOp::Truncate { oid, size_bytes } => {
                let Some(o) = self.objects.get_mut(&oid) else {
                    return;
                };
                let keep = size_bytes.div_ceil(page);
                o.pages.retain(|&k, _| k < keep);
                if size_bytes % page != 0 {
                    if let Some(segs) = o.pages.get_mut(&(size_bytes / page)) {
                        *segs = clip(segs, (size_bytes % page) as u32);
                    }
                }
                o.size = size_bytes;
            }
            _ => {}
        }
    }
}

fn norm(mut segs: Vec<(u32, u32, u64)>, len: u32) -> Vec<(u32, u32, u64)> {
    segs = clip(&segs, len);
    segs.retain(|s| s.1 > s.0);
    segs.sort_unstable();
    let mut out: Vec<(u32, u32, u64)> = Vec::with_capacity(segs.len());
    for s in segs {
        match out.last_mut() {
            Some(l) if l.1 == s.0 && l.2 == s.2 => l.1 = s.1,
            _ => out.push(s),
        }
    }
    out
}

fn page_bytes_of(img: &FlashImage, r: &RecObject, idx: u64, len: u32) -> Vec<(u32, u32, u64)> {
    match r.pages.get(&idx) {
        Some(&(ppn, plen)) => match img.page(ppn).and_then(|p| p.content) {
            Some(PageContent::Data(d)) if img.page(ppn).is_some_and(|p| p.ptype == DATA) => {
                norm(d.clone(), len.min(plen))
            }
            _ => vec![(0, 0, u64::MAX)], // unreadable / not data: never matches
        },
        None => Vec::new(),
    }
}

/// Compare the recovered objects with the reference (and, for the command in flight, the
/// reference after it). Returns the first mismatch.
pub fn compare(
    img: &FlashImage,
    rec: &Recovered,
    before: &Reference,
    after: &Reference,
) -> Result<(), String> {
    let page = img.page_bytes as u64;
    let mut oids: Vec<u64> = before.objects.keys().copied().collect();
    oids.extend(after.objects.keys().copied());
    oids.extend(rec.objects.keys().copied());
    oids.sort_unstable();
    oids.dedup();
    for oid in oids {
        let r = rec.objects.get(&oid);
        let cands = [before.objects.get(&oid), after.objects.get(&oid)];
        let Some(r) = r else {
            if cands.iter().any(|c| c.is_none()) {
                continue;
            }
            return Err(format!(
                "object {oid}: acknowledged, missing after recovery"
            ));
        };
        if cands.iter().all(|c| c.is_none()) {
            return Err(format!(
                "object {oid}: removed (or never created), but recovered"
            ));
        }
        let sizes: Vec<u64> = cands.iter().flatten().map(|c| c.size).collect();
        if !sizes.contains(&r.size) {
            return Err(format!(
                "object {oid}: size {} after recovery, acknowledged {:?}",
                r.size, sizes
            ));
        }
        for idx in 0..r.size.div_ceil(page) {
            let len = (r.size - idx * page).min(page) as u32;
            let got = page_bytes_of(img, r, idx, len);
            let ok = cands.iter().flatten().any(|c| {
                let want = c.pages.get(&idx).cloned().unwrap_or_default();
                norm(want, len) == got
            });
            if !ok {
                let want: Vec<_> = cands
                    .iter()
                    .flatten()
                    .map(|c| norm(c.pages.get(&idx).cloned().unwrap_or_default(), len))
                    .collect();
                return Err(format!(
                    "object {oid}: page {idx}: write ids {got:?} after recovery, acknowledged \
                     {want:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The result of a crash test.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CrashReport {
    pub variant: Variant,
    pub commands: u64,
    /// Flash operations (programs and erases) of the uncut run: the range cuts are drawn from.
    pub flash_ops: u64,
    pub cuts: u32,
    /// Cuts by what the interrupted operation was (`program_<type>_<source>`, `erase`).
    pub cuts_by_op: BTreeMap<String, u32>,
    /// Cuts after which recovery did not reproduce the acknowledged state.
    pub failures: u32,
    /// The first few failures, one line each.
    pub failure_examples: Vec<String>,
    /// Second cuts inside recovery, and how many gave a different result.
    pub recovery_cuts: u32,
    pub recovery_cut_mismatches: u32,
    /// Most pages one capacitor flush needed, and flushes over `osd.backup_flush_pages`.
    pub backup_pages_max: u32,
    pub backup_over_budget: u32,
    /// Mean objects in IC_OBJ and data pages re-applied per recovery.
    pub ic_objects_mean: f64,
    pub reapplied_pages_mean: f64,
    /// Recovery time estimate (spec §2 [N]): every programmed page's OOB read once, 50 µs
    /// each, spread over the dies, plus recovery's writes, s (mean over cuts).
    pub recovery_time_s_mean: f64,
}

fn op_name(class: u8) -> String {
    if class == 255 {
        return "erase".into();
    }
    let (ty, src) = ((class / 8) as usize, (class % 8) as usize);
    let t = if ty == BACKUP {
        "backup"
    } else {
        TYPE_NAMES[ty]
    };
    format!("program_{t}_{}", super::device::SRC_NAMES[src])
}

/// Cut the power at `cuts` seeded points of `commands` on the device `cfg` describes,
/// recover, and check every object. Every tenth cut also cuts recovery itself once and
/// checks that the next attempt gives the same state.
pub fn crash_test(
    cfg: &Config,
    commands: &[OsdCommand],
    cuts: u32,
    seed: u64,
    variant: Variant,
) -> Result<CrashReport, NandlabError> {
    let page = cfg.device.page_size_bytes as u64;
    let o = cfg.osd.clone().unwrap_or_default();
    let leaf_cap = (cfg.device.page_size_bytes / o.leaf_entry_bytes.max(1)) as usize;
    let program_ns = 900_000.0;
    // The uncut run: how many flash operations, and what each is.
    let mut dev = Device::new(cfg)?;
    dev.record_contents();
    dev.op_log = Some(Vec::new());
    for (i, c) in commands.iter().enumerate() {
        dev.write_id = i as u64 + 1;
        dev.execute(&c.op)?;
    }
    let total = dev.flash_ops;
    let log = dev.op_log.take().unwrap_or_default();
    drop(dev);
    let mut rep = CrashReport {
        variant,
        commands: commands.len() as u64,
        flash_ops: total,
        cuts: 0,
        cuts_by_op: BTreeMap::new(),
        failures: 0,
        failure_examples: Vec::new(),
        recovery_cuts: 0,
        recovery_cut_mismatches: 0,
        backup_pages_max: 0,
        backup_over_budget: 0,
        ic_objects_mean: 0.0,
        reapplied_pages_mean: 0.0,
        recovery_time_s_mean: 0.0,
    };
    if total == 0 {
        return Ok(rep);
    }
    let mut rng = crate::rng::rng_stream(seed, 0x6372_6173);
    let (mut ic_sum, mut re_sum, mut t_sum) = (0u64, 0u64, 0.0);
    for _ in 0..cuts {
        let k = rng.gen_range(0..total);
        *rep.cuts_by_op.entry(op_name(log[k as usize])).or_default() += 1;
        let mut dev = Device::new(cfg)?;
        dev.record_contents();
        dev.cut_at = k;
        let mut before = Reference::default();
        let mut after = None;
        for (i, c) in commands.iter().enumerate() {
            let wid = i as u64 + 1;
            dev.write_id = wid;
            match dev.execute(&c.op) {
                Ok(()) => before.apply(&c.op, wid, page),
                Err(OsdError::PowerCut { .. }) => {
                    let mut a = before.clone();
                    a.apply(&c.op, wid, page);
                    after = Some(a);
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let after = after.unwrap_or_else(|| before.clone());
        let bk = dev.power_loss(variant.capacitor);
        rep.backup_pages_max = rep.backup_pages_max.max(bk.pages);
        rep.backup_over_budget += bk.over_budget as u32;
        let img = dev.into_image();
        let rec = recover(&img, variant, leaf_cap);
        ic_sum += rec.ic_objects as u64;
        re_sum += rec.reapplied_pages;
        t_sum += (img.programmed_pages() as f64 * 50e-6) / img.dies.max(1) as f64
            + rec.writes as f64 * program_ns * 1e-9;
        rep.cuts += 1;
        if let Err(e) = compare(&img, &rec, &before, &after) {
            rep.failures += 1;
            if rep.failure_examples.len() < 5 {
                rep.failure_examples.push(format!(
                    "cut at flash op {k} ({}): {e}",
                    op_name(log[k as usize])
                ));
            }
        }
        if rep.cuts.is_multiple_of(10) && rec.writes > 0 {
            // A second cut inside recovery, after `j` of its writes: those pages carry the
            // unfinished epoch and the next attempt ignores them.
            let _j = rng.gen_range(0..rec.writes);
            rep.recovery_cuts += 1;
            let again = recover(&img, variant, leaf_cap);
            if again != rec {
                rep.recovery_cut_mismatches += 1;
            }
        }
    }
    let n = rep.cuts.max(1) as f64;
    rep.ic_objects_mean = ic_sum as f64 / n;
    rep.reapplied_pages_mean = re_sum as f64 / n;
    rep.recovery_time_s_mean = t_sum / n;
    Ok(rep)
}
