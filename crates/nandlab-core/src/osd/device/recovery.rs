//! Power loss and recovery on the device side: the capacitor-backed flush, the bound that
//! keeps what it must write within its budget, the device rebuilt from a flash image and
//! [`scan`](super::scan)'s tables, and step 2's write-back.
//!
//! Source: §4.4.5 (IC_OBJ = ⟨oid, LCS⟩ and the dirty onodes flushed on back-up power;
//! rollback to the LCS, then re-apply data written after it), Algorithm 1, F33.
//!
//! Readings (\[N\], spec §2 gaps, §5): the tail buffers of new data join the capacitor flush
//! within `osd.backup_flush_pages`; the back-up set is kept within that budget by writing
//! back the object uncommitted longest; valid counts are rebuilt by reachability.

use super::*;

/// What the capacitor-backed flush wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackupStats {
    /// Pages programmed (tail buffers and backup records).
    pub pages: u32,
    /// Objects listed in IC_OBJ.
    pub ic_objects: u32,
    /// The flush needed more pages than `osd.backup_flush_pages`: the rest was lost.
    pub over_budget: bool,
}

impl Device {
    /// Power is lost (after a [`OsdError::PowerCut`], or between commands): the
    /// capacitor-backed flush (§4.4.5.1) programs, within `osd.backup_flush_pages`, the tail
    /// buffers of new data (spec §5 \[N\]) and then IC_OBJ = ⟨oid, LCS⟩ of every object with
    /// metadata only in DRAM, with their dirty onodes. `capacitor = false` writes nothing
    /// (the negative control).
    pub fn power_loss(&mut self, capacitor: bool) -> BackupStats {
        self.power_loss_with(capacitor, true)
    }

    /// [`Device::power_loss`]; `onode_buffer = false` is the negative control of the onode
    /// write buffer: the capacitor flush leaves it out, yet counts its onodes as written
    /// (the objects it would commit do not go to IC_OBJ).
    pub fn power_loss_with(&mut self, capacitor: bool, onode_buffer: bool) -> BackupStats {
        self.cut_at = u64::MAX;
        self.cur.clear();
        self.gc_reads.clear();
        self.gc_progs.clear();
        self.gc_erases.clear();
        self.next_content = None;
        self.next_csn = 0;
        let mut st = BackupStats::default();
        if !capacitor {
            return st;
        }
        // No GC on back-up power: the flush goes to the open chunks' free pages.
        self.in_gc = true;
        let budget = self.o.backup_flush_pages;
        // The onode write buffer first: what it commits leaves IC_OBJ.
        while !self.obuf.is_empty() {
            if st.pages >= budget {
                st.over_budget = true;
                break;
            }
            let die = self.rr[ONODE] % self.dies;
            self.rr[ONODE] = (die + 1) % self.dies;
            let ok = if onode_buffer {
                self.program_obuf(Some(die)).is_ok()
            } else {
                self.drop_obuf();
                true
            };
            if !ok {
                st.over_budget = true;
                break;
            }
            st.pages += onode_buffer as u32;
        }
        let ic: Vec<u32> = (0..self.objs.len() as u32)
            .filter(|&s| {
                let ob = &self.objs[s as usize];
                // a removed object whose tombstone is not on flash yet may come back
                (ob.live || ob.onode_ppn == NONE)
                    && (ob.onode_dirty
                        || ob.uncommitted
                        || ob.tail_page != u64::MAX
                        || ob.dirty.iter().any(|&id| {
                            let n = &self.nodes.nodes[id as usize];
                            !n.free && n.dirty > 0 && n.obj == s
                        }))
            })
            .collect();
        st.ic_objects = ic.len() as u32;
        for &s in &ic {
            if self.objs[s as usize].tail_page == u64::MAX {
                continue;
            }
            if st.pages >= budget {
                st.over_budget = true;
                break;
            }
            let ob = &mut self.objs[s as usize];
            let (page, fill, oid) = (ob.tail_page, ob.tail_fill, ob.oid);
            let segs = std::mem::take(&mut ob.tail_segs);
            ob.tail_page = u64::MAX;
            let die = self.rr[DATA] % self.dies;
            self.rr[DATA] = (die + 1) % self.dies;
            self.next_content = self.contents.is_some().then_some(PageContent::Data(segs));
            if self.program_data_on(s, page, fill, die, oid).is_err() {
                st.over_budget = true;
                break;
            }
            st.pages += 1;
        }
        // Backup records, packed: 16 B per IC_OBJ entry, one onode each per dirty onode.
        let per_page = self.page as usize;
        let mut recs: Vec<(usize, u32)> = Vec::new();
        // Every IC_OBJ object's DRAM onode goes too: its attributes are newer than its last
        // committed onode whether it is dirty in the cache or queued for writing.
        for &s in &ic {
            recs.push((16, s));
            recs.push((self.o.onode_bytes as usize, s | 0x8000_0000));
        }
        let mut epoch = 0;
        let mut k = 0;
        while k < recs.len() {
            if st.pages >= budget {
                st.over_budget = true;
                break;
            }
            let mut used = 0;
            let mut ic_list = Vec::new();
            let mut onodes = Vec::new();
            let csn = self.sn + 1;
            if epoch == 0 {
                epoch = csn;
            }
            while k < recs.len() && used + recs[k].0 <= per_page {
                let (b, x) = recs[k];
                used += b;
                let s = x & 0x7FFF_FFFF;
                if x & 0x8000_0000 != 0 {
                    onodes.push(self.onode_rec(s, csn, false));
                } else {
                    let ob = &self.objs[s as usize];
                    ic_list.push((ob.oid, ob.lcs));
                }
                k += 1;
            }
            let die = self.rr[ONODE] % self.dies;
            self.rr[ONODE] = (die + 1) % self.dies;
            self.next_content = Some(PageContent::Backup {
                epoch,
                ic: ic_list,
                onodes,
            });
            if self
                .program(BACKUP, die, Src::Recovery, 0, 0, used as u32, NONE)
                .is_err()
            {
                st.over_budget = true;
                break;
            }
            st.pages += 1;
        }
        self.in_gc = false;
        st
    }

    /// Drop every DRAM structure: what is left is flash.
    pub fn into_image(self) -> FlashImage {
        // Sparse chunks arise only without recorded contents, which an image needs.
        debug_assert!(self.sparse.iter().all(Option::is_none));
        let pages = &self.pages;
        let stripes = self.stripes.restrict(|c| {
            pages[c]
                .as_ref()
                .is_some_and(|p| p.state.iter().any(|&st| st == VALID || st == INVALID))
        });
        FlashImage {
            stripes,
            page_bytes: self.page,
            pages_per_chunk: self.ppc,
            dies: self.dies,
            virtual_tree: self.o.virtual_tree,
            yaffs: self.yaffs,
            pages: self.pages,
            contents: self.contents.unwrap_or_else(|| Contents::new(0, self.ppc)),
            erase_count: self.erase_count,
        }
    }

    /// Pages the capacitor-backed flush of [`Device::power_loss`] needs at most now: the tail
    /// buffers in use, then the IC_OBJ entries (16 B) and DRAM onodes (`osd.onode_bytes`) of
    /// the objects with uncommitted state, packed in order. An upper bound, kept in O(1): the
    /// object count is that of `uncommitted` flags (power_loss also skips removed objects
    /// whose tombstone is on flash), and every page of the packing but the last holds more
    /// than `page − max(16, onode_bytes)` bytes.
    pub(super) fn backup_pages_bound(&self) -> u64 {
        let n = self.uncommitted_objs;
        let mut p = self.tails_used as u64 + !self.obuf.is_empty() as u64;
        if n > 0 {
            let ob = self.o.onode_bytes as u64;
            let per = self.page as u64 - ob.max(16) + 1;
            p += (n * (16 + ob)).div_ceil(per);
        }
        p
    }

    /// The most pages [`Device::backup_pages_bound`] may reach after a command:
    /// `osd.backup_flush_pages` less a headroom of 3 pages (what the next command can add
    /// before a cut or the next check: one tail buffer, its object's records, and the records
    /// of one GC-moved object between two checks of the GC loop). `osd.backup_flush_pages`
    /// is at least 3 (config check).
    pub(super) fn backup_limit(&self) -> u64 {
        (self.o.backup_flush_pages as u64).saturating_sub(3)
    }

    /// Keep the back-up set within the capacitor's budget (§4.4.5: the thesis's premise is
    /// that the DRAM state not on flash always fits the capacitor-backed flush; spec §7 item 6
    /// "the back-up flush stays ≤ budget"). While the bound of [`Device::backup_pages_bound`]
    /// exceeds [`Device::backup_limit`], the object whose state
    /// became uncommitted first is written back: its tail buffer, its dirty index nodes, its
    /// onode (costed as diff-cache eviction writes, `Src::CacheEvict`). The thesis gives no
    /// such rule: reading \[N\] (issue 17).
    pub(super) fn bound_backup(&mut self) -> Result<(), OsdError> {
        let limit = self.backup_limit();
        let mut tries = self.uncommitted_q.len();
        while tries > 0 && self.backup_pages_bound() > limit {
            tries -= 1;
            let Some((s, q)) = self.uncommitted_q.pop_front() else {
                break;
            };
            let ob = &self.objs[s as usize];
            if !ob.uncommitted || ob.unc_seq != q {
                continue;
            }
            // A removed object's tombstone is queued by its command: leave it to that.
            if ob.live {
                self.flush_tail(s)?;
                self.flush_objects(&[s], |_| Src::CacheEvict)?;
                if self.objs[s as usize].uncommitted {
                    self.objs[s as usize].commit_req = true;
                    self.pending.push((s, Src::CacheEvict, false));
                }
                self.write_pending_onodes()?;
            }
            let ob = &self.objs[s as usize];
            if ob.uncommitted && ob.unc_seq == q {
                self.uncommitted_q.push_back((s, q));
            }
        }
        Ok(())
    }

    /// A running device rebuilt from `img` and what [`crate::osd::crash::recover`] found in
    /// it (Algorithm 1's DRAM tables): the global index (object table) from the newest
    /// onodes, each object's B+ tree loaded node by node from its index pages (through the
    /// rebuilt page table under the virtual tree), the page table of the nodes reached, the
    /// byte-level GC table of the onode pages holding stale onodes (most invalid first, up
    /// to its size), and the chunk valid counts by reachability (spec §2 gap 5): a page is
    /// valid exactly when the recovered metadata reaches it (plus the capacitor flush until
    /// recovery finishes). Every partly written chunk is closed (its erased pages wait for
    /// GC). No flash operation happens here: [`Device::finish_recovery`] writes back.
    pub fn from_recovery(
        cfg: &Config,
        img: FlashImage,
        rec: &Recovered,
    ) -> Result<Device, crate::config::ConfigError> {
        let mut d = Device::new(cfg)?;
        let FlashImage {
            pages,
            contents,
            erase_count,
            stripes,
            ..
        } = img;
        d.pages = pages;
        d.stripes = stripes;
        d.contents = Some(contents);
        if erase_count.len() == d.erase_count.len() {
            d.erase_count = erase_count;
        }
        let ppc = d.ppc as usize;
        let mut max_sn = 0;
        let mut backups = Vec::new();

        for (c, p) in d.pages.iter_mut().enumerate() {
            let Some(p) = p.as_mut() else { continue };
            for off in 0..ppc {
                if p.state[off] == VALID || p.state[off] == INVALID {
                    max_sn = max_sn.max(p.sn[off]);
                    if p.ptype[off] as usize == BACKUP && p.state[off] == VALID {
                        backups.push((c * ppc + off) as u32);
                    }
                    p.state[off] = INVALID;
                }
                p.back[off] = NONE;
            }
        }
        d.sn = max_sn;
        for b in backups {
            d.mark_valid(b, BACKUP, NONE);
        }
        // A placeholder slot for the stale onodes of a page (no live object owns them).
        let ghost = d.objs.len() as u32;
        let mut g = Obj::new(u64::MAX);
        g.live = false;
        d.objs.push(g);
        let mut onode_pages: std::collections::BTreeMap<u32, Vec<(u32, u32)>> =
            std::collections::BTreeMap::new();
        let mut max_va = None;
        for (&oid, r) in &rec.objects {
            let s = d.objs.len() as u32;
            let mut ob = Obj::new(oid);
            ob.size = r.size;
            if let Some((ppn, k, csn)) = r.onode {
                ob.onode_ppn = ppn;
                ob.onode_idx = k;
                ob.onode_csn = csn;
                ob.lcs = csn;
                onode_pages.entry(ppn).or_default().push((k, s));
            }
            d.objs.push(ob);
            d.index.insert(oid, s);
            if d.yaffs {
                for (&idx, &(ppn, len)) in &r.pages {
                    if d.mark_valid(ppn, DATA, s) {
                        d.map_set(s, idx, leaf_val(ppn, len), false);
                    }
                }
                continue;
            }
            // Inline extents: the runs of their pages still on flash (a run broken by a
            // page that is gone is cut there).
            let mut runs: Vec<(u64, u64)> = Vec::new();
            let mut n_pages = 0;
            for &(k, v) in &r.inline {
                n_pages += d.valid_runs(s, k, v, &mut runs);
            }
            let vals: Vec<u64> = runs.iter().map(|r| r.1).collect();
            if d.fits_inline(&vals) {
                let ob = &mut d.objs[s as usize];
                for &(k, v) in &runs {
                    ob.inline[ob.n_inline as usize] = (k, v);
                    ob.n_inline += 1;
                }
                d.mapped += n_pages;
            } else {
                let pb = d.page as u64;
                for (k, v) in runs {
                    for j in 0..ext_pages(leaf_parts(v).1, pb) {
                        let pv = ext_page(v, j, pb, &d.stripes);
                        d.map_set(s, k + j, pv, false);
                    }
                }
            }
            if r.root != NONE {
                let root = d.load_node(s, r.root, NONE, &rec.page_table, &mut max_va);
                d.objs[s as usize].root = root;
            }
        }
        for &(oid, ppn, k, csn) in &rec.tombs {
            let s = d.objs.len() as u32;
            let mut ob = Obj::new(oid);
            ob.live = false;
            ob.onode_ppn = ppn;
            ob.onode_idx = k;
            ob.onode_csn = csn;
            ob.lcs = csn;
            d.objs.push(ob);
            onode_pages.entry(ppn).or_default().push((k, s));
        }
        // Onode pages: one record per page, its slots in page order (stale ones → ghost).
        let mut stale: Vec<(u32, u32)> = Vec::new();
        for (&ppn, list) in &onode_pages {
            let n = match d.content_of(ppn) {
                Some(PageContent::Onode(recs)) => recs.len(),
                _ => list.iter().map(|&(k, _)| k as usize + 1).max().unwrap_or(0),
            };
            let r = d.alloc_opage();
            d.opages[r as usize].slots = vec![ghost; n];
            for &(k, s) in list {
                d.opages[r as usize].slots[k as usize] = s;
            }
            d.opages[r as usize].live = list.len() as u32;
            d.mark_valid(ppn, ONODE, r);
            if n > list.len() {
                stale.push(((n - list.len()) as u32, ppn));
            }
        }
        if d.o.mlgc {
            stale.sort_unstable_by(|a, b| b.cmp(a));
            for (n, ppn) in stale {
                if d.gct_entries + n as u64 > d.gct_max_entries {
                    continue;
                }
                let bytes = n * d.o.onode_bytes;
                d.gct.insert(ppn, (bytes, n));
                d.gct_order.insert((bytes, ppn));
                d.gct_entries += n as u64;
            }
        }
        // Page table of the nodes reached; the other VAs are free.
        if let Some(m) = max_va {
            d.va_next = m + 1;
            for va in (0..=m).rev() {
                if d.pt_get(va) == NONE {
                    d.va_free.push(va);
                }
            }
        }
        // YAFFS2-like: the chunks holding a shrink header (valid or superseded), and whether
        // each object's header is one.
        if d.yaffs {
            for c in 0..d.pages.len() {
                let hit = (0..d.ppc).any(|off| {
                    let ppn = c as u32 * d.ppc + off;
                    let p = d.pages[c].as_ref();
                    p.is_some_and(|p| {
                        p.ptype[off as usize] as usize == ONODE
                            && matches!(p.state[off as usize], VALID | INVALID)
                    }) && matches!(d.content_of(ppn), Some(PageContent::Onode(r)) if r.iter().any(|r| r.shrink))
                });
                d.chunks[c].shrink = hit;
            }
            for c in 0..d.pages.len() as u32 {
                if !d.chunks[c as usize].shrink {
                    continue;
                }
                for off in 0..d.ppc {
                    let ppn = c * d.ppc + off;
                    let is = d.pages[c as usize].as_ref().is_some_and(|p| {
                        p.ptype[off as usize] as usize == ONODE
                            && matches!(p.state[off as usize], VALID | INVALID)
                    }) && matches!(d.content_of(ppn), Some(PageContent::Onode(r)) if r.iter().any(|r| r.shrink));
                    if is {
                        d.shrink_ppns.insert(ppn);
                    }
                }
            }
            for s in 0..d.objs.len() {
                let (ppn, k) = (d.objs[s].onode_ppn, d.objs[s].onode_idx as usize);
                if ppn != NONE {
                    d.objs[s].onode_shrink = matches!(d.content_of(ppn),
                        Some(PageContent::Onode(r)) if r.get(k).is_some_and(|r| r.shrink));
                }
            }
        }
        // Chunks: free when wholly erased, else closed with the valid count reached; a chunk
        // programmed from its first page up to a write pointer (then erased pages) is an open
        // chunk again: of the stream of its newest readable page (the newest per stream
        // wins), or, with only a torn page, of a stream left without one. A torn erase leaves
        // another pattern, and GC takes that chunk as it is.
        let nstreams = if d.separate { 4 } else { 1 };
        for die in 0..d.dies {
            d.free[die as usize].clear();
            let mut cands: Vec<(Option<usize>, u64, u32, u32)> = Vec::new();
            for k in (0..d.cpd).rev() {
                let c = (die * d.cpd + k) as usize;
                let p = d.pages[c].as_ref();
                let used = p.is_some_and(|p| p.state.iter().any(|&st| st != FREE));
                let m = &mut d.chunks[c];
                m.pins = 0;
                if let Some(p) = p.filter(|_| used) {
                    m.state = C_FULL;
                    m.first_sn = p.sn[0];
                    m.wp = d.ppc;
                    m.valid = p.state.iter().filter(|&&st| st == VALID).count() as u32;
                    let wp = p.state.iter().position(|&st| st == FREE);
                    if let Some(wp) = wp.filter(|&w| w > 0) {
                        if p.state[wp..].iter().all(|&st| st == FREE) {
                            let last = (0..wp).rev().find(|&o| p.state[o] != TORN);
                            let (stream, sn) = match last {
                                Some(o) if d.separate => {
                                    (Some((p.ptype[o] as usize).min(ONODE)), p.sn[o])
                                }
                                Some(o) => (Some(0), p.sn[o]),
                                None => (None, 0),
                            };
                            cands.push((stream, sn, c as u32, wp as u32));
                        }
                    }
                    m.stream = 0;
                } else {
                    m.state = C_FREE;
                    m.wp = 0;
                    m.valid = 0;
                    d.free[die as usize].push(c as u32);
                }
            }
            cands.sort_unstable_by_key(|c| std::cmp::Reverse(c.1));
            let mut rest = Vec::new();
            for (stream, _, c, wp) in cands {
                match stream {
                    Some(st) if d.open[die as usize][st] == NONE => {
                        d.open[die as usize][st] = c;
                        let m = &mut d.chunks[c as usize];
                        m.state = C_OPEN;
                        m.wp = wp;
                        m.stream = st as u8;
                    }
                    _ => rest.push((c, wp)),
                }
            }
            for (c, wp) in rest {
                if let Some(st) = (0..nstreams).find(|&st| d.open[die as usize][st] == NONE) {
                    d.open[die as usize][st] = c;
                    let m = &mut d.chunks[c as usize];
                    m.state = C_OPEN;
                    m.wp = wp;
                    m.stream = st as u8;
                }
            }
        }
        Ok(d)
    }

    /// Page states of `img` (for [`Device::unreachable_states`]).
    pub fn image_states(img: &FlashImage) -> Vec<Vec<u8>> {
        img.pages
            .iter()
            .map(|p| p.as_ref().map_or_else(Vec::new, |p| p.state.clone()))
            .collect()
    }

    /// The negative control of the table checks (crash `Variant::reachability` off): after
    /// recovery, every page flash left valid is valid again and every VA the scan found is
    /// in the page table, instead of what the recovered metadata reaches.
    pub fn unreachable_states(
        &mut self,
        states: Vec<Vec<u8>>,
        pt: &std::collections::BTreeMap<u32, u32>,
    ) {
        for (c, st) in states.into_iter().enumerate() {
            if let Some(p) = self.pages[c].as_mut() {
                for (off, s0) in st.into_iter().enumerate() {
                    if s0 == VALID && p.state[off] == INVALID && p.ptype[off] as usize != BACKUP {
                        p.state[off] = VALID;
                        // No object owns a data page here (one recovery reached and then
                        // superseded kept its owner: GC would map its stale copy back).
                        if p.ptype[off] as usize == DATA {
                            p.back[off] = NONE;
                        }
                        self.chunks[c].valid += 1;
                    }
                }
            }
        }
        for (&va, &ppn) in pt {
            if self.pt_get(va) == NONE {
                self.pt_set(va, ppn);
            }
        }
    }

    /// Mark the pages of extent ⟨`k`, `v`⟩ of `s` valid ([`Device::mark_valid`]) and append
    /// the runs of those that are (an extent cut where a page is gone) to `runs`; returns the
    /// pages marked. A page counts only if its OOB names this object and this page index
    /// ([`Device::data_oob_is`]): a reference of a last consistent state into a chunk erased
    /// and reused since (or numbered in another stripe since) resolves to some other page,
    /// which the OOB tells apart; the data written after the LCS is re-applied anyway.
    pub(super) fn valid_runs(&mut self, s: u32, k: u64, v: u64, runs: &mut Vec<(u64, u64)>) -> u64 {
        let pb = self.page as u64;
        let (pa, len) = leaf_parts(v);
        let n = ext_pages(len, pb);
        let oid = self.objs[s as usize].oid;
        let mut marked = 0;
        let mut open = false;
        for j in 0..n {
            let plen = ext_page_len(len, j, n, pb);
            let a = self.stripes.next(pa, j);
            let ok = match a.and_then(|a| self.stripes.ppn(a)) {
                Some(p) if self.data_oob_is(p, oid, k + j) => self.mark_valid(p, DATA, s),
                _ => false,
            };
            let (true, Some(a)) = (ok, a) else {
                open = false;
                continue;
            };
            marked += 1;
            match runs.last_mut() {
                Some(last) if open => {
                    let (ra, rlen) = leaf_parts(last.1);
                    last.1 = leaf_val(ra, rlen + plen);
                }
                _ => {
                    runs.push((k + j, leaf_val(a, plen)));
                    open = true;
                }
            }
        }
        marked
    }

    /// Whether page `ppn` is a readable data page whose OOB names object `oid` and page
    /// index `idx`.
    pub(super) fn data_oob_is(&self, ppn: u32, oid: u64, idx: u64) -> bool {
        let (c, off) = self.split(ppn);
        self.pages.get(c).and_then(|p| p.as_ref()).is_some_and(|p| {
            matches!(p.state[off], VALID | INVALID)
                && p.ptype[off] as usize == DATA
                && p.oid[off] == oid
                && p.aux[off] as u64 == idx
        })
    }

    /// Mark page `ppn` valid as a page of type `ty` owned by `back`, if it is a readable page
    /// of that type not valid yet (else the reference is broken: false).
    pub(super) fn mark_valid(&mut self, ppn: u32, ty: usize, back: u32) -> bool {
        let (c, off) = self.split(ppn);
        let Some(p) = self.pages.get_mut(c).and_then(|p| p.as_mut()) else {
            return false;
        };
        if p.state[off] != INVALID || p.ptype[off] as usize != ty {
            return false;
        }
        p.state[off] = VALID;
        p.back[off] = back;
        self.chunks[c].valid += 1;
        true
    }

    /// Load the node at `addr` (PA, or VA through `pt`) of object `s` and its subtree.
    pub(super) fn load_node(
        &mut self,
        s: u32,
        addr: u32,
        parent: u32,
        pt: &std::collections::BTreeMap<u32, u32>,
        max_va: &mut Option<u32>,
    ) -> u32 {
        let vt = self.o.virtual_tree;
        let (ppn, va) = if vt {
            match pt.get(&addr) {
                Some(&p) => (p, addr),
                None => return NONE,
            }
        } else {
            (addr, NONE)
        };
        let (level, keys, vals) = match self.content_of(ppn) {
            Some(PageContent::Index { level, keys, vals }) => (*level, keys.clone(), vals.clone()),
            _ => return NONE,
        };
        let id = self.nodes.alloc(s, level);
        if !self.mark_valid(ppn, INDEX, id) {
            self.nodes.release(id);
            self.nodes.freed.clear();
            return NONE;
        }
        {
            let n = &mut self.nodes.nodes[id as usize];
            n.parent = parent;
            n.ppn = ppn;
            n.va = va;
        }
        if vt {
            self.pt_set(va, ppn);
            self.va_live += 1;
            *max_va = Some(max_va.map_or(va, |m: u32| m.max(va)));
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (k, v) in keys.into_iter().zip(vals) {
            if level == 0 {
                runs.clear();
                self.mapped += self.valid_runs(s, k, v, &mut runs);
                let n = &mut self.nodes.nodes[id as usize];
                for &(k, v) in &runs {
                    n.keys.push(k);
                    n.vals.push(v);
                }
            } else {
                let c = self.load_node(s, v as u32, id, pt, max_va);
                if c != NONE {
                    let n = &mut self.nodes.nodes[id as usize];
                    n.keys.push(k);
                    n.vals.push(c as u64);
                }
            }
        }
        id
    }

    /// Step 2 of §4.4.5.1 on the rebuilt device: for each object of IC_OBJ, re-apply the data
    /// written after its LCS (in content-SN order), drop what lies past its size, and write
    /// its index and its onode back (F33; `Src::Recovery`); then the capacitor flush is
    /// superseded. Its writes may be cut like any others ([`Device::cut_at`]): the flush
    /// stays on flash until the end, and an object whose written-back onode is newer than its
    /// LCS has left IC_OBJ, so recovering again gives the same state.
    pub fn finish_recovery(&mut self, rec: &Recovered) -> Result<(), OsdError> {
        self.recovering = true;
        let ps = self.page as u64;
        let mut ic = Vec::new();
        for (&oid, r) in &rec.objects {
            if !r.ic {
                continue;
            }
            let Some(&s) = self.index.get(&oid) else {
                continue;
            };
            ic.push(s);
            for &(idx, ppn, len) in &r.reapply {
                if self.mark_valid(ppn, DATA, s) {
                    if let Some(old) = self.map_set(s, idx, leaf_val(ppn, len), false) {
                        self.invalidate(leaf_parts(old).0);
                    }
                }
            }
            let keep = self.objs[s as usize].size.div_ceil(ps);
            self.collect_entries(s);
            let doomed: Vec<u64> = self
                .entries_scratch
                .iter()
                .filter(|e| e.0 >= keep)
                .map(|e| e.0)
                .collect();
            for k in doomed {
                if let Some(v) = self.map_remove(s, k) {
                    self.invalidate(leaf_parts(v).0);
                }
            }
            self.set_onode_dirty(s, true);
        }
        let r = self
            .flush_objects(&ic, |_| Src::Recovery)
            .and_then(|_| self.write_pending_onodes())
            .and_then(|_| {
                // The written-back onodes must be on flash before the capacitor flush goes.
                while !self.obuf.is_empty() {
                    self.program_obuf(None)?;
                }
                Ok(())
            });
        self.clear_touched();
        self.plan.clear();
        self.cur.clear();
        self.gc_reads.clear();
        self.gc_progs.clear();
        self.gc_erases.clear();
        r?;
        for c in 0..self.pages.len() {
            for off in 0..self.ppc as usize {
                let hit = self.pages[c]
                    .as_ref()
                    .is_some_and(|p| p.state[off] == VALID && p.ptype[off] as usize == BACKUP);
                if hit {
                    self.invalidate(c as u32 * self.ppc + off as u32);
                }
            }
        }
        self.recovering = false;
        Ok(())
    }
}
