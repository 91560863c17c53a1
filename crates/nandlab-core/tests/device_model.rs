//! The device model of issue 13: scheme/configuration mismatch errors, read-modify-write,
//! TRIM, multi-plane operations, program/erase suspension, the DRAM write cache and the
//! default drive. Latency tests run at low load, where each response is exactly its service
//! time, and state the expected value from the configured latencies.

use nandlab_core::api::check_config;
use std::path::PathBuf;

fn preset(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// A device with one program mode, one ECC kind, MLC and no regions or refresh.
use crate::common::SMALL_DEV as PLAIN;

// ----- item 7: scheme/config mismatch -----------------------------------------------------

#[test]
fn a_scheme_the_device_cannot_serve_is_a_one_line_error_naming_the_preset() {
    for (scheme, preset_name) in [
        ("efm", "efm"),
        ("efm_static", "efm"),
        ("warm", "efm"),
        ("hotis", "efm"),
        ("tos18", "efm"),
        ("agcr", "xia-diffecc"),
        ("diffecc_wa", "xia-diffecc"),
        ("ida", "ida-tlc"),
        ("flexlevel", "flexlevel"),
    ] {
        let err = check_config(PLAIN, None, &[], Some(scheme))
            .err()
            .or_else(|| {
                // flexlevel checks its regions when the engine is built.
                let cfg = nandlab_core::config::load(
                    PLAIN,
                    "<test>",
                    &[format!("scheme.name=\"{scheme}\"")],
                )
                .unwrap();
                let mut open = || {
                    Ok(nandlab_core::host::VecSource::new(vec![
                        nandlab_core::trace::HostRequest {
                            arrival_ns: 0,
                            op: nandlab_core::trace::Op::Write,
                            offset_bytes: 0,
                            len_bytes: 4096,
                        },
                    ]))
                };
                nandlab_core::api::simulate_source(
                    cfg,
                    &mut open,
                    serde_json::Value::Null,
                    &mut |_, _, _| {},
                )
                .err()
            })
            .unwrap_or_else(|| panic!("{scheme} ran on a device it cannot serve"));
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{scheme}: {msg}");
        assert!(
            msg.contains(&format!("`{preset_name}`")),
            "{scheme} should name preset {preset_name}: {msg}"
        );
    }
}

#[test]
fn each_scheme_runs_on_its_own_preset() {
    for (scheme, preset_name, extra) in [
        ("efm", "efm", None),
        ("efm_static", "efm", None),
        ("warm", "efm", None),
        ("hotis", "efm", None),
        ("tos18", "efm", None),
        ("agcr", "efm", None),
        ("agcr", "xia-diffecc", None),
        ("diffecc_wa", "xia-diffecc", None),
        ("ida", "ida-tlc", Some("refresh.period_s=20.0")),
        (
            "ida",
            "ida-tlc",
            Some("precondition.refresh_before_replay=true"),
        ),
        ("baseline", "default", None),
    ] {
        let ov: Vec<String> = extra.into_iter().map(String::from).collect();
        check_config(&preset(preset_name), None, &ov, Some(scheme))
            .unwrap_or_else(|e| panic!("{scheme} on {preset_name}: {e}"));
    }
    // IDA without any data refresh does nothing IDA does.
    let off = ["refresh.period_s=0.0".to_string()];
    let e = check_config(&preset("ida-tlc"), None, &off, Some("ida")).unwrap_err();
    assert!(e.to_string().contains("refresh"), "{e}");
}

// ----- shared helpers for the latency tests -------------------------------------------------

use crate::common::{f, rq, run};
use nandlab_core::config::load;
use nandlab_core::trace::{HostRequest, Op};

/// 4 dies on 4 channels, 8 KiB pages, fixed latencies; nothing pre-written.
const LAT: &str = r#"
[device]
channels = 4
pages_per_block = 64
page_size_bytes = 8192
logical_capacity_bytes = 268435456
[timing]
read_us = [45.0]
program_us = [1300.0]
erase_us = 3800.0
channel_mt_s = 400.0
ecc_decode_us = 12.5
[precondition]
fill = "none"
"#;
const PS: u64 = 8192;
/// One page over the channel: 8192 B at 400 MT/s, ns.
const XFER: u64 = 20_480;
const READ: u64 = 45_000 + XFER + 12_500;
const PROG: u64 = XFER + 1_300_000;

// ----- item 4: read-modify-write --------------------------------------------------------------

#[test]
fn rmw_write_costs_a_read_and_a_program_only_into_a_mapped_page() {
    // Page 0 written whole; 100 ms later 512 B into it (mapped: read + program); then 512 B
    // into page 40 (unmapped: program only), then a page-aligned full write (program only).
    let reqs = vec![
        rq(0, Op::Write, 0, PS),
        rq(100_000_000, Op::Write, 1024, 512),
        rq(200_000_000, Op::Write, 40 * PS + 512, 512),
        rq(300_000_000, Op::Write, 8 * PS, PS),
    ];
    let on = run(LAT, &["ftl.read_modify_write=true"], reqs.clone());
    assert_eq!(f(&on, "sim.rmw_reads"), 1.0);
    assert_eq!(f(&on, "sim.rmw_unmapped_writes"), 1.0);
    assert_eq!(f(&on, "flash.reads_by_source.host"), 1.0);
    let mean = (3 * PROG + READ + PROG) as f64 / 4.0;
    assert_eq!(f(&on, "host.write_mean_us") * 1000.0, mean);
    // The RMW read is service, not queue wait: nothing else is on the device.
    assert_eq!(f(&on, "host.wait.write.mean_us"), 0.0);
    assert_eq!(f(&on, "host.service.write.mean_us") * 1000.0, mean);
    // Off: a partial write programs the whole page at once, no read, no rmw keys.
    let off = run(LAT, &[], reqs);
    assert_eq!(f(&off, "host.write_mean_us") * 1000.0, PROG as f64);
    assert_eq!(f(&off, "flash.reads"), 0.0);
    assert!(off["sim"].get("rmw_reads").is_none());
}

#[test]
fn rmw_reads_both_partial_ends_of_a_multi_page_write() {
    // Pages 0..4 written; then bytes [4096, 3·8192 + 4096) = partial page 0, full 1 and 2,
    // partial page 3: two RMW reads (pages 0 and 3), on two dies, in parallel.
    let reqs = vec![
        rq(0, Op::Write, 0, 4 * PS),
        rq(100_000_000, Op::Write, 4096, 3 * PS),
    ];
    let r = run(LAT, &["ftl.read_modify_write=true"], reqs);
    assert_eq!(f(&r, "sim.rmw_reads"), 2.0);
    assert_eq!(f(&r, "flash.programs"), 8.0);
    let mean = (PROG + READ + PROG) as f64 / 2.0;
    assert_eq!(f(&r, "host.write_mean_us") * 1000.0, mean);
    assert_eq!(f(&r, "host.wait.write.mean_us"), 0.0);
}

// ----- item 5: TRIM / discard -------------------------------------------------------------

#[test]
fn readers_yield_discards_only_when_asked() {
    use nandlab_core::trace::{TraceOptions, TraceReader};
    let dir = std::env::temp_dir().join(format!("nandlab-trim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let canon = dir.join("t.csv");
    std::fs::write(
        &canon,
        "time_ns,op,offset_bytes,size_bytes\n0,W,0,8192\n10,D,0,8192\n20,trim,8192,8192\n",
    )
    .unwrap();
    let blk = dir.join("b.blktrace.txt");
    std::fs::write(
        &blk,
        "  8,0    1        1     0.000000000  100  D   W 0 + 16 [fio]\n  \
         8,0    1        2     0.000001000  100  D   D 16 + 16 [fstrim]\n",
    )
    .unwrap();
    for (path, fmt) in [
        (&canon, nandlab_core::trace::TraceFormat::Canonical),
        (&blk, nandlab_core::trace::TraceFormat::Blkparse),
    ] {
        for discards in [false, true] {
            let opts = TraceOptions {
                format: Some(fmt),
                discards,
                ..TraceOptions::default()
            };
            let mut r = TraceReader::open(path, &opts).unwrap();
            let mut ops = Vec::new();
            while let Some(q) = r.next_request().unwrap() {
                ops.push(q.op);
            }
            let trims = ops.iter().filter(|&&o| o == Op::Trim).count() as u64;
            if discards {
                assert!(trims >= 1, "{fmt:?}: {ops:?}");
                assert_eq!(r.counters().non_request_skipped, 0);
            } else {
                assert_eq!(trims, 0);
                assert!(r.counters().non_request_skipped >= 1, "{fmt:?}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_trimmed_page_reads_as_unmapped_and_is_free_space_to_gc() {
    // Whole pages 0..4 written, then a discard of [4096, 3·8192 + 4096): pages 1 and 2 are
    // covered whole (unmapped), pages 0 and 3 partly (kept). Reads of 0..4 then touch flash
    // for pages 0 and 3 only.
    let mut reqs = vec![
        rq(0, Op::Write, 0, 4 * PS),
        rq(10_000_000, Op::Trim, 4096, 3 * PS),
    ];
    for p in 0..4 {
        reqs.push(rq(20_000_000 + p * 10_000_000, Op::Read, p * PS, PS));
    }
    let r = run(LAT, &["ftl.trim=true"], reqs);
    assert_eq!(f(&r, "sim.trim_requests"), 1.0);
    assert_eq!(f(&r, "sim.trimmed_pages"), 2.0);
    assert_eq!(f(&r, "flash.reads"), 2.0);
    assert_eq!(f(&r, "host.unmapped_read_pages"), 2.0);
    assert_eq!(f(&r, "host.reads"), 4.0);

    // GC: a small device filled, then half its logical space trimmed, then random
    // overwrites of the other half: the trimmed half's blocks hold no valid data, so GC moves
    // fewer pages than when the same half is left valid.
    let small = r#"
[device]
channels = 1
pages_per_block = 32
page_size_bytes = 8192
blocks_per_plane = 64
logical_capacity_bytes = 14680064
[precondition]
fill = "none"
"#;
    let pages = 1700;
    let mut base = vec![rq(0, Op::Write, 0, pages * PS)];
    let mut rng = 12345u64;
    // The fill takes 1700 × 1.32 ms ≈ 2.2 s on the one die; the trim comes after it.
    let mut t = 6_000_000_000u64;
    let mut writes = Vec::new();
    for _ in 0..4000 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let p = pages / 2 + (rng >> 33) % (pages / 2);
        writes.push(rq(t, Op::Write, p * PS, PS));
        t += 5_000_000;
    }
    let mut trimmed = base.clone();
    trimmed.push(rq(5_000_000_000, Op::Trim, 0, pages / 2 * PS));
    trimmed.extend(writes.iter().copied());
    base.extend(writes);
    let with = run(small, &["ftl.trim=true"], trimmed);
    let without = run(small, &["ftl.trim=true"], base);
    assert_eq!(f(&with, "sim.trimmed_pages"), (pages / 2) as f64);
    assert!(f(&with, "flash.erases") > 0.0);
    assert!(
        f(&with, "gc.pages_moved") < f(&without, "gc.pages_moved"),
        "{} vs {}",
        f(&with, "gc.pages_moved"),
        f(&without, "gc.pages_moved")
    );
}

// ----- item 1: multi-plane operations ---------------------------------------------------------

/// One die on one channel with two planes.
const TWO_PLANES: &str = r#"
[device]
channels = 1
planes_per_die = 2
pages_per_block = 64
page_size_bytes = 8192
logical_capacity_bytes = 67108864
[timing]
read_us = [45.0]
program_us = [1300.0]
erase_us = 3800.0
channel_mt_s = 400.0
ecc_decode_us = 12.5
[precondition]
fill = "none"
"#;

#[test]
fn a_multi_plane_program_takes_one_program_time_and_a_read_one_sense() {
    // LPNs 0 and 1 stripe to planes 0 and 1 of the die, both at page offset 0.
    let reqs = vec![
        rq(0, Op::Write, 0, 2 * PS),
        rq(100_000_000, Op::Read, 0, 2 * PS),
    ];
    let on = run(TWO_PLANES, &["sched.multi_plane=true"], reqs.clone());
    assert_eq!(f(&on, "sim.multi_plane_programs"), 1.0);
    assert_eq!(f(&on, "sim.multi_plane_reads"), 1.0);
    assert_eq!(f(&on, "sim.multi_plane_planes"), 4.0);
    // Both transfers on the channel, then one program.
    assert_eq!(
        f(&on, "host.write_mean_us") * 1000.0,
        (2 * XFER + 1_300_000) as f64
    );
    // One sense, both transfers, then the decode.
    assert_eq!(
        f(&on, "host.read_mean_us") * 1000.0,
        (45_000 + 2 * XFER + 12_500) as f64
    );
    // Off: one plane at a time.
    let off = run(TWO_PLANES, &[], reqs);
    assert_eq!(f(&off, "host.write_mean_us") * 1000.0, (2 * PROG) as f64);
    assert_eq!(
        f(&off, "host.read_mean_us") * 1000.0,
        (2 * (45_000 + XFER) + 12_500) as f64
    );
    assert!(off["sim"].get("multi_plane_reads").is_none());
}

/// `pages` pages written at t = 0, then `n` random 2-page overwrites (LCG seeded with `seed`)
/// every 3 ms from `t0_ns`: enough to run GC on the small test drives.
fn fill_then_overwrites(pages: u64, n: usize, seed: u64, t0_ns: u64) -> Vec<HostRequest> {
    let mut reqs = vec![rq(0, Op::Write, 0, pages * PS)];
    let mut rng = seed;
    let mut t = t0_ns;
    for _ in 0..n {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        reqs.push(rq(t, Op::Write, ((rng >> 33) % pages) * PS, 2 * PS));
        t += 3_000_000;
    }
    reqs
}

#[test]
fn multi_plane_runs_gc_deterministically() {
    let cfg = r#"
[device]
channels = 1
planes_per_die = 2
pages_per_block = 32
page_size_bytes = 8192
blocks_per_plane = 64
logical_capacity_bytes = 29360128
[precondition]
fill = "none"
"#;
    let reqs = fill_then_overwrites(3400, 6000, 99, 6_000_000_000);
    let r = run(cfg, &["sched.multi_plane=true"], reqs.clone());
    assert!(f(&r, "flash.erases") > 0.0);
    assert!(f(&r, "sim.multi_plane_programs") > 0.0);
    let a = run(cfg, &["sched.multi_plane=true"], reqs);
    let strip = crate::without_wall_clock;
    assert_eq!(strip(r), strip(a), "deterministic");
}

// ----- item 2: program/erase suspension -----------------------------------------------------

#[test]
fn a_read_that_suspends_a_program_waits_suspend_plus_its_read_and_delays_the_program() {
    // Page 1 pre-written at t = 0 (done by 1.32 ms); a program of page 0 (die 0) starts at
    // 10 ms; 500 µs later a read of page 4 (same die: 4 channels, LPN 4 -> die 0) arrives.
    let reqs = vec![
        rq(0, Op::Write, 4 * PS, PS),
        rq(10_000_000, Op::Write, 0, PS),
        rq(10_500_000, Op::Read, 4 * PS, PS),
    ];
    let ov = [
        "sched.suspension=true",
        "sched.suspend_program_us=20",
        "sched.resume_us=10",
    ];
    let on = run(LAT, &ov, reqs.clone());
    assert_eq!(f(&on, "sim.suspensions_program"), 1.0);
    let (susp, resume) = (20_000u64, 10_000u64);
    // The read: suspend latency, then its own sense + transfer + decode.
    assert_eq!(f(&on, "host.read_mean_us") * 1000.0, (susp + READ) as f64);
    // The program ends later by the suspend latency, the read's die time and the resume.
    let write0 = PROG + susp + (45_000 + XFER) + resume;
    assert_eq!(
        f(&on, "host.write_mean_us") * 1000.0,
        (PROG + write0) as f64 / 2.0
    );
    // Off: the read waits for the program.
    let off = run(LAT, &[], reqs);
    let read_off = PROG - 500_000 + READ;
    assert_eq!(f(&off, "host.read_mean_us") * 1000.0, read_off as f64);
    assert!(off["sim"].get("suspensions_program").is_none());
}

#[test]
fn suspensions_per_operation_are_capped() {
    // Three reads 100 µs apart during one program: with a cap of 1 only the first suspends;
    // the later ones find the program running again and wait for it.
    let mut reqs = vec![
        rq(0, Op::Write, 4 * PS, PS),
        rq(10_000_000, Op::Write, 0, PS),
    ];
    for k in 0..3u64 {
        reqs.push(rq(10_300_000 + k * 200_000, Op::Read, 4 * PS, PS));
    }
    let r = run(
        LAT,
        &["sched.suspension=true", "sched.max_suspends_per_op=1"],
        reqs.clone(),
    );
    assert_eq!(f(&r, "sim.suspensions_program"), 1.0);
    let r3 = run(
        LAT,
        &["sched.suspension=true", "sched.max_suspends_per_op=3"],
        reqs,
    );
    assert_eq!(f(&r3, "sim.suspensions_program"), 3.0);
    assert!(f(&r3, "host.read_mean_us") < f(&r, "host.read_mean_us"));
}

// ----- item 3: controller DRAM write cache ------------------------------------------------------

#[test]
fn dram_cache_acknowledges_writes_and_serves_read_hits_in_the_dram_time() {
    let reqs = vec![
        rq(0, Op::Write, 0, PS),
        rq(100_000_000, Op::Write, 0, PS),
        rq(200_000_000, Op::Read, 0, PS),
        rq(300_000_000, Op::Read, 8 * PS, PS),
    ];
    let ov = ["dram.capacity_bytes=\"1MiB\"", "dram.access_us=5"];
    let r = run(LAT, &ov, reqs.clone());
    assert_eq!(f(&r, "host.write_mean_us") * 1000.0, 5_000.0);
    assert_eq!(f(&r, "sim.dram_write_misses"), 1.0);
    assert_eq!(f(&r, "sim.dram_write_hits"), 1.0);
    assert_eq!(f(&r, "sim.dram_read_hits"), 1.0);
    assert_eq!(f(&r, "sim.dram_read_misses"), 1.0);
    assert_eq!(f(&r, "sim.dram_flushes"), 2.0);
    assert_eq!(f(&r, "flash.programs"), 2.0);
    // The hit costs the DRAM time; the miss of an unwritten page reads nothing.
    assert_eq!(f(&r, "flash.reads"), 0.0);
    assert_eq!(f(&r, "host.read.max_us").round(), 5.0);
    let off = run(LAT, &[], reqs);
    assert_eq!(f(&off, "host.write_mean_us") * 1000.0, PROG as f64);
    assert!(off["sim"].get("dram_flushes").is_none());
}

#[test]
fn dram_rewrites_during_a_flush_coalesce_and_a_full_cache_pushes_back() {
    // Page 0 written at 0 and rewritten twice while its flush runs: one more flush.
    let ov = ["dram.capacity_bytes=\"1MiB\"", "dram.access_us=5"];
    let reqs = vec![
        rq(0, Op::Write, 0, PS),
        rq(100_000, Op::Write, 0, PS),
        rq(200_000, Op::Write, 0, PS),
    ];
    let r = run(LAT, &ov, reqs);
    assert_eq!(f(&r, "sim.dram_flushes"), 2.0);
    assert_eq!(f(&r, "flash.programs"), 2.0);
    // Two entries, three pages in one request (three dies): the third waits for the first
    // flush to end, then takes 5 µs.
    let ov = ["dram.capacity_bytes=16384", "dram.access_us=5"];
    let r = run(LAT, &ov, vec![rq(0, Op::Write, 0, 3 * PS)]);
    assert_eq!(f(&r, "sim.dram_backpressure_waits"), 1.0);
    assert_eq!(f(&r, "sim.dram_evictions"), 1.0);
    assert_eq!(f(&r, "host.write_mean_us") * 1000.0, (PROG + 5_000) as f64);
    assert_eq!(f(&r, "flash.programs"), 3.0);
}

// ----- one-shot programming (3D TLC) --------------------------------------------------------

/// `LAT` as a TLC part programmed one word line at a time.
fn tlc_one_shot(on: bool) -> String {
    format!("{LAT}\n",)
        .replace(
            "[device]\n",
            "[device]\ncell = \"tlc\"\npages_per_block = 96\n",
        )
        .replace("pages_per_block = 64\n", "")
        .replace(
            "[timing]\n",
            &format!("[timing]\none_shot_program = {on}\n"),
        )
}

#[test]
fn a_word_line_of_queued_pages_takes_one_program_time() {
    // LPN 12 (die 0, 4 channels) programs word line 0's LSB from t = 0. At 1 ms a 12-page
    // write queues LPNs 0, 4, 8 on die 0 (and three pages on each other die). When die 0 is
    // free, LPNs 0 and 4 complete word line 0 (CSB, MSB) in one program; LPN 8 starts word
    // line 1 alone. Each other die starts its first page as it is queued (the die is idle)
    // and programs the other two together: 3 + 3 × 2 one-shot programs of 13 pages.
    let reqs = vec![
        rq(0, Op::Write, 12 * PS, PS),
        rq(1_000_000, Op::Write, 0, 12 * PS),
    ];
    let on = run(&tlc_one_shot(true), &[], reqs.clone());
    let first = XFER + 1_300_000;
    let die0 = first + (2 * XFER + 1_300_000) + (XFER + 1_300_000);
    assert_eq!(
        f(&on, "host.write.max_us") * 1000.0,
        (die0 - 1_000_000) as f64
    );
    assert_eq!(f(&on, "sim.one_shot_programs"), 9.0);
    assert_eq!(f(&on, "sim.one_shot_program_pages"), 13.0);
    // Page by page: die 0 programs its four pages one after another.
    let off = run(&tlc_one_shot(false), &[], reqs);
    assert_eq!(
        f(&off, "host.write.max_us") * 1000.0,
        (4 * (XFER + 1_300_000) - 1_000_000) as f64
    );
    assert!(off["sim"].get("one_shot_programs").is_none());
}

#[test]
fn one_shot_gc_moves_a_word_line_per_program_deterministically() {
    let cfg = r#"
[device]
cell = "tlc"
channels = 1
planes_per_die = 2
pages_per_block = 48
page_size_bytes = 8192
blocks_per_plane = 64
logical_capacity_bytes = 44040192
[timing]
one_shot_program = true
[precondition]
fill = "none"
"#;
    let reqs = fill_then_overwrites(5000, 8000, 7, 8_000_000_000);
    let r = run(cfg, &["sched.multi_plane=true"], reqs.clone());
    assert!(f(&r, "flash.erases") > 0.0);
    let (ops, moved) = (
        f(&r, "sim.one_shot_moves"),
        f(&r, "sim.one_shot_move_pages"),
    );
    assert!(
        ops > 0.0 && moved > 1.5 * ops,
        "{moved} moves in {ops} programs"
    );
    assert_eq!(moved, f(&r, "gc.pages_moved"));
    // Multi-plane word lines: at most 3 pages × 2 planes per program.
    let (hp, hpages) = (
        f(&r, "sim.one_shot_programs"),
        f(&r, "sim.one_shot_program_pages"),
    );
    assert!(
        hpages <= 6.0 * hp && hpages > hp,
        "{hpages} pages in {hp} programs"
    );
    let a = run(cfg, &["sched.multi_plane=true"], reqs);
    let strip = crate::without_wall_clock;
    assert_eq!(strip(r), strip(a), "deterministic");
}

#[test]
fn one_shot_on_a_device_it_cannot_apply_to_is_a_one_line_error() {
    for (over, needle) in [
        (vec!["device.cell=\"slc\""], "SLC"),
        (
            vec!["device.cell=\"tlc\"", "device.page_order=\"staggered\""],
            "sequential",
        ),
    ] {
        let mut ov: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        ov.push("timing.one_shot_program=true".into());
        ov.push("device.pages_per_block=48".into());
        let e = check_config(PLAIN, None, &ov, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("timing.one_shot_program") && e.contains(needle),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    let ov = ["timing.one_shot_program=true".to_string()];
    let e = check_config(&preset("ida-tlc"), None, &ov, Some("ida"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("ida-tlc"), "{e}");
}

// ----- item 6: the default drive ------------------------------------------------------------

#[test]
fn the_default_drive_runs_a_one_request_trace_in_steady_state() {
    let cfg = preset("default");
    let r = run(&cfg, &[], vec![rq(0, Op::Write, 0, 4096)]);
    assert_eq!(f(&r, "host.writes"), 1.0);
    assert!(f(&r, "device.logical_bytes") >= (1u64 << 30) as f64);
    // Whole logical space filled, aged until GC ran and WA settled.
    assert_eq!(
        f(&r, "precondition.filled_pages"),
        f(&r, "device.logical_pages")
    );
    assert!(f(&r, "precondition.aging_last_round_wa") > 1.0);
    let method = r["precondition"]["method"].as_str().expect("method");
    assert!(method.contains("SNIA"), "{method}");
    // Every device feature is on and reported.
    for k in [
        "sim.dram_flushes",
        "sim.suspensions_program",
        "sim.multi_plane_programs",
        "sim.one_shot_programs",
        "sim.one_shot_moves",
        "sim.rmw_reads",
        "sim.trim_requests",
    ] {
        f(&r, k);
    }
    // The 4 KiB write is one 4 KiB mapping unit: no read-modify-write of its 16 KiB page.
    assert_eq!(f(&r, "device.mapping_unit_bytes"), 4096.0);
    assert_eq!(f(&r, "sim.rmw_reads"), 0.0);
    // A lone request waits for no one.
    assert_eq!(f(&r, "host.wait.all.mean_us"), 0.0);
    // A 2 KiB write into the filled drive does merge: its unit is read first, and the read
    // is service time (it was counted as queue wait, and the CLI then said the device could
    // not keep up with a one-request trace).
    let r = run(&cfg, &[], vec![rq(0, Op::Write, 0, 2048)]);
    assert_eq!(f(&r, "sim.rmw_reads"), 1.0);
    assert_eq!(f(&r, "host.wait.all.mean_us"), 0.0);
    // No percentile above the max (a histogram bucket's upper edge can be).
    let p50 = f(&r, "host.all.p50_us");
    assert!(p50 <= f(&r, "host.all.max_us"), "{p50}");
}

#[test]
fn every_paper_preset_keeps_the_device_features_off() {
    for p in ["xia-diffecc", "efm", "ida-tlc", "dpa", "flexlevel"] {
        let cfg = load(&preset(p), "<test>", &[]).unwrap();
        assert!(!cfg.sched.multi_plane && !cfg.sched.suspension, "{p}");
        assert!(!cfg.timing.one_shot_program, "{p}");
        assert!(!cfg.ftl.read_modify_write && !cfg.ftl.trim, "{p}");
        assert_eq!(cfg.dram.capacity_bytes, 0, "{p}");
    }
}

// ----- issue 29: super-page allocation ------------------------------------------------------

/// `LAT` as a 4-plane TLC die per channel with super-page allocation and one-shot programming:
/// a super-page is a word line (3 pages) on each of the die's 4 planes.
fn superpage(extra: &str) -> String {
    format!("{LAT}\n{extra}\n")
        .replace(
            "[device]\n",
            "[device]\ncell = \"tlc\"\nplanes_per_die = 4\npages_per_block = 96\n",
        )
        .replace("pages_per_block = 64\n", "")
        .replace("[timing]\n", "[timing]\none_shot_program = true\n")
        + "[ftl]\nallocation = \"superpage\"\n[sched]\nmulti_plane = true\n"
}

#[test]
fn a_full_super_page_is_one_program_of_twelve_pages_over_four_planes() {
    // 48 pages over 4 dies (LPN striping): 12 per die, one super-page each, queued together.
    let reqs = vec![rq(0, Op::Write, 0, 48 * PS)];
    let r = run(&superpage(""), &[], reqs);
    // Per die: 12 transfers back to back, then one program time.
    assert_eq!(
        f(&r, "host.write_mean_us") * 1000.0,
        (12 * XFER + 1_300_000) as f64
    );
    assert_eq!(f(&r, "sim.superpage_program_runs"), 4.0);
    assert_eq!(f(&r, "sim.superpage_program_pages"), 48.0);
    assert_eq!(f(&r, "sim.superpage_program_padded_pages"), 0.0);
    assert_eq!(f(&r, "sim.superpage_program_multi_plane_share"), 1.0);
    assert_eq!(f(&r, "flash.programs"), 48.0);
}

/// A 1 ms super-page hold (the default is 1 s).
const HOLD_1MS: &str = "ftl.superpage_wait_us=1000.0";

#[test]
fn a_partial_super_page_waits_then_is_padded() {
    // One page on die 0 (LPN 0): no partner comes; after the 1000 µs hold the die programs
    // it with 11 padded pages (12 transfers, one program). With no hold it goes at once.
    let reqs = vec![
        rq(0, Op::Write, 0, PS),
        rq(50_000_000, Op::Read, 4 * PS, PS),
    ];
    let r = run(&superpage(""), &[HOLD_1MS], reqs.clone());
    assert_eq!(
        f(&r, "host.write_mean_us") * 1000.0,
        (1_000_000 + 12 * XFER + 1_300_000) as f64
    );
    assert_eq!(f(&r, "sim.superpage_program_padded_pages"), 11.0);
    // The padding is programmed: 1 host page + 11 pads = 12 page programs.
    assert_eq!(f(&r, "write_amplification"), 12.0);
    assert_eq!(f(&r, "sim.superpage_holds"), 1.0);
    assert_eq!(f(&r, "sim.superpage_program_multi_plane_share"), 1.0);
    let now = run(&superpage(""), &["ftl.superpage_wait_us=0"], reqs.clone());
    assert_eq!(
        f(&now, "host.write_mean_us") * 1000.0,
        (12 * XFER + 1_300_000) as f64
    );
    // A second write to the same die within the hold joins the super-page: both wait for the
    // hold to end (room 12 > 2 queued), then one run of 2 pages + 10 pads.
    // (A read of die 1 later keeps the input open: at its end no die holds writes.)
    let two = vec![
        rq(0, Op::Write, 0, PS),
        rq(200_000, Op::Write, 4 * PS, PS),
        rq(50_000_000, Op::Read, PS, PS),
    ];
    let r2 = run(&superpage(""), &[HOLD_1MS], two);
    assert_eq!(f(&r2, "sim.superpage_program_runs"), 1.0);
    assert_eq!(f(&r2, "sim.superpage_program_padded_pages"), 10.0);
    assert_eq!(
        f(&r2, "host.write.max_us") * 1000.0,
        (1_000_000 + 12 * XFER + 1_300_000) as f64
    );
}

#[test]
fn gc_copies_whole_super_pages_and_erases_superblocks() {
    // A small drive filled, then overwritten at random: GC runs on superblocks.
    // 16 superblocks per die, 50 % over-provisioning: 10 logical superblocks of 4 planes ×
    // 96 pages on each of 4 dies = 15,360 logical pages.
    let toml = superpage("").replace(
        "logical_capacity_bytes = 268435456\n",
        "blocks_per_plane = 16\nop_percent_of_logical = 50.0\n",
    );
    let reqs = fill_then_overwrites(15_000, 4000, 7, 5_000_000_000);
    let r = run(&toml, &["ftl.superpage_wait_us=0"], reqs.clone());
    assert!(f(&r, "gc.pages_moved") > 0.0);
    // Every erase is a superblock: 4 blocks in one multi-plane erase.
    let erases = f(&r, "flash.erases");
    assert!(erases > 0.0 && erases % 4.0 == 0.0, "{erases}");
    assert_eq!(f(&r, "sim.multi_plane_erases") * 4.0, erases);
    // GC copies run over the die's planes (a victim's valid pages fill super-pages).
    assert!(f(&r, "sim.superpage_move_multi_plane_share") > 0.9);
    assert_eq!(f(&r, "sim.superpage_move_pages"), f(&r, "gc.pages_moved"));
    // Deterministic.
    let again = run(&toml, &["ftl.superpage_wait_us=0"], reqs);
    assert_eq!(r["host"], again["host"]);
    assert_eq!(r["gc"], again["gc"]);
}

#[test]
fn superpages_refuse_what_they_cannot_model() {
    for (ov, key) in [
        ("ftl.copyback=true", "ftl.copyback"),
        ("device.page_order=\"staggered\"", "device.page_order"),
        ("refresh.period_s=60.0", "refresh.period_s"),
        ("sched.multi_plane=false", "sched.multi_plane"),
    ] {
        let e = check_config(&superpage(""), None, &[ov.to_string()], None).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(key) && msg.contains("ftl.allocation = \"static\""),
            "{msg}"
        );
    }
}

// ----- issue 29: a mapping unit smaller than the page -----------------------------------------

/// `superpage("")` with 4 KiB mapping units: two per 8 KiB page.
const UNIT_4K: &str = "ftl.mapping_unit_bytes=4096";
/// One 4 KiB unit over the channel at 400 MT/s, ns.
const XFER_UNIT: u64 = XFER / 2;

#[test]
fn mapping_units_fill_a_super_page_and_the_report_keeps_the_flash_page() {
    // The first test's 48 pages as 96 units: page-sized groups of 2 LPNs striped over the 4
    // dies, 24 units per die = one super-page each (4 planes × 3 pages × 2 units), the same
    // bytes over the channel and one program time.
    let reqs = vec![rq(0, Op::Write, 0, 48 * PS)];
    let r = run(&superpage(""), &[UNIT_4K], reqs);
    assert_eq!(
        f(&r, "host.write_mean_us") * 1000.0,
        (24 * XFER_UNIT + 1_300_000) as f64
    );
    assert_eq!(f(&r, "sim.superpage_program_runs"), 4.0);
    assert_eq!(f(&r, "sim.superpage_program_pages"), 96.0);
    assert_eq!(f(&r, "sim.superpage_program_padded_pages"), 0.0);
    assert_eq!(f(&r, "flash.programs"), 96.0);
    assert_eq!(f(&r, "device.mapping_unit_bytes"), 4096.0);
    assert_eq!(f(&r, "device.page_size_bytes"), 8192.0);
    assert_eq!(f(&r, "device.pages_per_block"), 96.0);
    assert_eq!(f(&r, "device.transfer_us") * 1000.0, XFER_UNIT as f64);
    // Without the key the report has no mapping unit (paper presets unchanged); the same
    // capacity (256 MiB rounded up to a block stripe) in twice as many FTL pages.
    let page = run(&superpage(""), &[], vec![rq(0, Op::Write, 0, 48 * PS)]);
    assert!(page["device"].get("mapping_unit_bytes").is_none());
    assert_eq!(
        f(&r, "device.logical_bytes"),
        f(&page, "device.logical_bytes")
    );
    assert_eq!(
        f(&r, "device.logical_pages"),
        2.0 * f(&page, "device.logical_pages")
    );
    assert_eq!(
        f(&r, "device.physical_bytes"),
        f(&page, "device.physical_bytes")
    );
}

#[test]
fn a_4k_write_into_a_mapped_page_is_one_unit_without_read_modify_write() {
    // An 8 KiB page written, then its first 4 KiB rewritten: with page mapping the rewrite
    // reads the page first (read-modify-write); with 4 KiB units it is a unit of its own.
    let reqs = vec![
        rq(0, Op::Write, 0, PS),
        rq(10_000_000, Op::Write, 0, 4096),
        rq(50_000_000, Op::Read, 4 * PS, PS),
    ];
    let on = ["ftl.read_modify_write=true", "ftl.superpage_wait_us=0"];
    let page = run(&superpage(""), &on, reqs.clone());
    assert_eq!(f(&page, "sim.rmw_reads"), 1.0);
    let unit = run(&superpage(""), &[on[0], on[1], UNIT_4K], reqs);
    assert_eq!(f(&unit, "sim.rmw_reads"), 0.0);
    // Each write programs a padded super-page: 2 + 1 data units, the rest padding (24 each).
    assert_eq!(f(&unit, "sim.superpage_program_pages"), 3.0);
    assert_eq!(f(&unit, "sim.superpage_program_padded_pages"), 45.0);
    assert_eq!(
        f(&unit, "host.write.max_us") * 1000.0,
        (24 * XFER_UNIT + 1_300_000) as f64
    );
}

#[test]
fn the_units_of_one_page_are_read_with_one_sense() {
    // 8 KiB written (units 0 and 1: plane 0, page 0 of die 0), then read: one sense, both
    // units over the channel, one decode at the end; one unit alone moves half as much.
    let reqs = vec![
        rq(0, Op::Write, 0, PS),
        rq(10_000_000, Op::Read, 0, PS),
        rq(20_000_000, Op::Read, 4096, 4096),
    ];
    let r = run(&superpage(""), &["ftl.superpage_wait_us=0", UNIT_4K], reqs);
    let two = (45_000 + 2 * XFER_UNIT + 12_500) as f64;
    let one = (45_000 + XFER_UNIT + 12_500) as f64;
    assert_eq!(f(&r, "host.read.max_us") * 1000.0, two);
    assert_eq!(f(&r, "host.read_mean_us") * 1000.0, (one + two) / 2.0);
    // Two units of one plane's page: one sense, not a multi-plane read.
    assert_eq!(f(&r, "sim.multi_plane_reads"), 0.0);
    assert_eq!(f(&r, "flash.reads"), 3.0);
}

#[test]
fn gc_moves_units_deterministically_and_reads_each_source_page_once() {
    let toml = superpage("").replace(
        "logical_capacity_bytes = 268435456\n",
        "blocks_per_plane = 16\nop_percent_of_logical = 50.0\n",
    );
    let ov = [
        "ftl.superpage_wait_us=0",
        "ftl.read_modify_write=true",
        UNIT_4K,
    ];
    // 4 KiB overwrites at random over a filled drive, either unit of a page.
    let mut reqs = fill_then_overwrites(15_000, 16_000, 7, 5_000_000_000);
    for (i, r) in reqs.iter_mut().enumerate().skip(1) {
        r.len_bytes = 4096;
        r.offset_bytes += 4096 * (i as u64 % 2);
    }
    let r = run(&toml, &ov, reqs.clone());
    let moved = f(&r, "gc.pages_moved");
    assert!(moved > 0.0);
    assert_eq!(f(&r, "sim.superpage_move_pages"), moved);
    assert_eq!(f(&r, "sim.rmw_reads"), 0.0);
    assert!(f(&r, "sim.superpage_move_multi_plane_share") > 0.9);
    let again = run(&toml, &ov, reqs);
    assert_eq!(r["host"], again["host"]);
    assert_eq!(r["gc"], again["gc"]);
    assert_eq!(r["flash"], again["flash"]);
}

#[test]
fn a_mapping_unit_that_cannot_apply_is_a_one_line_error() {
    for (toml, ov, want) in [
        (LAT.to_string(), UNIT_4K, "ftl.allocation = \"superpage\""),
        (
            superpage(""),
            "ftl.mapping_unit_bytes=3000",
            "divides device.page_size_bytes",
        ),
        (
            superpage(""),
            "ftl.mapping_unit_bytes=16384",
            "divides device.page_size_bytes",
        ),
    ] {
        let e = check_config(&toml, None, &[ov.to_string()], None).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("ftl.mapping_unit_bytes") && msg.contains(want) && !msg.contains('\n'),
            "{msg}"
        );
    }
}

#[test]
fn independent_plane_reads_overlap_reads_of_any_offsets() {
    // Two pages on planes 0 and 1 of die 0 at different offsets: written apart (static
    // allocation), then read together.
    let toml = format!("{TWO_PLANES}\n");
    let reqs = vec![
        rq(0, Op::Write, 0, PS),           // plane 0, offset 0
        rq(10_000_000, Op::Write, 0, PS),  // plane 0, offset 1 (rewrite)
        rq(20_000_000, Op::Write, PS, PS), // plane 1, offset 0
        rq(100_000_000, Op::Read, 0, 2 * PS),
    ];
    let same = run(&toml, &["sched.multi_plane=true"], reqs.clone());
    assert_eq!(f(&same, "sim.multi_plane_reads"), 0.0);
    let ind = run(
        &toml,
        &[
            "sched.multi_plane=true",
            "sched.independent_plane_reads=true",
        ],
        reqs,
    );
    assert_eq!(f(&ind, "sim.multi_plane_reads"), 1.0);
    assert_eq!(
        f(&ind, "host.read_mean_us") * 1000.0,
        (45_000 + 2 * XFER + 12_500) as f64
    );
}
