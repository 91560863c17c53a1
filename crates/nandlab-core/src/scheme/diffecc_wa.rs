//! `diffecc_wa`: workload-aware differentiated ECC (Xia & Xiao §IV-B).
//!
//! A [read/write separator](super::separator) classifies every LPN; the ECC-mode selector then
//! picks, for host writes and GC moves alike (§IV-B: "For write requests from both the host side
//! and background operations like garbage collection"):
//!
//! * write-only → low-cost program (doubled ΔVpp, 650 µs) with LDPC;
//! * overlapped → low-cost + LDPC if `write_hotness − read_hotness > m`, else normal program
//!   (1300 µs) + BCH;
//! * read-only or unknown → normal + BCH (the paper's rules only name the two cases above).
//!
//! A host read of an LDPC page whose `read_hotness > write_hotness` and
//! `read_hotness − write_hotness > n` asks for a rewrite (a scheduled read and a normal-cost BCH
//! program, source "migration", counted in `rewrites`). A small ring of recently requested LPNs
//! suppresses a second request for the same page before the first one's program is dispatched.
//!
//! Parameters (`[scheme.params]`): `m` (default −1), `n` (default 3), separator `filters`,
//! `bits`, `hashes`, `decay_requests`, `weights`; program-mode and ECC ids `normal_mode` (0),
//! `low_cost_mode` (1), `bch_ecc` (0), `ldpc_ecc` (1) — indices into the config's
//! `timing.program_modes` / `timing.ecc` tables (see `configs/xia-diffecc.toml`).

use serde_json::json;

use super::params::Params;
use super::separator::{Class, Separator, SeparatorParams};
use super::{Action, Ctx, Placement, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;
use crate::trace::Op;

const RECENT: usize = 64;

/// The scheme state.
#[derive(Clone, Debug)]
pub struct DiffEccWa {
    sep: Separator,
    m: f64,
    n: f64,
    normal: Placement,
    low_cost: Placement,
    gc_stream: u8,
    recent: [u32; RECENT],
    recent_next: usize,
    // Statistics, next to the state they describe.
    placed_write_only: u64,
    placed_overlapped_low_cost: u64,
    placed_overlapped_normal: u64,
    placed_read_only: u64,
    placed_unknown: u64,
    rewrites_requested: u64,
    rewrites_suppressed: u64,
}

impl DiffEccWa {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("diffecc_wa", params);
        let d = SeparatorParams::default();
        let filters = p.usize("filters", d.filters, 1, 64)?;
        let sp = SeparatorParams {
            filters,
            bits: p.usize("bits", d.bits, 8, 1 << 24)?,
            hashes: p.usize("hashes", d.hashes, 1, 16)?,
            decay_requests: p.usize("decay_requests", d.decay_requests as usize, 0, 1 << 40)?
                as u64,
            weights: p.f64_list("weights", &d.weights, filters)?,
        };
        let m = p.f64("m", -1.0, -1e9, 1e9)?;
        let n = p.f64("n", 3.0, -1e9, 1e9)?;
        let modes = timing.modes.len();
        let eccs = timing.eccs.len();
        let normal_mode = p.usize("normal_mode", 0, 0, modes - 1)? as u8;
        let low_cost_mode = p.usize("low_cost_mode", 1.min(modes - 1), 0, modes - 1)? as u8;
        let bch = p.usize("bch_ecc", 0, 0, eccs - 1)? as u8;
        let ldpc = p.usize("ldpc_ecc", 1.min(eccs - 1), 0, eccs - 1)? as u8;
        p.finish()?;
        Ok(DiffEccWa {
            sep: Separator::new(sp),
            m,
            n,
            normal: Placement {
                stream: 0,
                mode: normal_mode,
                ecc: bch,
                region: 0,
                page_type: None,
            },
            low_cost: Placement {
                stream: 0,
                mode: low_cost_mode,
                ecc: ldpc,
                region: 0,
                page_type: None,
            },
            gc_stream: if streams > 1 { 1 } else { 0 },
            recent: [u32::MAX; RECENT],
            recent_next: 0,
            placed_write_only: 0,
            placed_overlapped_low_cost: 0,
            placed_overlapped_normal: 0,
            placed_read_only: 0,
            placed_unknown: 0,
            rewrites_requested: 0,
            rewrites_suppressed: 0,
        })
    }

    /// The §IV-B selector for `lpn`.
    fn select(&mut self, lpn: u32) -> Placement {
        let (r, w) = self.sep.hotness(lpn);
        let class = match (r > 0.0, w > 0.0) {
            (true, true) => Class::Overlapped,
            (true, false) => Class::ReadOnly,
            (false, true) => Class::WriteOnly,
            (false, false) => Class::Unknown,
        };
        match class {
            Class::WriteOnly => {
                self.placed_write_only += 1;
                self.low_cost
            }
            Class::Overlapped if w - r > self.m => {
                self.placed_overlapped_low_cost += 1;
                self.low_cost
            }
            Class::Overlapped => {
                self.placed_overlapped_normal += 1;
                self.normal
            }
            Class::ReadOnly => {
                self.placed_read_only += 1;
                self.normal
            }
            Class::Unknown => {
                self.placed_unknown += 1;
                self.normal
            }
        }
    }
}

impl Scheme for DiffEccWa {
    fn name(&self) -> &'static str {
        "diffecc_wa"
    }

    fn validate_device(&self, dev: &super::DeviceInfo) -> Result<(), ConfigError> {
        // Both classes in the same mode with the same ECC is the baseline under another name.
        // A deliberate ablation (one of the two equal) stays allowed.
        if self.normal.mode != self.low_cost.mode || self.normal.ecc != self.low_cost.ecc {
            return Ok(());
        }
        Err(super::DeviceInfo::mismatch(
            "diffecc_wa",
            &format!(
                "a low-cost program mode and a second ECC kind (normal_mode ≠ low_cost_mode or \
                 bch_ecc ≠ ldpc_ecc; this configuration has {} program mode(s) and {} ECC \
                 kind(s))",
                dev.modes, dev.eccs
            ),
            "xia-diffecc",
        ))
    }

    fn on_host_request(&mut self, _op: Op, _first_lpn: u32, _pages: u32) {
        self.sep.begin_request();
    }

    fn on_host_write(&mut self, lpn: u32, _ctx: &Ctx<'_>) {
        self.sep.record(lpn, true);
    }

    fn on_host_read(&mut self, lpn: u32, ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        self.sep.record(lpn, false);
        if ctx.ftl.page_ecc(ppn) != self.low_cost.ecc || self.low_cost.ecc == self.normal.ecc {
            return;
        }
        let (r, w) = self.sep.hotness(lpn);
        if r > w && r - w > self.n {
            if self.recent.contains(&lpn) {
                self.rewrites_suppressed += 1;
                return;
            }
            self.recent[self.recent_next] = lpn;
            self.recent_next = (self.recent_next + 1) % RECENT;
            self.rewrites_requested += 1;
            actions.push(Action::Rewrite {
                lpn,
                source: Source::Migration,
                wait: false,
            });
        }
    }

    fn placement(&mut self, lpn: u32, source: Source, _ctx: &Ctx<'_>) -> Placement {
        match source {
            // A rewrite is always normal cost + BCH (§IV-B).
            Source::Migration => Placement {
                stream: self.gc_stream,
                ..self.normal
            },
            Source::Host => self.select(lpn),
            _ => Placement {
                stream: self.gc_stream,
                ..self.select(lpn)
            },
        }
    }

    fn stats(&self) -> serde_json::Value {
        json!({
            "placed_write_only": self.placed_write_only,
            "placed_overlapped_low_cost": self.placed_overlapped_low_cost,
            "placed_overlapped_normal": self.placed_overlapped_normal,
            "placed_read_only": self.placed_read_only,
            "placed_unknown": self.placed_unknown,
            "rewrites_requested": self.rewrites_requested,
            "rewrites_suppressed": self.rewrites_suppressed,
            "m": self.m,
            "n": self.n,
            "separator_bytes": self.sep.memory_bytes(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::testutil::{ctx, tiny_ftl, xia_diffecc_timing as timing};

    fn scheme(m: f64, n: f64) -> DiffEccWa {
        let mut t = toml::Table::new();
        t.insert("m".into(), toml::Value::Float(m));
        t.insert("n".into(), toml::Value::Float(n));
        DiffEccWa::new(&t, &timing(), 2).unwrap()
    }

    fn write(s: &mut DiffEccWa, ctx: &Ctx<'_>, lpn: u32) -> Placement {
        s.on_host_request(Op::Write, lpn, 1);
        s.on_host_write(lpn, ctx);
        s.placement(lpn, Source::Host, ctx)
    }

    fn read(s: &mut DiffEccWa, lpn: u32) {
        s.on_host_request(Op::Read, lpn, 1);
        s.sep.record(lpn, false);
    }

    /// A tiny FTL holding LPN 3 in its first page, programmed in mode and ECC `code` (0: normal
    /// cost and BCH, 1: low cost and LDPC); and that page.
    fn lpn3_stored_as(code: u8) -> (crate::ftl::Ftl, u32) {
        let mut f = tiny_ftl();
        let ppn = f.allocate(0, 0, true, 0).unwrap();
        f.program(ppn, 3, code, code, 0);
        (f, ppn)
    }

    /// A host read request of LPN 3, stored at `ppn`.
    fn read_lpn3(s: &mut DiffEccWa, ppn: u32, ctx: &Ctx<'_>, actions: &mut Vec<Action>) {
        s.on_host_request(Op::Read, 3, 1);
        s.on_host_read(3, ppn, ctx, actions);
    }

    /// LPN 5 read in three requests, then written once.
    fn three_reads_then_write(s: &mut DiffEccWa, ctx: &Ctx<'_>) {
        for _ in 0..3 {
            read(s, 5);
        }
        s.on_host_request(Op::Write, 5, 1);
        s.on_host_write(5, ctx);
    }

    #[test]
    fn write_only_goes_low_cost_ldpc() {
        let t = timing();
        let f = tiny_ftl();
        let ctx = ctx(&f, &t);
        let mut s = scheme(-1.0, 3.0);
        let p = write(&mut s, &ctx, 5);
        assert_eq!((p.mode, p.ecc), (1, 1));
    }

    #[test]
    fn overlapped_follows_threshold_m() {
        let t = timing();
        let f = tiny_ftl();
        let ctx = ctx(&f, &t);
        // Read LPN 5 three times (hotness of 3 pairs), then write it once: w − r < 0.
        for m in [-1.0, -4.0] {
            let mut s = scheme(m, 3.0);
            three_reads_then_write(&mut s, &ctx);
            let (r, w) = s.sep.hotness(5);
            let p = s.placement(5, Source::Host, &ctx);
            if w - r > m {
                assert_eq!((p.mode, p.ecc), (1, 1), "m = {m}, w − r = {}", w - r);
            } else {
                assert_eq!((p.mode, p.ecc), (0, 0), "m = {m}, w − r = {}", w - r);
            }
        }
        // Both sides really occur: reads in pairs 0–2 (r = 2 + 0.5 + 1), the write in pair 3
        // (w = 1.5): w − r = −2.
        let mut s = scheme(-1.0, 3.0);
        three_reads_then_write(&mut s, &ctx);
        let (r, w) = s.sep.hotness(5);
        assert_eq!(w - r, -2.0);
        assert_eq!(s.placement(5, Source::Host, &ctx).ecc, 0);
        let mut s = scheme(-4.0, 3.0);
        three_reads_then_write(&mut s, &ctx);
        assert_eq!(s.placement(5, Source::Host, &ctx).ecc, 1);
    }

    #[test]
    fn hot_read_of_ldpc_page_requests_one_rewrite() {
        let t = timing();
        // LPN 3 stored as low-cost LDPC.
        let (f, ppn) = lpn3_stored_as(1);
        let ctx = ctx(&f, &t);
        let mut s = scheme(-1.0, 3.0);
        let mut actions = Vec::new();
        // Reads in 4 successive requests: r grows to 5 > n = 3 with w = 0.
        for i in 0..4 {
            read_lpn3(&mut s, ppn, &ctx, &mut actions);
            let (r, _) = s.sep.hotness(3);
            assert_eq!(
                actions.len(),
                usize::from(r > 3.0).min(1),
                "read {i}, r = {r}"
            );
        }
        assert_eq!(
            actions[0],
            Action::Rewrite {
                lpn: 3,
                source: Source::Migration,
                wait: false,
            }
        );
        // Further hot reads before the rewrite lands are suppressed.
        read_lpn3(&mut s, ppn, &ctx, &mut actions);
        assert_eq!(actions.len(), 1);
        assert_eq!(s.rewrites_suppressed, 2);
        // The rewrite is programmed normal cost + BCH.
        let p = s.placement(3, Source::Migration, &ctx);
        assert_eq!((p.mode, p.ecc), (0, 0));
    }

    #[test]
    fn bch_pages_are_never_rewritten() {
        let t = timing();
        let (f, ppn) = lpn3_stored_as(0);
        let ctx = ctx(&f, &t);
        let mut s = scheme(-1.0, 0.0);
        let mut actions = Vec::new();
        for _ in 0..8 {
            read_lpn3(&mut s, ppn, &ctx, &mut actions);
        }
        assert!(actions.is_empty());
    }
}
