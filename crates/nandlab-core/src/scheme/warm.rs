//! `warm`: write-hotness aware retention management (Y. Luo, Y. Cai, S. Ghose, J. Choi,
//! O. Mutlu, "WARM: Improving NAND Flash Memory Lifetime with Write-hotness Aware Retention
//! Management", MSST 2015), as the EFM paper's baseline (EFM §I, §V, ref. \[9\]).
//!
//! **What WARM does** (from the paper's abstract and the authors' talk, public): it "identifies
//! and physically groups together write-hot data", partitioning the flash into a *hot pool* and
//! a *cold pool*. The hot pool is a FIFO of blocks made of a *hot window* and a *cooldown
//! window*: data written again while in either window is write-hot and goes to the tail of the
//! hot window; data that leaves the cooldown window without being rewritten is cold. WARM tunes
//! the hot-window size at run time. The partitioning is by write frequency only (reads play no
//! part), which is why the EFM paper (Fig. 6) finds WARM with large "non-optimal R/W" shares.
//!
//! **Our implementation.** Per LPN we keep the write sequence number of its last host write and
//! whether that write was admitted to the hot window; the windows are the last `hot_window`
//! and `cooldown_window` page writes of each kind (a FIFO of pages in write order, which is what
//! a FIFO of blocks in the hot pool holds, without per-block bookkeeping). A host write of an
//! LPN that is in the hot window or in the cooldown window is write-hot (the cooldown hit is
//! WARM's promotion); any other write enters the cooldown window (WARM's admission: data must be
//! rewritten once more to prove hot — the same rule as the FlashSim `warm_hcid` implementation
//! by R. Verschoren, 2017). *Window tuning*: every `tune_writes` host page writes the hot window
//! grows by `tune_step` of its size while the fraction of writes that hit a window rose since
//! the previous epoch and shrinks while it fell (a hill climb standing in for WARM's lifetime
//! driven size search, whose details are not public here).
//!
//! **Mapping onto EFM's regions** (EFM §V-D: "EFM, WARM, and HOTIS schemes use the reduced
//! threshold voltage for Region-1"): write-hot data → Region-1 (fast write; the region EFM
//! gives reduced Vth), cooldown-window data (written once recently: in WARM's hot pool, not yet
//! proven hot) → Region-2, cold data → Region-3 (fast read). Cold data reaches WARM's cold pool
//! when GC evicts it from the cooldown window; here GC keeps a block's region, so Region-3
//! receives WARM's cold data only through preconditioning when `fill_region` says so (default:
//! the middle region, as every region scheme). With two regions hot → Region-1, the rest →
//! Region-2; with one, everything in it.
//!
//! Parameters: `hot_window_fraction` (initial hot window, fraction of the logical pages,
//! default 0.005), `cooldown_fraction` (0.005), `tune_writes` (65,536; 0 = no tuning),
//! `tune_step` (0.25), `fill_region` (−1 = middle). Memory: 5 bytes per logical page.

use serde_json::json;

use super::params::Params;
use super::{Ctx, Placement, RegionInfo, Scheme, Source};
use crate::config::ConfigError;
use crate::flash::Timing;

const HOT: u8 = 1;
const COOL: u8 = 2;

/// The scheme state.
#[derive(Clone, Debug)]
pub struct Warm {
    hot_frac: f64,
    cool_frac: f64,
    tune_writes: u64,
    tune_step: f64,
    fill_region: i64,
    n: usize,
    /// Sequence number (in its window's counter) of each LPN's last host write; 0 = never.
    seq: Vec<u32>,
    kind: Vec<u8>,
    hot_seq: u32,
    cool_seq: u32,
    hot_window: u64,
    cool_window: u64,
    min_window: u64,
    max_window: u64,
    epoch_writes: u64,
    epoch_hits: u64,
    prev_hit_rate: f64,
    grow: bool,
    gc_stream: u8,
    // statistics
    writes_hot: u64,
    writes_cool: u64,
    promotions: u64,
    retunes: u64,
}

impl Warm {
    /// Build from `[scheme.params]`.
    pub fn new(params: &toml::Table, _timing: &Timing, streams: u32) -> Result<Self, ConfigError> {
        let p = Params::new("warm", params);
        let hot_frac = p.f64("hot_window_fraction", 0.005, 1e-9, 1.0)?;
        let cool_frac = p.f64("cooldown_fraction", 0.005, 1e-9, 1.0)?;
        let tune_writes = p.usize("tune_writes", 65_536, 0, 1 << 40)? as u64;
        let tune_step = p.f64("tune_step", 0.25, 0.0, 10.0)?;
        let fill = p.usize("fill_region", 255, 0, 255)? as i64;
        p.finish()?;
        Ok(Warm {
            hot_frac,
            cool_frac,
            tune_writes,
            tune_step,
            fill_region: if fill == 255 { -1 } else { fill },
            n: 1,
            seq: Vec::new(),
            kind: Vec::new(),
            hot_seq: 0,
            cool_seq: 0,
            hot_window: 0,
            cool_window: 0,
            min_window: 1,
            max_window: 1,
            epoch_writes: 0,
            epoch_hits: 0,
            prev_hit_rate: -1.0,
            grow: true,
            gc_stream: if streams > 1 { 1 } else { 0 },
            writes_hot: 0,
            writes_cool: 0,
            promotions: 0,
            retunes: 0,
        })
    }

    fn ensure_sized(&mut self, ctx: &Ctx<'_>) {
        if !self.seq.is_empty() {
            return;
        }
        let n = ctx.ftl.logical_pages as usize;
        self.seq = vec![0; n];
        self.kind = vec![0; n];
        let lp = n as f64;
        self.hot_window = ((lp * self.hot_frac).ceil() as u64).max(1);
        self.cool_window = ((lp * self.cool_frac).ceil() as u64).max(1);
        self.min_window = (ctx.ftl.geo.pages_per_block as u64).max(1);
        self.max_window = (n as u64 / 2).max(self.min_window);
    }

    /// Region of a host write: write-hot → 0; cooldown → the middle region (the second of
    /// two).
    fn region(&self, hot: bool) -> u8 {
        if hot {
            0
        } else {
            ((self.n - 1) / 2).max(usize::from(self.n == 2)) as u8
        }
    }

    fn fill(&self) -> u8 {
        super::fill_region(self.fill_region, self.n)
    }

    /// A host write of `lpn`: true when write-hot.
    fn write(&mut self, lpn: u32) -> bool {
        let i = lpn as usize;
        let in_hot =
            self.kind[i] == HOT && self.hot_seq.wrapping_sub(self.seq[i]) < self.hot_window as u32;
        let in_cool = self.kind[i] == COOL
            && self.cool_seq.wrapping_sub(self.seq[i]) < self.cool_window as u32;
        let hot = in_hot || in_cool;
        if hot {
            self.hot_seq = self.hot_seq.wrapping_add(1);
            self.seq[i] = self.hot_seq;
            self.kind[i] = HOT;
            self.writes_hot += 1;
            self.promotions += in_cool as u64;
            self.epoch_hits += 1;
        } else {
            self.cool_seq = self.cool_seq.wrapping_add(1);
            self.seq[i] = self.cool_seq;
            self.kind[i] = COOL;
            self.writes_cool += 1;
        }
        self.epoch_writes += 1;
        if self.tune_writes > 0 && self.epoch_writes >= self.tune_writes {
            self.tune();
        }
        hot
    }

    fn tune(&mut self) {
        let rate = self.epoch_hits as f64 / self.epoch_writes.max(1) as f64;
        if self.prev_hit_rate >= 0.0 && rate < self.prev_hit_rate {
            self.grow = !self.grow;
        }
        let step = ((self.hot_window as f64) * self.tune_step).ceil() as u64;
        self.hot_window = if self.grow {
            self.hot_window + step
        } else {
            self.hot_window.saturating_sub(step)
        }
        .clamp(self.min_window, self.max_window);
        self.prev_hit_rate = rate;
        self.epoch_hits = 0;
        self.epoch_writes = 0;
        self.retunes += 1;
    }
}

impl Scheme for Warm {
    fn name(&self) -> &'static str {
        "warm"
    }

    fn validate_device(&self, dev: &super::DeviceInfo) -> Result<(), ConfigError> {
        dev.need_regions("warm", 1)
    }

    fn set_regions(&mut self, info: &RegionInfo) {
        self.n = info.n.max(1);
    }

    fn placement(&mut self, lpn: u32, source: Source, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        let (stream, region) = if source == Source::Host {
            let hot = self.write(lpn);
            (0, self.region(hot))
        } else {
            // GC keeps the region; migrations are not issued by WARM.
            (self.gc_stream, self.fill())
        };
        Placement::in_region(stream, region)
    }

    fn precondition_placement(&mut self, _lpn: u32, ctx: &Ctx<'_>) -> Placement {
        self.ensure_sized(ctx);
        Placement::in_region(0, self.fill())
    }

    fn stats(&self) -> serde_json::Value {
        json!({
            "host_writes_hot": self.writes_hot,
            "host_writes_cooldown": self.writes_cool,
            "promotions_from_cooldown": self.promotions,
            "hot_window_pages": self.hot_window,
            "cooldown_window_pages": self.cool_window,
            "retunes": self.retunes,
            "state_bytes": self.seq.len() * 5,
        })
    }
}
