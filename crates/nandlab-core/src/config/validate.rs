//! Validation of a whole [`Config`]: every value's range and the combinations that cannot
//! apply, each an error naming the key and the way out.

use super::error::{check_finite_in, check_range, check_us, invalid, ConfigError};
use super::reliability::gcd_f;
use super::timing::per_type_ns;
use super::*;
use crate::flash::PageOrder;

impl Config {
    /// Check every value's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.stats.validate()?;
        self.objfs.validate()?;
        let d = &self.device;
        check_range("device.channels", d.channels, 1, 1024)?;
        check_range("device.chips_per_channel", d.chips_per_channel, 1, 1024)?;
        check_range("device.dies_per_chip", d.dies_per_chip, 1, 64)?;
        check_range("device.planes_per_die", d.planes_per_die, 1, 64)?;
        check_range("device.pages_per_block", d.pages_per_block, 1, 65536)?;
        check_finite_in(
            "dram.access_us",
            self.dram.access_us,
            0.0..=1e9,
            "must be between 0 and 1e9 µs",
        )?;
        if self.dram.capacity_bytes > 0 && self.dram.capacity_bytes < d.page_size_bytes as u64 {
            return Err(invalid(
                "dram.capacity_bytes",
                self.dram.capacity_bytes,
                format!(
                    "holds no page of device.page_size_bytes = {}: use 0 (no cache) or at \
                     least one page",
                    d.page_size_bytes
                ),
            ));
        }
        self.validate_superpage()?;
        self.validate_mapping()?;
        self.validate_link()?;
        self.validate_flows()?;
        let s = &self.sched;
        check_range("sched.max_suspends_per_op", s.max_suspends_per_op, 1, 255)?;
        for (k, v) in [
            ("sched.suspend_program_us", s.suspend_program_us),
            ("sched.suspend_erase_us", s.suspend_erase_us),
            ("sched.resume_us", s.resume_us),
        ] {
            check_finite_in(k, v, 0.0..=1e9, "must be between 0 and 1e9 µs")?;
        }
        if s.suspension && s.priority != Priority::ReadFirst {
            return Err(invalid(
                "sched.suspension",
                true,
                "program/erase suspension serves host reads first: it needs sched.priority = \
                 \"read_first\"",
            ));
        }
        if self.timing.one_shot_program {
            let why = if self.device.cell.bits() < 2 {
                Some(
                    "one-shot programming programs the pages of a multi-bit word line together; \
                      an SLC word line has one page: set timing.one_shot_program = false",
                )
            } else if self.device.page_order != crate::flash::PageOrder::Sequential {
                Some(
                    "one-shot programming writes a word line's pages together, never staggered: \
                      set device.page_order = \"sequential\" or timing.one_shot_program = false",
                )
            } else if !self.regions.is_off() {
                Some(
                    "one-shot programming is not modelled on a [regions] device (each region's \
                      blocks fill apart); set timing.one_shot_program = false or remove [regions]",
                )
            } else if self.scheme.name == "ida" {
                Some(
                    "ida places refresh moves by page type (LSB/CSB/MSB programmed apart), which \
                      a one-shot part cannot do; use the ida-tlc preset (one_shot_program = false)",
                )
            } else {
                None
            };
            if let Some(msg) = why {
                return Err(invalid("timing.one_shot_program", true, msg));
            }
        }
        if self.sched.multi_plane && !self.regions.is_off() {
            return Err(invalid(
                "sched.multi_plane",
                true,
                "multi-plane operations are not modelled on a [regions] device (each region's \
                 blocks fill apart); set sched.multi_plane = false or remove [regions]",
            ));
        }
        check_range("device.page_size_bytes", d.page_size_bytes, 512, 65536)?;
        if !d.page_size_bytes.is_multiple_of(512) {
            return Err(invalid(
                "device.page_size_bytes",
                d.page_size_bytes,
                "must be a multiple of 512",
            ));
        }
        let bits = d.cell.bits() as u32;
        if !d.pages_per_block.is_multiple_of(bits) {
            return Err(invalid(
                "device.pages_per_block",
                d.pages_per_block,
                format!("must be a multiple of the bits per cell ({bits})"),
            ));
        }
        match (d.op_percent_of_logical, d.op_percent_of_physical) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "device.op_percent_of_physical",
                    d.op_percent_of_physical.unwrap_or(0.0),
                    "give either op_percent_of_logical or op_percent_of_physical, not both",
                ))
            }
            (Some(v), None) => {
                check_finite_in(
                    "device.op_percent_of_logical",
                    v,
                    0.0..=1000.0,
                    "allowed range is 0 ..= 1000",
                )?;
            }
            (None, Some(v)) => {
                check_finite_in(
                    "device.op_percent_of_physical",
                    v,
                    0.0..95.0,
                    "allowed range is 0 ..< 95",
                )?;
            }
            (None, None) => {}
        }
        let t = &self.timing;
        per_type_ns("timing.read_us", &t.read_us, bits as usize)?;
        per_type_ns("timing.program_us", &t.program_us, bits as usize)?;
        check_us("timing.erase_us", t.erase_us)?;
        check_us("timing.ecc_decode_us", t.ecc_decode_us)?;
        check_us("timing.ecc_decode_corrupted_us", t.ecc_decode_corrupted_us)?;
        check_us("timing.ecc_encode_us", t.ecc_encode_us)?;
        // Physical range: legacy asynchronous NAND runs at tens of MT/s, ONFI 5 / Toggle 5 at
        // a few thousand; outside 1 ..= 100,000 MT/s a value is a unit mistake, and a tiny one
        // saturated the clock (issue 20).
        check_finite_in(
            "timing.channel_mt_s",
            t.channel_mt_s,
            1.0..=1e5,
            "allowed range is 1 ..= 100000 MT/s",
        )?;
        check_range("timing.channel_width_bytes", t.channel_width_bytes, 1, 64)?;
        for (i, m) in t.program_modes.iter().enumerate() {
            per_type_ns(
                &format!("timing.program_modes[{i}].program_us"),
                &m.program_us,
                bits as usize,
            )?;
        }
        for (i, e) in t.ecc.iter().enumerate() {
            check_us(&format!("timing.ecc[{i}].decode_us"), e.decode_us)?;
            check_us(&format!("timing.ecc[{i}].extra_sense_us"), e.extra_sense_us)?;
            check_us(
                &format!("timing.ecc[{i}].decode_corrupted_us"),
                e.decode_corrupted_us,
            )?;
            check_us(&format!("timing.ecc[{i}].encode_us"), e.encode_us)?;
        }
        if t.program_modes.len() > 254 || t.ecc.len() > 254 {
            return Err(invalid(
                "timing.program_modes",
                t.program_modes.len(),
                "at most 254 extra modes / ECC kinds",
            ));
        }
        let f = &self.ftl;
        check_finite_in(
            "ftl.gc_threshold_pct",
            f.gc_threshold_pct,
            0.0..=50.0,
            "allowed range is 0 ..= 50",
        )?;
        check_range("ftl.streams", f.streams, 1, 16)?;
        let h = &self.host;
        check_finite_in(
            "host.time_scale",
            h.time_scale,
            1e-6..=1e6,
            "allowed range is 1e-6 ..= 1e6",
        )?;
        check_range("host.queue_depth", h.queue_depth, 1, 1 << 20)?;
        check_range("host.max_outstanding", h.max_outstanding, 1, 1 << 24)?;
        crate::host::flows::validate(
            &h.flows,
            h.arbitration,
            &h.wrr_weights,
            h.flow_space,
            &h.replay_only_flow,
        )?;
        let p = &self.precondition;
        check_finite_in(
            "precondition.fill_fraction",
            p.fill_fraction,
            0.0..=1.0,
            "allowed range is 0 ..= 1",
        )?;
        check_finite_in(
            "precondition.age_overwrites",
            p.age_overwrites,
            0.0..=100.0,
            "allowed range is 0 ..= 100",
        )?;
        check_finite_in(
            "precondition.initial_age_window_s",
            p.initial_age_window_s,
            0.0..=2.0e9,
            "allowed range is 0 ..= 2e9 s",
        )?;
        let rf = &self.refresh;
        // 2e9 s bounds the i32 second clock of page program times.
        check_finite_in(
            "refresh.period_s",
            rf.period_s,
            0.0..=2.0e9,
            "allowed range is 0 (off) ..= 2e9 s",
        )?;
        check_finite_in(
            "refresh.check_interval_s",
            rf.check_interval_s,
            0.0..=2.0e9,
            "allowed range is 0 (auto) ..= 2e9 s",
        )?;
        let r = &self.reliability;
        check_range("reliability.level_config", r.level_config, 0, 3)?;
        if !(r.mode0_dvpp_v.is_finite() && r.mode0_dvpp_v > 0.0 && r.mode0_dvpp_v <= 2.0) {
            return Err(invalid(
                "reliability.mode0_dvpp_v",
                r.mode0_dvpp_v,
                "allowed range is 0 < x ≤ 2 V",
            ));
        }
        check_finite_in(
            "reliability.read_ref_margin_v",
            r.read_ref_margin_v,
            0.0..=0.5,
            "allowed range is 0 ≤ x ≤ 0.5 V",
        )?;
        for (i, w) in r.read_disturb_grid.windows(2).enumerate() {
            if w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Less) {
                return Err(invalid(
                    &format!("reliability.read_disturb_grid[{}]", i + 1),
                    w[1],
                    "must be ascending",
                ));
            }
        }
        if let Some(&x) = r
            .read_disturb_grid
            .iter()
            .find(|x| !(x.is_finite() && **x >= 0.0 && **x <= 1e12))
        {
            return Err(invalid(
                "reliability.read_disturb_grid",
                x,
                "allowed range is 0 ≤ reads ≤ 1e12",
            ));
        }
        let n_ecc = 1 + t.ecc.len();
        if !r.codes.is_empty() && r.codes.len() != n_ecc {
            return Err(invalid(
                "reliability.codes",
                r.codes.len(),
                format!("give one code per ECC id ({n_ecc}: id 0 and timing.ecc)"),
            ));
        }
        self.regions
            .validate(1 + t.program_modes.len(), r.model == ReliabilityModel::Vth)?;
        let bits = self.device.cell.bits();
        for (i, &b) in self.regions.bits_per_cell.iter().enumerate() {
            let key = format!("regions.bits_per_cell[{i}]");
            if !(b.is_finite() && b > 0.0 && b <= bits as f64) {
                return Err(invalid(
                    &key,
                    b,
                    format!("allowed range is 0 < x ≤ {bits} (the cell type's bits)"),
                ));
            }
            let pages = self.device.pages_per_block as f64 * b / bits as f64;
            if (pages - pages.round()).abs() > 1e-9 || pages.round() < 1.0 {
                return Err(invalid(
                    &key,
                    b,
                    format!(
                        "a block of {} pages would hold {pages} pages; pages_per_block must be                          divisible as the reduced layout needs (a multiple of {} for {b} of                          {bits} bits)",
                        self.device.pages_per_block,
                        (bits as f64 / gcd_f(b, bits as f64)).round()
                    ),
                ));
            }
        }
        if !self.regions.is_off() && !self.refresh.is_off() {
            return Err(invalid(
                "refresh.period_s",
                self.refresh.period_s,
                "data refresh is not supported together with [regions] yet (set 0)",
            ));
        }
        self.dpa.validate()?;
        if let Some(c) = &self.cache {
            c.validate()?;
            if self.ftl.trim {
                return Err(invalid(
                    "ftl.trim",
                    true,
                    "the [cache] layer does not model discards of the primary storage; set \
                     ftl.trim = false (discards are then skipped and counted by the reader)",
                ));
            }
        }
        self.faults.validate()?;
        if self.faults.mode == crate::reliability::faults::FaultMode::Model
            && self.reliability.model != ReliabilityModel::Vth
        {
            return Err(invalid(
                "faults.mode",
                "model",
                "errors from the reliability model need reliability.model = \"vth\" (with \
                 [[reliability.codes]], e.g. BCH t = 6 and CRC); for the paper's deterministic \
                 injection use faults.mode = \"every_nth_bit\"",
            ));
        }
        if let Some(o) = &self.osd {
            o.validate(&self.device, &self.sched, &self.timing, &self.dram)?;
        }
        if !self.faults.is_off() && self.cache.is_none() {
            return Err(invalid(
                "faults.mode",
                format!("{:?}", self.faults.mode),
                "fault injection needs a [cache] section (corruptions are spread over the \
                 cache's replay, and a corrupted detect-only page is fetched from its backend \
                 disk)",
            ));
        }
        if p.initial_pe_spread > p.initial_pe_cycles {
            return Err(invalid(
                "precondition.initial_pe_spread",
                p.initial_pe_spread,
                format!(
                    "must not exceed initial_pe_cycles ({})",
                    p.initial_pe_cycles
                ),
            ));
        }
        Ok(())
    }

    /// `ftl.mapping` and `ftl.cmt_bytes`: a cached mapping table needs a size, a DRAM one
    /// takes none, and the cached table does not combine with the front ends that keep
    /// pages in DRAM (the data cache, the cache layer), each an error naming the way out.
    fn validate_mapping(&self) -> Result<(), ConfigError> {
        let f = &self.ftl;
        if f.mapping == MappingTable::Dram {
            if f.cmt_bytes != 0 {
                return Err(invalid(
                    "ftl.cmt_bytes",
                    f.cmt_bytes,
                    "applies only with ftl.mapping = \"cached\": set that, or remove \
                     ftl.cmt_bytes",
                ));
            }
            return Ok(());
        }
        if f.cmt_bytes < crate::ftl::cmt::CMT_ENTRY_BYTES || f.cmt_bytes > (1 << 40) {
            return Err(invalid(
                "ftl.cmt_bytes",
                f.cmt_bytes,
                "must be between 8 B (one 8-byte mapping entry) and 1 TiB with \
                 ftl.mapping = \"cached\" (e.g. 1048576)",
            ));
        }
        if self.dram.capacity_bytes > 0 {
            return Err(invalid(
                "dram.capacity_bytes",
                self.dram.capacity_bytes,
                "the DRAM data cache does not combine with ftl.mapping = \"cached\" (not \
                 modelled together); use dram.capacity_bytes = 0 or ftl.mapping = \"dram\"",
            ));
        }
        if self.cache.is_some() {
            return Err(invalid(
                "ftl.mapping",
                "cached",
                "the cache layer ([cache]) does not combine with a cached mapping table (not \
                 modelled together); use ftl.mapping = \"dram\"",
            ));
        }
        Ok(())
    }

    /// `[link]`: its keys, and the front ends it is not modelled with (each an error naming the
    /// way out).
    /// Concurrent flows (`[[host.flows]]`) replay block traces: not through the cache layer
    /// or on the object device.
    fn validate_flows(&self) -> Result<(), ConfigError> {
        if self.host.flows.is_empty() {
            return Ok(());
        }
        if self.cache.is_some() {
            return Err(invalid(
                "host.flows",
                format!("{} flows", self.host.flows.len()),
                "the cache layer ([cache]) replays one primary-storage trace: remove \
                 [[host.flows]] or [cache]",
            ));
        }
        if self.osd.is_some() {
            return Err(invalid(
                "host.flows",
                format!("{} flows", self.host.flows.len()),
                "the object device ([osd]) replays one file-level trace: remove [[host.flows]]",
            ));
        }
        Ok(())
    }

    fn validate_link(&self) -> Result<(), ConfigError> {
        self.link.validate()?;
        if self.link.is_off() {
            return Ok(());
        }
        if self.cache.is_some() {
            return Err(invalid(
                "link.interface",
                "\"pcie\"",
                "the cache layer ([cache]) is not modelled with a host link: remove [link] or \
                 [cache]",
            ));
        }
        if self.osd.is_some() {
            return Err(invalid(
                "link.interface",
                "\"pcie\"",
                "the object device ([osd]) is not modelled with a host link: remove [link]",
            ));
        }
        Ok(())
    }

    /// `ftl.allocation = "superpage"`: the features it does not combine with, each an error
    /// naming the way out.
    fn validate_superpage(&self) -> Result<(), ConfigError> {
        let unit = self.ftl.mapping_unit_bytes;
        let page = self.device.page_size_bytes;
        if unit != 0 {
            if !(512..=page).contains(&unit)
                || !unit.is_multiple_of(512)
                || !page.is_multiple_of(unit)
            {
                return Err(invalid(
                    "ftl.mapping_unit_bytes",
                    unit,
                    format!(
                        "must be a multiple of 512 B that divides device.page_size_bytes = {page} \
                         (e.g. 4096), or 0 for the page"
                    ),
                ));
            }
            if unit < page && self.ftl.allocation != Allocation::Superpage {
                return Err(invalid(
                    "ftl.mapping_unit_bytes",
                    unit,
                    format!(
                        "a mapping unit smaller than the {page} B page needs \
                         ftl.allocation = \"superpage\" (units fill super-pages); use it, or \
                         ftl.mapping_unit_bytes = 0"
                    ),
                ));
            }
        }
        let w = self.ftl.superpage_wait_us;
        check_finite_in(
            "ftl.superpage_wait_us",
            w,
            0.0..=1e9,
            "must be between 0 and 1e9 µs (0 = never hold host writes)",
        )?;
        if self.ftl.allocation != Allocation::Superpage {
            return Ok(());
        }
        let no = |key: &str, value: String, why: &str| {
            Err(invalid(
                key,
                value,
                format!("{why}; with it use ftl.allocation = \"static\""),
            ))
        };
        if !self.regions.is_off() {
            return no(
                "regions",
                "[regions]".into(),
                "superpage allocation does not combine with block pools (a superblock spans \
                 the planes of a die, a region's pools are per plane)",
            );
        }
        if !self.sched.multi_plane {
            return no(
                "sched.multi_plane",
                "false".into(),
                "a super-page is one multi-plane program over the planes of a die",
            );
        }
        if self.ftl.copyback {
            return no(
                "ftl.copyback",
                "true".into(),
                "a superpage GC copy may change plane, which copyback cannot",
            );
        }
        if self.device.page_order != PageOrder::Sequential {
            return no(
                "device.page_order",
                format!("{:?}", self.device.page_order),
                "superpage allocation fills word lines in page order",
            );
        }
        if !self.refresh.is_off() {
            return no(
                "refresh.period_s",
                self.refresh.period_s.to_string(),
                "data refresh relocates within a plane (IDA), not by super-page",
            );
        }
        Ok(())
    }
}
