//! The crash-test harness: seeded power cuts, the capacitor flush, recovery and the check
//! against a reference model of the acknowledged commands (spec §5, §7 item 6).
//!
//! Recovery itself is the device's: [`recover`] (Algorithm 1's scan, `device/scan.rs`) and
//! [`Device::from_recovery`] / [`Device::finish_recovery`] (`device/recovery.rs`), re-exported
//! here.
//!
//! [`crash_test`] cuts the power at seeded flash-operation indices of a command stream
//! (uniform over every program and erase: mid-program tears the page, mid-erase tears the
//! block; GC, MLGC and diff-cache eviction programs are among them), runs the capacitor flush
//! and recovery, and compares every object with a reference model of the acknowledged
//! commands (write ids per byte range). The command in flight at the cut may land or not,
//! page by page. The recovered device's tables are checked against flash and reachability,
//! and the replay goes on on it ([`crash_test_with`]). Negative controls switch off the
//! capacitor flush, the LCS rollback, the data re-apply or the reachability rebuild
//! ([`Variant`]).

use std::collections::{BTreeMap, HashMap};

use rand::Rng;
use serde::Serialize;

use super::command::{OsdCommand, OsdOp};
use super::device::{
    clip, overlay, Device, FlashImage, LogicalObject, OsdError, BACKUP, TYPE_NAMES,
};
pub use super::device::{recover, RecObject, Recovered, Variant};
use crate::config::Config;
use crate::error::NandlabError;

/// Write-id segments of one page: `[start, end)` and the write id.
pub type Segs = Vec<(u32, u32, u64)>;

/// The reference model: what the acknowledged commands wrote. With [`Reference::journal`]
/// on, every change is logged so that it can be undone ([`Reference::undo_to`]): the crash
/// harness runs each cut on the one reference after the preconditioning and rolls it back,
/// instead of copying a reference of a whole trace footprint per cut (issue 17).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reference {
    pub objects: BTreeMap<u64, RefObject>,
    journal: Option<Vec<Undo>>,
}

/// One object of the reference.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefObject {
    pub size: u64,
    pub pages: BTreeMap<u64, Segs>,
}

/// What a change replaced (the journal).
#[derive(Clone, Debug, PartialEq)]
enum Undo {
    /// The whole object (or its absence) before a CREATE or REMOVE.
    Object(u64, Option<RefObject>),
    Size(u64, u64),
    Page(u64, u64, Option<Segs>),
}

/// The reference before the command in flight, as the changes that command made (the first
/// change of each object, size and page holds what it was before).
#[derive(Debug, Default)]
pub struct Before<'a> {
    objects: HashMap<u64, Option<&'a RefObject>>,
    sizes: HashMap<u64, u64>,
    pages: HashMap<(u64, u64), Option<&'a Segs>>,
}

impl Reference {
    /// Log every change from now on (see [`Reference::undo_to`]).
    pub fn journal(&mut self) {
        self.journal.get_or_insert_with(Vec::new);
    }

    /// Changes logged so far (a mark for [`Reference::undo_to`] and [`Reference::before`]).
    pub fn mark(&self) -> usize {
        self.journal.as_ref().map_or(0, Vec::len)
    }

    /// Undo the changes logged after `mark`.
    pub fn undo_to(&mut self, mark: usize) {
        let Some(mut j) = self.journal.take() else {
            return;
        };
        while j.len() > mark {
            match j.pop() {
                Some(Undo::Object(oid, prev)) => match prev {
                    Some(o) => {
                        self.objects.insert(oid, o);
                    }
                    None => {
                        self.objects.remove(&oid);
                    }
                },
                Some(Undo::Size(oid, size)) => {
                    if let Some(o) = self.objects.get_mut(&oid) {
                        o.size = size;
                    }
                }
                Some(Undo::Page(oid, idx, prev)) => {
                    if let Some(o) = self.objects.get_mut(&oid) {
                        match prev {
                            Some(v) => {
                                o.pages.insert(idx, v);
                            }
                            None => {
                                o.pages.remove(&idx);
                            }
                        }
                    }
                }
                None => break,
            }
        }
        self.journal = Some(j);
    }

    /// The state before the changes logged after `mark` (one command: the one in flight).
    pub fn before(&self, mark: usize) -> Before<'_> {
        let mut b = Before::default();
        let Some(j) = self.journal.as_ref() else {
            return b;
        };
        for u in j.iter().skip(mark) {
            match u {
                Undo::Object(oid, prev) => {
                    b.objects.entry(*oid).or_insert(prev.as_ref());
                }
                Undo::Size(oid, size) => {
                    b.sizes.entry(*oid).or_insert(*size);
                }
                Undo::Page(oid, idx, prev) => {
                    b.pages.entry((*oid, *idx)).or_insert(prev.as_ref());
                }
            }
        }
        b
    }

    /// Apply an acknowledged command with write id `wid`.
    pub fn apply(&mut self, op: &OsdOp, wid: u64, page: u64) {
        let log = self.journal.as_mut();
        match *op {
            OsdOp::Create { oid } => {
                let prev = self.objects.insert(oid, RefObject::default());
                if let Some(j) = log {
                    j.push(Undo::Object(oid, prev));
                }
            }
            OsdOp::Remove { oid } => {
                let prev = self.objects.remove(&oid);
                if let Some(j) = log {
                    j.push(Undo::Object(oid, prev));
                }
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
                let mut log = log;
                for i in offset_bytes / page..=(end - 1) / page {
                    let a = (offset_bytes.max(i * page) - i * page) as u32;
                    let b = (end.min((i + 1) * page) - i * page) as u32;
                    let e = o.pages.entry(i).or_default();
                    if let Some(j) = log.as_deref_mut() {
                        j.push(Undo::Page(oid, i, (!e.is_empty()).then(|| e.clone())));
                    }
                    overlay(e, a, b, wid);
                }
                if let Some(j) = log {
                    j.push(Undo::Size(oid, o.size));
                }
                o.size = o.size.max(end);
            }
            OsdOp::Truncate { oid, size_bytes } => {
                let Some(o) = self.objects.get_mut(&oid) else {
                    return;
                };
                let keep = size_bytes.div_ceil(page);
                let cut = o.pages.split_off(&keep);
                let mut log = log;
                if let Some(j) = log.as_deref_mut() {
                    j.extend(cut.into_iter().map(|(k, v)| Undo::Page(oid, k, Some(v))));
                }
                if size_bytes % page != 0 {
                    if let Some(segs) = o.pages.get_mut(&(size_bytes / page)) {
                        if let Some(j) = log.as_deref_mut() {
                            j.push(Undo::Page(oid, size_bytes / page, Some(segs.clone())));
                        }
                        *segs = clip(segs, (size_bytes % page) as u32);
                    }
                }
                if let Some(j) = log {
                    j.push(Undo::Size(oid, o.size));
                }
                o.size = size_bytes;
            }
            _ => {}
        }
    }
}

/// `segs` as [`norm`] gives them, into `out` (no allocation once `out` has grown).
fn norm_into(segs: &[(u32, u32, u64)], len: u32, out: &mut Segs) {
    out.clear();
    let mut sorted = true;
    let mut last = (0u32, 0u32, 0u64);
    for &(a, b, w) in segs {
        if a >= len {
            continue;
        }
        let s = (a, b.min(len), w);
        if s.1 <= s.0 {
            continue;
        }
        if !out.is_empty() && s < last {
            sorted = false;
        }
        last = s;
        out.push(s);
    }
    if !sorted {
        out.sort_unstable();
    }
    let mut n = 0;
    for i in 0..out.len() {
        let s = out[i];
        if n > 0 && out[n - 1].1 == s.0 && out[n - 1].2 == s.2 {
            out[n - 1].1 = s.1;
        } else {
            out[n] = s;
            n += 1;
        }
    }
    out.truncate(n);
}

/// `segs` cut to `[0, n)` as [`clip`] cuts them, without copying.
fn cut_to(segs: &[(u32, u32, u64)], n: u32) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
    segs.iter()
        .filter(move |x| x.0 < n)
        .map(move |&(a, b, w)| (a, b.min(n), w))
}

/// One candidate state of an object for [`compare_device`]: a reference object, possibly
/// seen through the changes of the command in flight.
#[derive(Clone, Copy)]
struct Cand<'a> {
    obj: &'a RefObject,
    size: u64,
    over: Option<&'a HashMap<(u64, u64), Option<&'a Segs>>>,
}

/// Compare what `dev` reads back with the reference after the acknowledged commands and the
/// command in flight (`after`) and before that command (`before`): as [`compare`] on
/// [`Device::logical`] — every object must exist, be absent, have a size and read back each
/// page as in one of the two (each page wholly old or wholly new) — but streamed over the
/// device's mapping without building either side. Returns the first mismatch.
pub fn compare_device(
    dev: &mut Device,
    after: &Reference,
    before: &Before<'_>,
    page: u64,
) -> Result<(), String> {
    let live = dev.live_objects();
    let mut oids: Vec<(u64, u32)> = after.objects.keys().map(|&o| (o, u32::MAX)).collect();
    oids.extend(before.objects.keys().map(|&o| (o, u32::MAX)));
    oids.extend(live.iter().copied());
    // One row per object id, the live slot (if any) last.
    oids.sort_unstable();
    let (mut gbuf, mut wbuf) = (Segs::new(), Segs::new());
    let mut i = 0;
    while i < oids.len() {
        let oid = oids[i].0;
        let mut slot = None;
        while i < oids.len() && oids[i].0 == oid {
            if oids[i].1 != u32::MAX {
                slot = Some(oids[i].1);
            }
            i += 1;
        }
        let a = after.objects.get(&oid).map(|o| Cand {
            obj: o,
            size: o.size,
            over: None,
        });
        let b = match before.objects.get(&oid) {
            Some(prev) => prev.map(|o| Cand {
                obj: o,
                size: o.size,
                over: None,
            }),
            None => after.objects.get(&oid).map(|o| Cand {
                obj: o,
                size: before.sizes.get(&oid).copied().unwrap_or(o.size),
                over: (!before.pages.is_empty()).then_some(&before.pages),
            }),
        };
        let Some(s) = slot else {
            if a.is_none() || b.is_none() {
                continue;
            }
            return Err(format!(
                "object {oid}: acknowledged, missing after recovery"
            ));
        };
        if a.is_none() && b.is_none() {
            return Err(format!(
                "object {oid}: removed (or never created), but recovered"
            ));
        }
        let cands = [a, b];
        static EMPTY: BTreeMap<u64, Segs> = BTreeMap::new();
        let mut iters = cands.map(|c| c.map_or(&EMPTY, |c| &c.obj.pages).iter().peekable());
        let mut err: Option<String> = None;
        let mut next = 0u64;
        // Pages in [next, upto) are unmapped (read as nothing); then page `k` reads `got`.
        let mut check = |k: u64,
                         got: Option<&[(u32, u32, u64)]>,
                         l: u32,
                         size: u64,
                         err: &mut Option<String>| {
            if err.is_some() || k >= size.div_ceil(page) {
                return;
            }
            let len = (size - k * page).min(page) as u32;
            let got = got.unwrap_or(&[]);
            let gl = l.min(len);
            let mut normed = false;
            let mut ok = false;
            for (c, it) in cands.iter().zip(iters.iter_mut()) {
                let Some(c) = c else { continue };
                // The reference's pages in index order, advanced with `k`.
                while it.peek().is_some_and(|e| *e.0 < k) {
                    it.next();
                }
                let here = it.peek().filter(|e| *e.0 == k).map(|e| e.1);
                let want = c
                    .over
                    .and_then(|m| m.get(&(oid, k)).copied())
                    .unwrap_or(here);
                let want = want.map_or(&[][..], |v| &v[..]);
                // Equal once cut to their lengths: equal after [`norm`] too (the common case,
                // without copying).
                if cut_to(got, gl).eq(cut_to(want, len)) {
                    ok = true;
                    break;
                }
                if !normed {
                    norm_into(got, gl, &mut gbuf);
                    normed = true;
                }
                norm_into(want, len, &mut wbuf);
                if wbuf == gbuf {
                    ok = true;
                    break;
                }
            }
            if !ok {
                norm_into(got, gl, &mut gbuf);
                let want: Vec<Segs> = cands
                    .iter()
                    .flatten()
                    .map(|c| {
                        let w = c
                            .over
                            .and_then(|m| m.get(&(oid, k)).copied())
                            .unwrap_or_else(|| c.obj.pages.get(&k));
                        norm(w.cloned().unwrap_or_default(), len)
                    })
                    .collect();
                *err = Some(format!(
                    "object {oid}: page {k}: write ids {gbuf:?} after recovery, acknowledged \
                     {want:?}"
                ));
            }
        };
        // The size first (it bounds the pages compared).
        let size = dev.object_size(s);
        let sizes: Vec<u64> = cands.iter().flatten().map(|c| c.size).collect();
        if !sizes.contains(&size) {
            return Err(format!(
                "object {oid}: size {size} after recovery, acknowledged {sizes:?}"
            ));
        }
        let end = size.div_ceil(page);
        dev.read_back(s, |k, got, l| {
            while next < k.min(end) && err.is_none() {
                check(next, None, 0, size, &mut err);
                next += 1;
            }
            check(k, got, l, size, &mut err);
            next = next.max(k + 1);
        });
        while err.is_none() && next < end {
            check(next, None, 0, size, &mut err);
            next += 1;
        }
        if let Some(e) = err {
            return Err(e);
        }
    }
    Ok(())
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

/// Compare the objects a device reads back ([`Device::logical`]) with the reference (and,
/// for the command in flight, the reference after it: each page may be wholly old or wholly
/// new). Returns the first mismatch.
pub fn compare(
    got: &BTreeMap<u64, LogicalObject>,
    before: &Reference,
    after: &Reference,
    page: u64,
) -> Result<(), String> {
    let mut oids: Vec<u64> = before.objects.keys().copied().collect();
    oids.extend(after.objects.keys().copied());
    oids.extend(got.keys().copied());
    oids.sort_unstable();
    oids.dedup();
    for oid in oids {
        let r = got.get(&oid);
        let cands = [before.objects.get(&oid), after.objects.get(&oid)];
        let Some((size, pages)) = r else {
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
        let size = *size;
        let sizes: Vec<u64> = cands.iter().flatten().map(|c| c.size).collect();
        if !sizes.contains(&size) {
            return Err(format!(
                "object {oid}: size {size} after recovery, acknowledged {sizes:?}"
            ));
        }
        for idx in 0..size.div_ceil(page) {
            let len = (size - idx * page).min(page) as u32;
            let got = norm(pages.get(&idx).cloned().unwrap_or_default(), len);
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
    /// Commands run once before the cut window (preconditioning and the prefix): each cut
    /// starts from a clone of the device after them.
    pub window_start: u64,
    /// Flash operations (programs and erases) in the cut window of the uncut run, and those
    /// cuts are drawn from (all of them, or those of `CrashOpts::cut_only`).
    pub flash_ops: u64,
    pub cut_candidates: u64,
    pub cuts: u32,
    /// Flash operations of the uncut window by class (`program_<type>_<source>`, `erase`):
    /// what the cuts are drawn from.
    pub ops_by_class: BTreeMap<String, u64>,
    /// Cuts by what the interrupted operation was (`program_<type>_<source>`, `erase`).
    pub cuts_by_op: BTreeMap<String, u32>,
    /// Cuts after which the recovered device did not read back the acknowledged state.
    pub failures: u32,
    /// Cuts after which the recovered device's DRAM tables differ from the truth derived from
    /// flash (global index, page table, GC table, clean index nodes), or its valid counts
    /// from reachability ([`Device::check_tables`], [`Device::check_reachability`]).
    pub table_failures: u32,
    /// Cuts after which replay on the recovered device failed, or its final state (after
    /// `continued_commands`) differs from the reference or its tables from the truth.
    pub replay_failures: u32,
    /// Commands replayed on recovered devices after recovery (the command in flight is
    /// reissued unless it landed), summed over the cuts.
    pub continued_commands: u64,
    /// The first few failures of any kind, one line each.
    pub failure_examples: Vec<String>,
    /// Second cuts inside recovery's write-back (every tenth cut), and how many gave a
    /// different recovered state.
    pub recovery_cuts: u32,
    pub recovery_cut_mismatches: u32,
    /// Most pages one capacitor flush needed, and flushes over `osd.backup_flush_pages`.
    pub backup_pages_max: u32,
    pub backup_over_budget: u32,
    /// Mean objects in IC_OBJ and data pages re-applied per recovery.
    pub ic_objects_mean: f64,
    pub reapplied_pages_mean: f64,
    /// Mean pages recovery programmed (index and onodes written back, `Src::Recovery`).
    pub recovery_writes_mean: f64,
    /// Recovery time estimate (spec §2 \[N\]): every programmed page's OOB read once, 50 µs
    /// each, spread over the dies, plus recovery's writes, s (mean over cuts).
    pub recovery_time_s_mean: f64,
    /// CPU time of this thread: the run up to the window and the uncut window (set-up), and
    /// per cut (its run, recovery, the checks and the continued replay), s. Measured, so not
    /// reproducible bit for bit.
    pub setup_cpu_s: f64,
    pub cpu_s_per_cut: f64,
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

/// The first difference of two read-back states.
fn logical_diff(a: &BTreeMap<u64, LogicalObject>, b: &BTreeMap<u64, LogicalObject>) -> String {
    for (oid, x) in a {
        match b.get(oid) {
            None => return format!("object {oid} only in the first"),
            Some(y) if y.0 != x.0 => return format!("object {oid}: size {} vs {}", x.0, y.0),
            Some(y) => {
                for (i, p) in &x.1 {
                    if y.1.get(i) != Some(p) {
                        return format!("object {oid}: page {i}: {p:?} vs {:?}", y.1.get(i));
                    }
                }
                if y.1.len() != x.1.len() {
                    return format!("object {oid}: {} vs {} pages", x.1.len(), y.1.len());
                }
            }
        }
    }
    "objects only in the second".into()
}

/// Options of [`crash_test_with`].
#[derive(Clone, Debug)]
pub struct CrashOpts {
    /// Commands before the cut window: run once, then every cut starts from a clone of
    /// that device (flash image and DRAM state) and of the reference.
    pub window_start: usize,
    /// Commands replayed on the recovered device after each cut (`usize::MAX`: to the end
    /// of the command list).
    pub continue_commands: usize,
    /// Draw cuts only among the flash operations whose class (`program_<type>_<source>`,
    /// `erase`, as in [`CrashReport::cuts_by_op`]) contains this text: cuts placed where a
    /// part of recovery matters (e.g. `program_index` for the LCS rollback).
    pub cut_only: Option<String>,
}

impl Default for CrashOpts {
    fn default() -> Self {
        CrashOpts {
            window_start: 0,
            continue_commands: usize::MAX,
            cut_only: None,
        }
    }
}

/// Cut the power at `cuts` seeded points of `commands` on the device `cfg` describes,
/// recover, and check every object. Every tenth cut also cuts recovery itself once and
/// checks that the next attempt gives the same state. See [`crash_test_with`].
pub fn crash_test(
    cfg: &Config,
    commands: &[OsdCommand],
    cuts: u32,
    seed: u64,
    variant: Variant,
) -> Result<CrashReport, NandlabError> {
    crash_test_with(cfg, commands, cuts, seed, variant, &CrashOpts::default())
}

/// One recovery: the device rebuilt from `img` and written back; `cut`: cut its write-back
/// at its `cut`-th flash operation (then `Err` with the image it left).
fn recover_device(
    cfg: &Config,
    img: FlashImage,
    v: Variant,
    leaf_cap: usize,
    cut: Option<u64>,
) -> Result<Result<(Device, Recovered), FlashImage>, NandlabError> {
    let rec = recover(&img, v, leaf_cap);
    let states = (!v.reachability).then(|| Device::image_states(&img));
    let mut dev = Device::from_recovery(cfg, img, &rec)?;
    if let Some(j) = cut {
        dev.cut_at = dev.flash_ops + j;
    }
    match dev.finish_recovery(&rec) {
        Ok(()) => {
            if let Some(st) = states {
                dev.unreachable_states(st, &rec.page_table);
            }
            Ok(Ok((dev, rec)))
        }
        Err(OsdError::PowerCut { .. }) => {
            dev.power_loss(false);
            Ok(Err(dev.into_image()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Cut the power at `cuts` seeded points, uniform over the flash operations (programs and
/// erases) of the commands from `opts.window_start` on, recover, and check (spec §7
/// item 6):
///
/// * the recovered device reads back every acknowledged write (the command in flight may
///   land or not, page by page) and no removed object ([`compare`]);
/// * its rebuilt DRAM tables equal the truth derived from flash and its valid counts equal
///   reachability ([`Device::check_tables`], [`Device::check_reachability`]);
/// * replay continues on it (`opts.continue_commands` more commands, the one in flight
///   reissued unless it landed), and the final state again matches the reference and the
///   checks;
/// * every tenth cut, a second cut inside recovery's write-back, and recovering again gives
///   the same objects.
pub fn crash_test_with(
    cfg: &Config,
    commands: &[OsdCommand],
    cuts: u32,
    seed: u64,
    variant: Variant,
    opts: &CrashOpts,
) -> Result<CrashReport, NandlabError> {
    let page = cfg.device.page_size_bytes as u64;
    let o = cfg.osd.clone().unwrap_or_default();
    let leaf_cap = (cfg.device.page_size_bytes / o.leaf_entry_bytes.max(1)) as usize;
    let program_ns = 900_000.0;
    let ws = opts.window_start.min(commands.len());
    let cpu0 = cpu_time::ThreadTime::try_now().ok();
    // The run up to the window, once: the snapshot every cut starts from.
    let mut base = Device::new(cfg)?;
    base.record_contents();
    let mut r = Reference::default();
    for (i, c) in commands[..ws].iter().enumerate() {
        let wid = i as u64 + 1;
        base.write_id = wid;
        base.execute(&c.op)?;
        r.apply(&c.op, wid, page);
    }
    // Each cut applies its commands to this one reference and undoes them after its checks.
    r.journal();
    let base_ops = base.flash_ops;
    // The uncut window: how many flash operations, and what each is.
    let mut dev = base.clone();
    dev.op_log = Some(Vec::new());
    for (i, c) in commands.iter().enumerate().skip(ws) {
        dev.write_id = i as u64 + 1;
        dev.execute(&c.op)?;
    }
    let total = dev.flash_ops - base_ops;
    let log = dev.op_log.take().unwrap_or_default();
    drop(dev);
    let mut rep = CrashReport {
        variant,
        commands: commands.len() as u64,
        window_start: ws as u64,
        flash_ops: total,
        cut_candidates: 0,
        cuts: 0,
        ops_by_class: BTreeMap::new(),
        cuts_by_op: BTreeMap::new(),
        failures: 0,
        table_failures: 0,
        replay_failures: 0,
        continued_commands: 0,
        failure_examples: Vec::new(),
        recovery_cuts: 0,
        recovery_cut_mismatches: 0,
        backup_pages_max: 0,
        backup_over_budget: 0,
        ic_objects_mean: 0.0,
        reapplied_pages_mean: 0.0,
        recovery_writes_mean: 0.0,
        recovery_time_s_mean: 0.0,
        setup_cpu_s: cpu0.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        cpu_s_per_cut: 0.0,
    };
    for &c in &log {
        *rep.ops_by_class.entry(op_name(c)).or_default() += 1;
    }
    let cpu1 = cpu_time::ThreadTime::try_now().ok();
    let cands: Vec<u64> = match &opts.cut_only {
        Some(pat) => (0..total)
            .filter(|&k| op_name(log[k as usize]).contains(pat.as_str()))
            .collect(),
        None => Vec::new(),
    };
    rep.cut_candidates = if opts.cut_only.is_some() {
        cands.len() as u64
    } else {
        total
    };
    if let (Some(pat), true) = (&opts.cut_only, cands.is_empty() && total > 0) {
        let present: std::collections::BTreeSet<String> = log.iter().map(|&c| op_name(c)).collect();
        return Err(NandlabError::Config(crate::config::ConfigError::Invalid {
            key: "cut_only".into(),
            value: format!("{pat:?}"),
            msg: format!(
                "no flash operation in the cut window is of a class containing it; the \
                 window has {}",
                present.into_iter().collect::<Vec<_>>().join(", ")
            ),
        }));
    }
    if rep.cut_candidates == 0 {
        return Ok(rep);
    }
    let mut rng = crate::rng::rng_stream(seed, 0x6372_6173);
    let (mut ic_sum, mut re_sum, mut w_sum, mut t_sum) = (0u64, 0u64, 0u64, 0.0);
    let note = |rep: &mut CrashReport, k: u64, what: &str, e: &str| {
        if rep.failure_examples.len() < 5 {
            rep.failure_examples.push(format!(
                "cut at flash op {k} ({}): {what}: {e}",
                op_name(log[k as usize])
            ));
        }
    };
    for _ in 0..cuts {
        let k = if opts.cut_only.is_some() {
            cands[rng.gen_range(0..cands.len())]
        } else {
            rng.gen_range(0..total)
        };
        *rep.cuts_by_op.entry(op_name(log[k as usize])).or_default() += 1;
        let mut dev = base.clone();
        dev.cut_at = base_ops + k;
        r.undo_to(0);
        // `r` becomes the reference after the command in flight; `mark` is where its
        // changes start (the state before it: `r.before(mark)`).
        let mut mark = None;
        let mut in_flight = commands.len();
        for (i, c) in commands.iter().enumerate().skip(ws) {
            let wid = i as u64 + 1;
            dev.write_id = wid;
            match dev.execute(&c.op) {
                Ok(()) => r.apply(&c.op, wid, page),
                Err(OsdError::PowerCut { .. }) => {
                    mark = Some(r.mark());
                    r.apply(&c.op, wid, page);
                    in_flight = i;
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let mark = mark.unwrap_or_else(|| r.mark());
        let bk = dev.power_loss_with(variant.capacitor, variant.onode_buffer);
        rep.backup_pages_max = rep.backup_pages_max.max(bk.pages);
        rep.backup_over_budget += bk.over_budget as u32;
        let img = dev.into_image();
        let programmed = img.programmed_pages();
        let dies = img.dies.max(1);
        rep.cuts += 1;
        let second = rep.cuts.is_multiple_of(10);
        let img2 = second.then(|| img.clone());
        let (mut rdev, rec) = match recover_device(cfg, img, variant, leaf_cap, None) {
            Ok(Ok(x)) => x,
            Ok(Err(_)) => return Err(NandlabError::Sim("recovery cut without a cut point".into())),
            Err(e) => {
                rep.failures += 1;
                note(&mut rep, k, "recovery", &e.to_string());
                continue;
            }
        };
        ic_sum += rec.ic_objects as u64;
        re_sum += rec.reapplied_pages;
        let w = rdev.counters.writes.iter().map(|t| t[4]).sum::<u64>();
        w_sum += w;
        t_sum += (programmed as f64 * 50e-6) / dies as f64 + w as f64 * program_ns * 1e-9;
        let got = if second { rdev.logical_digest() } else { 0 };
        let mut failed = false;
        if let Err(e) = compare_device(&mut rdev, &r, &r.before(mark), page) {
            rep.failures += 1;
            failed = true;
            note(&mut rep, k, "acknowledged data", &e);
        }
        if let Err(e) = rdev.check_reachability().and_then(|_| rdev.check_tables()) {
            rep.table_failures += 1;
            note(&mut rep, k, "recovered tables", &e);
        }
        if let Some(img2) = img2 {
            // A second cut inside recovery's write-back, after `j` of its flash operations:
            // recovering the image it leaves must give the same objects.
            let j = rng.gen_range(0..w.max(1));
            rep.recovery_cuts += 1;
            let again = match recover_device(cfg, img2, variant, leaf_cap, Some(j)) {
                Ok(Ok((d2, _))) => Ok(d2),
                Ok(Err(img3)) => match recover_device(cfg, img3, variant, leaf_cap, None) {
                    Ok(Ok((d3, _))) => Ok(d3),
                    Ok(Err(_)) => Err("cut without a cut point".to_string()),
                    Err(e) => Err(e.to_string()),
                },
                Err(e) => Err(e.to_string()),
            };
            // Equal digests: the same objects read back (the logical views are built only
            // to name a difference).
            let diff = match again {
                Ok(mut d) => {
                    (d.logical_digest() != got).then(|| logical_diff(&rdev.logical(), &d.logical()))
                }
                Err(e) => Some(e),
            };
            if let Some(d) = diff {
                rep.recovery_cut_mismatches += 1;
                note(
                    &mut rep,
                    k,
                    &format!("second cut in recovery at its op {j}"),
                    &d,
                );
            }
        }
        if failed {
            continue;
        }
        // Replay continues on the recovered device: the command in flight is reissued
        // unless it landed (a CREATE whose object exists, a REMOVE whose object is gone),
        // so the reference is the one after it.
        let mut start = in_flight;
        if let Some(c) = commands.get(in_flight) {
            let landed = match c.op {
                OsdOp::Create { oid } => rdev.has_object(oid),
                OsdOp::Remove { oid } => !rdev.has_object(oid),
                _ => false,
            };
            if landed {
                start += 1;
            }
        }
        let end = commands
            .len()
            .min(start.saturating_add(opts.continue_commands));
        let mut err = None;
        for (i, c) in commands.iter().enumerate().take(end).skip(start) {
            rdev.write_id = i as u64 + 1;
            if let Err(e) = rdev.execute(&c.op) {
                err = Some(format!("command {i} {:?}: {e}", c.op));
                break;
            }
            rep.continued_commands += 1;
            if i != in_flight {
                r.apply(&c.op, i as u64 + 1, page);
            }
        }
        let err = err
            .or_else(|| compare_device(&mut rdev, &r, &Before::default(), page).err())
            .or_else(|| {
                rdev.check_reachability()
                    .and_then(|_| rdev.check_tables())
                    .err()
            });
        if let Some(e) = err {
            rep.replay_failures += 1;
            note(&mut rep, k, "replay after recovery", &e);
        }
    }
    let n = rep.cuts.max(1) as f64;
    rep.ic_objects_mean = ic_sum as f64 / n;
    rep.reapplied_pages_mean = re_sum as f64 / n;
    rep.recovery_writes_mean = w_sum as f64 / n;
    rep.recovery_time_s_mean = t_sum / n;
    rep.cpu_s_per_cut = cpu1.map_or(0.0, |t| t.elapsed().as_secs_f64()) / n;
    Ok(rep)
}
