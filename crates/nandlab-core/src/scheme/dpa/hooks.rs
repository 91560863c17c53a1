//! DPA-DRM's [`Scheme`] hooks: device checks (R1), hidden redundant pages, placement, host
//! reads with their parallel redundant read (§2.5), idle-time flushes (R5), preconditioning
//! (R9) and the counters of the report.

use super::*;

impl Scheme for Dpa {
    fn name(&self) -> &'static str {
        "dpa"
    }

    fn validate_device(&self, dev: &DeviceInfo) -> Result<(), ConfigError> {
        let err = |key: &str, value: String, msg: &str| ConfigError::Invalid {
            key: key.into(),
            value,
            msg: msg.into(),
        };
        if !dev.static_allocation {
            return Err(err(
                "ftl.allocation",
                "\"dynamic\"".into(),
                "scheme dpa puts a data page's redundant page on another die, which needs the \
                 data page's plane before it is programmed: use ftl.allocation = \"static\" \
                 (configs/dpa.toml)",
            ));
        }
        if dev.dies < 2 {
            return Err(err(
                "device.channels",
                dev.dies.to_string(),
                "scheme dpa reads a data page's redundant page in parallel from another die \
                 (Guo §2.5); this device has 1 die: configure at least 2 (channels × \
                 chips_per_channel × dies_per_chip), or use configs/dpa.toml",
            ));
        }
        if dev.closed_loop && self.delayed {
            return Err(err(
                "host.mode",
                "\"closed\"".into(),
                "scheme dpa writes full redundant pages at idle time (delayed write, Guo §2.5) \
                 and a closed-loop replay has none: use host.mode = \"open\", or set \
                 scheme.params.delayed_write = false (every full redundant page is written at \
                 once)",
            ));
        }
        if dev.dram {
            return Err(err(
                "dram.capacity_bytes",
                "> 0".into(),
                "scheme dpa generates tags when a host write arrives; with the controller DRAM \
                 data cache on, the page reaches flash later or never: set \
                 dram.capacity_bytes = 0 (configs/dpa.toml)",
            ));
        }
        if dev.trim {
            return Err(err(
                "ftl.trim",
                "true".into(),
                "scheme dpa does not track discards (a trimmed page's tags would stay valid in \
                 its redundant page): set ftl.trim = false (configs/dpa.toml)",
            ));
        }
        if dev.regions > 0 {
            return Err(err(
                "regions",
                dev.regions.to_string(),
                "scheme dpa places pages by stream, not region: run it without [regions] \
                 (configs/dpa.toml)",
            ));
        }
        Ok(())
    }

    fn hidden_pages(&mut self, geo: &Geometry, logical_pages: u64) -> Result<u64, ConfigError> {
        let page = geo.page_size_bytes as usize;
        let tag_bytes = (page / self.chunk_bytes * TAG_BITS).div_ceil(8);
        let overflow = if self.overflow_param > 0 {
            self.overflow_param as usize
        } else {
            tag_bytes.saturating_sub(self.oob_tag_bytes)
        };
        if overflow == 0 || overflow > page {
            return Err(ConfigError::Invalid {
                key: "scheme.params.oob_tag_bytes".into(),
                value: self.oob_tag_bytes.to_string(),
                msg: format!(
                    "the tag overflow per data page is {overflow} B ({tag_bytes} B of tags, \
                     {} B in the OOB) with {page} B pages: it must be 1 ..= {page} B; \
                     without overflow there are no redundant pages (use scheme baseline)",
                    self.oob_tag_bytes
                ),
            });
        }
        if page / overflow > MAX_TAGS_PER_PAGE {
            return Err(ConfigError::Invalid {
                key: "scheme.params.overflow_bytes".into(),
                value: overflow.to_string(),
                msg: format!(
                    "at least {} B with {page} B pages (one redundant page holds the tags of \
                     at most {MAX_TAGS_PER_PAGE} data pages)",
                    page.div_ceil(MAX_TAGS_PER_PAGE)
                ),
            });
        }
        self.overflow = overflow;
        self.k = page / overflow;
        self.compact_at = (self.compact_fraction * self.k as f64).floor() as u8;
        self.logical = logical_pages as u32;
        self.planes = geo.planes();
        self.planes_div = DivU32::new(self.planes);
        self.ppd = geo.planes_per_die;
        self.dies = geo.dies();
        self.res_of_plane = vec![0; self.planes as usize];
        self.die_of_res = vec![0; self.planes as usize];
        for r in 0..self.planes {
            let q = geo.cwdp_plane(r);
            self.res_of_plane[q as usize] = r;
            self.die_of_res[r as usize] = q / self.ppd;
        }
        self.lpn_off = (0..self.planes)
            .map(|q| self.res_of_plane[q as usize].wrapping_sub(q))
            .collect();
        // Slots per plane: every tagged LPN in a flushed page that keeps more than
        // `compact_at` valid tags, plus open/buffered pages and parity, with 2× margin for an
        // uneven spread over planes.
        let per_page = (self.compact_at as u64 + 1).min(self.k as u64);
        let pages = logical_pages.div_ceil(per_page);
        let with_parity = pages + pages / self.stripe.max(1) as u64 + 2;
        let slack = self.dies as u64 * 2 + self.buffer_cap as u64 + 16;
        let slots64 = with_parity.div_ceil(self.planes as u64) * 2 + slack;
        let base64 = logical_pages.div_ceil(self.planes as u64) * self.planes as u64;
        if base64 + slots64 * self.planes as u64 >= u32::MAX as u64 {
            return Err(ConfigError::Invalid {
                key: "device.logical_capacity_bytes".into(),
                value: format!("{logical_pages} pages"),
                msg: format!(
                    "scheme dpa needs {} hidden pages for redundant tag pages above the logical \
                     capacity, more than 2^32 LPNs in all: use a smaller device",
                    slots64 * self.planes as u64
                ),
            });
        }
        let slots = slots64 as u32;
        self.slots = slots;
        self.base = base64 as u32;
        let ids = slots as usize * self.planes as usize;
        // Id 0 is NIL; every array is zeroed (lazily backed: see NIL).
        self.rmap = vec![NIL; logical_pages as usize];
        self.red = vec![[0; 16]; ids + 1];
        self.members = vec![0; (ids + 1) * self.k];
        self.free = (0..self.planes).map(|_| Vec::with_capacity(64)).collect();
        self.fresh = vec![0; self.planes as usize];
        self.open = vec![NIL; self.dies as usize];
        self.rr = vec![0; self.dies as usize];
        self.ready = VecDeque::with_capacity(self.buffer_cap + 1);
        self.stripe_parity = vec![NIL; self.planes as usize];
        self.stripe_fill = vec![0; self.planes as usize];
        self.pending_untimed = Vec::with_capacity(64);
        self.die_used = vec![0; self.dies as usize];
        Ok((self.base - self.logical) as u64 + ids as u64)
    }

    fn placement(&mut self, lpn: u32, source: Source, _ctx: &Ctx<'_>) -> Placement {
        self.placement_of(lpn, source)
    }

    fn prefetches(&self) -> bool {
        true
    }

    /// The map entry of `lpn`: every tagged host write reads and writes it, every host read
    /// reads it, at random LPNs.
    fn prefetch_lpn(&self, lpn: u32) {
        crate::prefetch::slice(&self.rmap, lpn as usize);
    }

    /// The record of `lpn`'s redundant page (a write invalidates a tag in it, a read checks
    /// its state and cache flag) and, for a read, the redundant page's L2P entry (looked up
    /// when it is not in DRAM or the cache).
    fn prefetch_mapped(&self, lpn: u32, read: bool, ftl: &crate::ftl::Ftl) {
        if let Some(&g) = self.rmap.get(lpn as usize) {
            if g != NIL {
                crate::prefetch::slice(&self.red, g as usize);
                if read {
                    ftl.prefetch_lpn(self.hidden_lpn(g));
                }
            }
        }
    }

    fn precondition_placement(&mut self, lpn: u32, _ctx: &Ctx<'_>) -> Placement {
        if lpn < self.logical {
            let mut none = Vec::new();
            self.write_tags(lpn, &mut none);
        }
        self.placement_of(lpn, Source::Host)
    }

    fn take_untimed(&mut self, out: &mut Vec<Action>) {
        out.append(&mut self.pending_untimed);
    }

    fn gc_move(&mut self, lpn: u32, _ppn: u32, _ctx: &Ctx<'_>) -> Placement {
        self.placement_of(lpn, Source::Gc)
    }

    fn on_request(
        &mut self,
        op: crate::trace::Op,
        first_lpn: u32,
        pages: u32,
        _ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
    ) {
        self.untimed = false;
        if op != crate::trace::Op::Write {
            return;
        }
        let mut lpn = first_lpn;
        for _ in 0..pages {
            self.write_tags(lpn, actions);
            lpn += 1;
            if lpn == self.logical {
                lpn = 0;
            }
        }
    }

    fn on_host_read(&mut self, lpn: u32, ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        let g = self.rmap[lpn as usize];
        if g == NIL {
            return;
        }
        self.counters.tagged_page_reads += 1;
        match self.st(g) {
            ST_OPEN | ST_READY => {
                self.counters.buffer_hits += 1;
                return;
            }
            _ => {}
        }
        if self.cached(g) {
            self.counters.cache_hits += 1;
            self.cache_insert(g);
            return;
        }
        let h = self.hidden_lpn(g);
        let hp = ctx.ftl.lookup(h);
        if hp == UNMAPPED {
            // Its program is still queued: the page is in the controller's DRAM.
            self.counters.buffer_hits += 1;
            return;
        }
        let ppd = self.ppd;
        if ctx.ftl.plane_of_ppn(hp) / ppd == ctx.ftl.plane_of_ppn(ppn) / ppd {
            self.counters.same_die_reads += 1;
        }
        self.counters.redundant_reads += 1;
        // What the read's dispatch touches (its ECC byte and state word), while the engine
        // queues the request's data reads first.
        ctx.ftl.prefetch_read(hp);
        actions.push(Action::Read { lpn: h, wait: true });
        self.cache_insert(g);
    }

    fn idle_threshold_ns(&self) -> Option<u64> {
        if !self.delayed {
            return None;
        }
        Some(if self.idle_threshold_param < 0.0 {
            self.program_ns
        } else {
            (self.idle_threshold_param * 1000.0).round() as u64
        })
    }

    fn on_idle(&mut self, idle_ns: u64, _ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        self.counters.idle_calls += 1;
        if self.ready_live == 0 {
            return;
        }
        let budget = (idle_ns / self.program_ns.max(1)).max(1) as u32;
        for d in self.die_used.iter_mut() {
            *d = 0;
        }
        let n = self.ready.len();
        for _ in 0..n {
            let Some(g) = self.ready.pop_front() else {
                break;
            };
            if self.live(g) == 0 {
                self.release(g);
                continue;
            }
            let die = self.plane_of_id(g) / self.ppd;
            if self.die_used[die as usize] >= budget {
                self.ready.push_back(g);
                continue;
            }
            self.die_used[die as usize] += 1;
            self.ready_live -= 1;
            self.counters.flushes_idle += 1;
            self.flush(g, false, actions);
        }
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.counters).unwrap_or_default();
        let (mut valid, mut invalid, mut flushed) = (0u64, 0u64, 0u64);
        let planes = self.planes;
        let used =
            (0..planes).flat_map(|q| (0..self.fresh[q as usize]).map(move |s| s * planes + q + 1));
        for g in used {
            if self.st(g) == ST_FLUSHED {
                flushed += 1;
                valid += self.live(g) as u64;
                invalid += (self.nmem(g) - self.live(g)) as u64;
            }
        }
        let ob = self.overflow as u64;
        v["chunk_bytes"] = serde_json::json!(self.chunk_bytes);
        v["overflow_bytes_per_page"] = serde_json::json!(self.overflow);
        v["tags_per_redundant_page"] = serde_json::json!(self.k);
        v["path_a_share"] = serde_json::json!(self.path_a_share);
        v["stripe_pages"] = serde_json::json!(self.stripe);
        v["redundant_pages_on_flash"] = serde_json::json!(flushed);
        v["valid_tag_bytes_on_flash"] = serde_json::json!(valid * ob);
        v["invalid_tag_bytes_on_flash"] = serde_json::json!(invalid * ob);
        v["buffered_pages_at_end"] = serde_json::json!(self.ready_live);
        v["open_pages_at_end"] = serde_json::json!(self.open.iter().filter(|&&g| g != NIL).count());
        v
    }
}
