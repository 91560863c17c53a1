//! The JSON run report (DESIGN §4, issue "report is an interface"): stable field names, fields
//! may be added but never renamed.

use serde_json::{json, Value};

use super::Engine;
use crate::scheme::Source;
use crate::stats::{host_report, EraseDistribution};

impl Engine {
    fn reliability_report(&self) -> Value {
        let r = &self.stats.reliability;
        // Reads by soft level, up to the highest level used (level 0 always).
        let last = r
            .reads_by_soft_level
            .iter()
            .rposition(|&c| c > 0)
            .unwrap_or(0);
        let soft_levels = &r.reads_by_soft_level[..=last];
        match &self.read_model {
            None if self.table6.is_some() => json!({
                "model": "table6",
                "read_latency_source": "fixed latencies plus Guo Table 6 soft-sensing \
                    levels by P/E and data age (8 µs + 20 µs per level); reduced-state \
                    regions none",
                "reads": r.reads,
                "reads_by_soft_level": soft_levels,
            }),
            None => json!({
                "model": "none",
                "read_latency_source": "fixed per-ECC latencies from [timing]",
            }),
            Some(m) => json!({
                "model": "vth",
                "read_latency_source": "RBER from the Vth-model table; ECC code models",
                "table_cache": match m.cache_status {
                    crate::reliability::table::CacheStatus::Hit => "hit",
                    crate::reliability::table::CacheStatus::Built => "built",
                },
                "table_s": m.table_s,
                "mode_dvpp_v": m.mode_dvpp_v,
                "reads": r.reads,
                "mean_rber": (r.reads > 0).then(|| r.rber_sum / r.reads as f64),
                "reads_by_soft_level": soft_levels,
                "read_retries": r.read_retries,
                "uncorrectable_reads": r.uncorrectable,
                "detected_only_reads": r.detected_only,
            }),
        }
    }

    /// Build the report. `trace` describes the input; `wall_s` is the whole run's wall time
    /// (pre-pass, preconditioning, replay) and `replay_wall_s` the replay's alone.
    pub fn report(&self, trace: Value, wall_s: f64, replay_wall_s: f64) -> Value {
        let s = &self.stats;
        let g = &self.ftl.geo;
        let host = host_report(s);
        // No host page was programmed (a read-only trace): write amplification is undefined.
        // The padding of partial super-pages is programmed too (cells written, blocks used):
        // counted with the programs (0 without superpage allocation).
        let pads: u64 = self.stats.device.superpage_padded_pages.iter().sum();
        let wa = (s.flash_programs.host > 0)
            .then(|| (s.flash_programs.total() + pads) as f64 / s.flash_programs.host as f64);
        let span_ns = self.now_ns();
        let per_source = |b: &crate::stats::BySource| {
            let mut m = serde_json::Map::new();
            for src in Source::ALL {
                let v = match src {
                    Source::Host => b.host,
                    Source::Gc => b.gc,
                    Source::Refresh => b.refresh,
                    Source::Migration => b.migration,
                    Source::Scrub => b.scrub,
                    // Only with a cached mapping table (reports without one are unchanged).
                    Source::Mapping if self.map.is_none() => continue,
                    Source::Mapping => b.mapping,
                };
                m.insert(src.name().into(), json!(v));
            }
            Value::Object(m)
        };
        let by_name = |names: Vec<&str>, counts: &[u64]| {
            let mut m = serde_json::Map::new();
            for (n, c) in names.iter().zip(counts) {
                m.insert((*n).to_string(), json!(c));
            }
            Value::Object(m)
        };
        let t = self.timing();
        let util = |busy: &[u64]| {
            if busy.is_empty() || span_ns == 0 {
                0.0
            } else {
                busy.iter().sum::<u64>() as f64 / busy.len() as f64 / span_ns as f64
            }
        };
        let rho = self.config().op_fraction_of_logical();
        let requests = host.requests;
        let bits = g.cell.bits();
        let page_types: Vec<&str> = (0..bits)
            .map(|b| crate::flash::PageType::of_bit(b, bits).name())
            .collect();
        let mut by_type = serde_json::Map::new();
        for (i, name) in page_types.iter().enumerate() {
            let pt = crate::flash::PageType::of_bit(i, bits) as usize;
            by_type.insert((*name).into(), json!(s.reads_by_page_type[pt]));
        }
        let mut report = json!({
            "nandlab_version": env!("CARGO_PKG_VERSION"),
            "scheme": self.scheme().name(),
            "seed": self.config().seed,
            "trace": trace,
            "device": {
                "cell": g.cell,
                "channels": g.channels,
                "chips_per_channel": g.chips_per_channel,
                "dies_per_chip": g.dies_per_chip,
                "planes_per_die": g.planes_per_die,
                "blocks_per_plane": g.blocks_per_plane,
                // The flash's pages (the FTL's are mapping units with `mapping_unit_bytes`).
                "pages_per_block": g.pages_per_block / self.units,
                "page_size_bytes": g.page_size_bytes * self.units,
                "dies": g.dies(),
                "planes": g.planes(),
                "logical_pages": self.logical_pages(),
                "logical_bytes": self.logical_pages() * g.page_size_bytes as u64,
                "physical_bytes": g.physical_bytes(),
                "op_percent_of_logical": rho * 100.0,
                "op_percent_of_physical": rho / (1.0 + rho) * 100.0,
                "gc_threshold_blocks_per_plane": self.ftl.gc_threshold_blocks,
                "read_us": t.read_ns.iter().take(bits).map(|&x| x as f64 / 1000.0).collect::<Vec<_>>(),
                "transfer_us": t.transfer_ns as f64 / 1000.0,
                "erase_us": t.erase_ns as f64 / 1000.0,
                "program_modes": t.modes.iter().map(|m| json!({
                    "name": m.name,
                    "program_us": m.program_ns.iter().take(bits).map(|&x| x as f64 / 1000.0).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "ecc": t.eccs.iter().map(|e| json!({
                    "name": e.name, "decode_us": e.decode_ns as f64 / 1000.0,
                    "extra_sense_us": e.extra_sense_ns as f64 / 1000.0,
                })).collect::<Vec<_>>(),
            },
            "config": self.config(),
            "host": host,
            "flash": {
                "reads": s.flash_reads.total(),
                "programs": s.flash_programs.total(),
                "erases": s.flash_erases.total(),
                "reads_by_source": per_source(&s.flash_reads),
                "programs_by_source": per_source(&s.flash_programs),
                "erases_by_source": per_source(&s.flash_erases),
                "programs_by_mode": by_name(t.modes.iter().map(|m| m.name.as_str()).collect(), &s.programs_by_mode),
                "reads_by_ecc": by_name(t.eccs.iter().map(|e| e.name.as_str()).collect(), &s.reads_by_ecc),
                "reads_by_page_type": Value::Object(by_type),
                "die_utilization": util(&s.die_busy_ns),
                "channel_utilization": util(&s.channel_busy_ns),
            },
            "gc": {
                "invocations": s.gc_invocations,
                "pages_moved": s.gc_pages_moved,
                "moves_cancelled": s.gc_moves_cancelled,
                "victim_valid_mean": (s.gc_invocations > 0).then(||
                    s.gc_victim_valid_sum as f64 / s.gc_invocations as f64),
            },
            "rewrites": s.rewrites,
            "reliability": self.reliability_report(),
            "write_amplification": wa,
            "wear": {
                "erase_count": EraseDistribution::of(self.ftl.erase_counts()),
            },
            "precondition": self.precondition,
            "scheme_stats": self.scheme().stats(),
            "sim": {
                "span_s": span_ns as f64 / 1e9,
                "last_arrival_s": self.last_arrival_ns() as f64 / 1e9,
                // Host throughput over the simulated time to the last completion (the span
                // may run on past it with background work such as refresh checks).
                "last_completion_s": s.last_completion_ns as f64 / 1e9,
                "host_throughput_rps": (s.last_completion_ns > 0).then(||
                    requests as f64 / (s.last_completion_ns as f64 / 1e9)),
                "events": s.events,
            },
            // The only fields that differ between two runs of the same inputs (wall clock):
            // a report without `timing` is the determinism check (docs/report.md).
            "timing": {
                "wall_s": wall_s,
                "replay_wall_s": replay_wall_s,
                "host_requests_per_s": if wall_s > 0.0 { requests as f64 / wall_s } else { 0.0 },
                "replay_requests_per_s": if replay_wall_s > 0.0 { requests as f64 / replay_wall_s } else { 0.0 },
            },
        });
        if self.units > 1 {
            // Only runs that map units smaller than a page carry it (other reports unchanged).
            let d = report["device"].as_object_mut().expect("device section");
            d.insert("mapping_unit_bytes".into(), json!(g.page_size_bytes));
        }
        if !self.config().refresh.is_off() {
            report["refresh"] = self.refresh_report();
        }
        if let Some(r) = self.regions_report() {
            report["regions"] = r;
        }
        if let Some(m) = self.map_report() {
            // Only with a cached mapping table (other reports unchanged).
            report["mapping"] = m;
        }
        if let Some(flows) = self.flow_host_reports() {
            // Only runs of concurrent flows (`[[host.flows]]`); the API adds each flow's
            // name, trace and queue settings.
            report["flows"] = json!(flows);
        }
        if let Some(l) = self.link.as_ref() {
            // Only with a host link (other reports unchanged).
            report["link"] = json!(l.report(span_ns));
        }
        if !self.config().regions.bits_per_cell.is_empty() {
            // Reduced-state regions (FlexLevel): what the blocks hold, the capacity lost, and
            // the over-provisioning left after the loss.
            let bpp = g.blocks_per_plane;
            let blocks = self.config().regions.blocks_per_plane(bpp);
            let usable_pages: u64 = blocks
                .iter()
                .enumerate()
                .map(|(r, &b)| b as u64 * self.ftl.region_pages(r as u8) as u64)
                .sum::<u64>()
                * g.planes() as u64;
            let raw_pages = g.pages();
            let logical = self.logical_pages();
            let d = report["device"].as_object_mut().expect("device section");
            d.insert(
                "usable_bytes".into(),
                json!(usable_pages * g.page_size_bytes as u64),
            );
            d.insert(
                "capacity_loss_percent".into(),
                json!((1.0 - usable_pages as f64 / raw_pages as f64) * 100.0),
            );
            d.insert(
                "op_percent_of_logical_effective".into(),
                json!((usable_pages as f64 / logical as f64 - 1.0) * 100.0),
            );
            d.insert(
                "region_pages_per_block".into(),
                json!((0..blocks.len())
                    .map(|r| self.ftl.region_pages(r as u8))
                    .collect::<Vec<_>>()),
            );
        }
        if self.config().cache.is_some() || !self.config().faults.is_off() {
            report["cache"] = self.cache_report();
        }
        if s.sync_rewrites > 0 {
            // Only runs with synchronous scheme rewrites carry it (other reports unchanged).
            report["sync_rewrites"] = json!(s.sync_rewrites);
        }
        self.device_features_report(&mut report);
        if self.config().stats.latency_cdf {
            report["host"]["cdf"] = crate::stats::cdf::cdf_report(s);
        }
        report
    }

    /// Counters of the device features of issue 13, in `sim`, each only when its feature is
    /// on (reports without them stay byte-identical).
    fn device_features_report(&self, report: &mut Value) {
        let d = &self.stats.device;
        let sim = report["sim"].as_object_mut().expect("sim section");
        if self.rmw_on {
            sim.insert("rmw_reads".into(), json!(d.rmw_reads));
            sim.insert("rmw_unmapped_writes".into(), json!(d.rmw_unmapped));
        }
        if self.mp_on {
            sim.insert("multi_plane_reads".into(), json!(d.multi_plane_ops[0]));
            sim.insert("multi_plane_programs".into(), json!(d.multi_plane_ops[1]));
            sim.insert("multi_plane_erases".into(), json!(d.multi_plane_ops[2]));
            sim.insert("multi_plane_planes".into(), json!(d.multi_plane_txns));
        }
        if self.os_on {
            sim.insert("one_shot_programs".into(), json!(d.one_shot_ops[0]));
            sim.insert("one_shot_program_pages".into(), json!(d.one_shot_pages[0]));
            sim.insert("one_shot_moves".into(), json!(d.one_shot_ops[1]));
            sim.insert("one_shot_move_pages".into(), json!(d.one_shot_pages[1]));
        }
        if self.config().sched.suspension {
            sim.insert("suspensions_program".into(), json!(d.suspensions[0]));
            sim.insert("suspensions_erase".into(), json!(d.suspensions[1]));
        }
        if let Some(dr) = self.dram.as_ref() {
            for (k, v) in [
                ("dram_entries", dr.entries() as u64),
                ("dram_write_hits", dr.write_hits),
                ("dram_write_misses", dr.write_misses),
                ("dram_read_hits", dr.read_hits),
                ("dram_read_misses", dr.read_misses),
                ("dram_flushes", dr.flushes),
                ("dram_evictions", dr.evictions),
                ("dram_backpressure_waits", dr.backpressure_waits),
            ] {
                sim.insert(k.into(), json!(v));
            }
        }
        if self.sp_on {
            let share = |i: usize| {
                (d.superpage_pages[i] > 0)
                    .then(|| d.superpage_multi_plane_pages[i] as f64 / d.superpage_pages[i] as f64)
            };
            for (k, v) in [
                ("superpage_program_runs", json!(d.superpage_runs[0])),
                ("superpage_program_pages", json!(d.superpage_pages[0])),
                (
                    "superpage_program_padded_pages",
                    json!(d.superpage_padded_pages[0]),
                ),
                ("superpage_program_multi_plane_share", json!(share(0))),
                ("superpage_move_runs", json!(d.superpage_runs[1])),
                ("superpage_move_pages", json!(d.superpage_pages[1])),
                (
                    "superpage_move_padded_pages",
                    json!(d.superpage_padded_pages[1]),
                ),
                ("superpage_move_multi_plane_share", json!(share(1))),
                ("superpage_holds", json!(d.superpage_holds)),
            ] {
                sim.insert(k.into(), v);
            }
        }
        if self.config().ftl.trim {
            sim.insert("trim_requests".into(), json!(d.trim_requests));
            sim.insert("trim_bytes".into(), json!(d.trim_bytes));
            sim.insert("trimmed_pages".into(), json!(d.trimmed_pages));
        }
    }

    /// The `regions` section (only with `[regions]`): layout, latencies, wear stages, per-region
    /// counts, the EFM Fig. 6 flash-time breakdown and effective-wear lifetime (EFM §V-D).
    fn regions_report(&self) -> Option<Value> {
        let rg = self.rg.as_ref()?;
        let c = &self.config().regions;
        let t = self.timing();
        let st = &self.stats.regions;
        let n = rg.n;
        let us = |ns: u64| ns as f64 / 1000.0;
        let stage_end = self.ftl.wear_stage();
        let read_at =
            |s: usize| -> Vec<f64> { (0..n).map(|r| us(rg.read_ns[r * rg.stages + s])).collect() };
        let weights: Vec<f64> = (0..n).map(|r| c.weight(r)).collect();
        let eff = |counts: &[u64]| -> f64 {
            counts
                .iter()
                .zip(&weights)
                .map(|(&x, w)| x as f64 * w)
                .sum()
        };
        let programs: u64 = st.programs.iter().sum();
        let erases: u64 = st.erases.iter().sum();
        let (eff_p, eff_e) = (eff(&st.programs), eff(&st.erases));
        let gain = |raw: u64, e: f64| {
            if e > 0.0 {
                Some(raw as f64 / e - 1.0)
            } else {
                None
            }
        };
        let blocks = self.ftl.region_blocks();
        Some(json!({
            "count": n,
            "names": (0..n).map(|r| c.name(r)).collect::<Vec<_>>(),
            "fractions": c.fractions,
            "blocks_per_plane": blocks,
            "gc_threshold_blocks": self.ftl.region_gc_threshold(),
            "program_modes": rg.mode.iter().map(|&m| t.modes[m as usize].name.clone()).collect::<Vec<_>>(),
            "program_us": rg.mode.iter().map(|&m| us(t.program_ns(crate::flash::PageType::Lsb, m))).collect::<Vec<_>>(),
            "read_latency_source": if rg.table {
                "table: regions.read_us by wear stage (EFM Tables II-III)"
            } else {
                "model: reliability model (vth), RBER from each region's program-mode dVpp and its block's P/E"
            },
            "stage_pe": if c.stage_pe.is_empty() { vec![0.0] } else { c.stage_pe.clone() },
            "stage_at_start": rg.stage_at_start,
            "stage_at_end": stage_end,
            "mean_pe_at_start": rg.mean_pe_at_start,
            "mean_pe_at_end": self.ftl.mean_pe(),
            "read_us_at_start": if rg.table { json!(read_at(rg.stage_at_start)) } else { Value::Null },
            "read_us_at_end": if rg.table { json!(read_at(stage_end)) } else { Value::Null },
            "reads": st.reads,
            "host_reads": st.host_reads,
            "programs": st.programs,
            "host_programs": st.host_programs,
            "erases": st.erases,
            "breakdown_us": {
                "optimal_rw": us(st.optimal_ns),
                "nonoptimal_read": us(st.nonoptimal_read_ns),
                "nonoptimal_write": us(st.nonoptimal_write_ns),
                "migration": us(st.migration_ns),
                "gc": us(st.gc_ns),
                "other": us(st.other_ns),
            },
            "wear_weight": weights,
            "effective_programs": eff_p,
            "effective_erases": eff_e,
            // Lifetime gain from reduced effective wearing (EFM §V-D): raw wear over effective
            // wear, minus 1. By programs (each page program costs 1/pages_per_block of an erase
            // of its block in steady state; defined even when the run erased nothing) and by
            // the erases the run made.
            "lifetime_gain_by_programs": gain(programs, eff_p),
            "lifetime_gain_by_erases": gain(erases, eff_e),
        }))
    }

    fn refresh_report(&self) -> Value {
        let r = &self.stats.refresh;
        let per_block =
            |x: u64| (r.blocks_refreshed > 0).then(|| x as f64 / r.blocks_refreshed as f64);
        let types = ["lsb", "csb", "msb", "tsb"];
        let mut adj = serde_json::Map::new();
        for (i, t) in types.iter().enumerate() {
            adj.insert((*t).into(), json!(r.adjusted_reads_by_type[i]));
        }
        let v = &r.host_msb_reads_by_lower_valid;
        json!({
            // Effective values: periods are in trace time and stretch with host.time_scale.
            "period_s": self.config().refresh.period_s * self.config().host.time_scale,
            "check_interval_s": self.refresh_check_ns() as f64 / 1e9,
            "blocks_refreshed": r.blocks_refreshed,
            "blocks_adjusted": r.blocks_adjusted,
            "skipped_empty": r.skipped_empty,
            "pages_moved": r.pages_moved,
            "moves_cancelled": r.moves_cancelled,
            "wordlines_adjusted": r.wordlines_adjusted,
            "pages_adjusted": r.pages_adjusted,
            "readbacks": r.readbacks,
            "pages_rewritten": r.pages_rewritten,
            // IDA §III-C / Table IV: extra reads (N_target read-backs) and writes (N_error)
            // per refreshed block, relative to the baseline refresh.
            "extra_reads_per_block": per_block(r.readbacks),
            "extra_writes_per_block": per_block(r.pages_rewritten),
            "adjusted_reads_by_type": Value::Object(adj),
            "moves_by_page_type": crate::stats::page_type_matrix_json(
                &r.moves_by_page_type, self.ftl.geo.cell.bits()),
            "host_msb_reads": {
                "lower_all_valid": v[3],
                "lsb_invalid_csb_valid": v[2],
                "lsb_valid_csb_invalid": v[1],
                "lower_all_invalid": v[0],
                "served_adjusted": r.host_msb_reads_adjusted,
            },
        })
    }

    /// The `cache` section (only with `[cache]` or `[faults]`): latency per cache tag, host
    /// reads and GC moves by ECC (FlexECC Table 3), cleaning time (Fig. 5), backend disk,
    /// idle time, verification and faults (Table 4).
    fn cache_report(&self) -> Value {
        let c = &self.stats.cache;
        let names: Vec<&str> = self.timing().eccs.iter().map(|e| e.name.as_str()).collect();
        let n = names.len();
        let mut by_tag = serde_json::Map::new();
        for tag in crate::host::cache::CacheOp::ALL {
            let l = &c.by_tag[tag as usize];
            if tag == crate::host::cache::CacheOp::None && l.response.summary().count == 0 {
                continue;
            }
            by_tag.insert(
                tag.name().into(),
                json!({
                    "response": l.response.summary(),
                    "wait": l.wait.summary(),
                    "service": l.service.summary(),
                }),
            );
        }
        let mut reads = serde_json::Map::new();
        for (i, name) in names.iter().enumerate() {
            reads.insert((*name).into(), json!(c.host_reads_by_ecc[i]));
        }
        let mut moves = serde_json::Map::new();
        for (i, a) in names.iter().enumerate() {
            for (j, b) in names.iter().enumerate() {
                moves.insert(format!("{a}->{b}"), json!(c.gc_moves_by_ecc[i * n + j]));
            }
        }
        let f = &self.config().faults;
        json!({
            "by_tag": Value::Object(by_tag),
            "host_reads_by_ecc": Value::Object(reads),
            "gc_moves_by_ecc": Value::Object(moves),
            "cleaning_us": c.cleaning_ns as f64 / 1000.0,
            "backend": {
                "disk_us": self.disk_ns as f64 / 1000.0,
                "disk_accesses": c.disk_accesses,
                "known_corrupt_disk_reads": c.known_corrupt_disk_reads,
                "fetches_refill": c.fetches[0],
                "fetches_prefetch": c.fetches[1],
                "fetches_cancelled": c.fetches_cancelled,
                "refilled": c.fetch_programs[0],
                "prefetched": c.fetch_programs[1],
            },
            "idle": {
                "threshold_us": self.idle_threshold_ns.map(|t| t as f64 / 1000.0),
                "calls": c.idle_calls,
                "idle_s": c.idle_ns as f64 / 1e9,
                "verified_pages": c.verified_pages,
                "verify_found": c.verify_found,
            },
            "faults": {
                "mode": f.mode,
                "rber": (f.mode == crate::reliability::faults::FaultMode::EveryNthBit)
                    .then_some(f.rber),
                "period_pages": self.fault_plan.map(|p| p.0),
                "planned": self.fault_plan.map(|p| p.1),
                "corruptions": c.corruptions,
                "corruptions_detect_only": c.corruptions_detect_only,
                "skipped": c.corruptions_skipped,
                "corrected_reads": c.corrected_reads,
                "uncorrectable_reads": c.uncorrectable_reads,
                "gc_corrected": c.gc_corrected,
                "gc_carried": c.gc_carried,
                "corrupted_at_end": self.faults.len(),
            },
        })
    }
}
