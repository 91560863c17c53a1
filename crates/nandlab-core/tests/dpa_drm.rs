//! DPA-DRM in the simulator (issue 16 part 4; Guo §2.5, §2.6.2; spec `dpa-flexlevel.md` §1.4):
//! the write-overhead floor of redundant and parity pages, 4 B ≥ 8 B in writes and erases,
//! redundant reads the host waits for on a cache miss and not on a hit, delayed writes at idle
//! time (forced when the buffer is full), the configurations the scheme refuses, determinism.

use nandlab_core::config::{load, Config};
use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

const DPA: &str = include_str!("../../../python/nandlab/configs/dpa.toml");
const PS: u64 = 4096;

/// The Table 3 preset on a small device: 2 dies (one chip each) on `channels` channel(s),
/// 1 plane each, 128 blocks of 32 pages.
fn cfg(channels: u32, extra: &[&str]) -> Result<Config, String> {
    let mut ov: Vec<String> = vec![
        format!("device.channels={channels}"),
        format!("device.chips_per_channel={}", 2 / channels),
        "device.dies_per_chip=1".into(),
        "device.planes_per_die=1".into(),
        "device.blocks_per_plane=128".into(),
        "device.pages_per_block=32".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    load(DPA, "dpa.toml", &ov).map_err(|e| e.to_string())
}

fn run(c: Config, reqs: &[HostRequest]) -> Result<Value, String> {
    simulate(c, reqs).map_err(|e| e.to_string())
}

fn run_ok(channels: u32, extra: &[&str], reqs: &[HostRequest]) -> Value {
    run(cfg(channels, extra).expect("config"), reqs).expect("run")
}

/// A request of the one page `lpn`.
fn req(t_ns: u64, op: Op, lpn: u64) -> HostRequest {
    rq(t_ns, op, lpn * PS, PS)
}

/// xorshift64* (test data only).
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// `n` single-page writes `gap_ns` apart: LPN i (sequential, each once) or random in
/// `0..span`.
fn writes(n: u64, gap_ns: u64, random_span: Option<u64>) -> Vec<HostRequest> {
    let mut s = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|i| {
            let lpn = match random_span {
                Some(span) => rng(&mut s) % span,
                None => i,
            };
            req(i * gap_ns, Op::Write, lpn)
        })
        .collect()
}

#[test]
fn write_overhead_floor_is_overflow_per_page_times_stripe() {
    // Each LPN written once, 5 ms apart (idle time after every write): no GC, no compaction;
    // every full redundant page is written at idle. Floor (spec §1.4, reading R2):
    // (1 / ⌊4096 / overflow⌋) × (1 + 1/4).
    let n = 3000;
    let reqs = writes(n, 5_000_000, None);
    let base = run_ok(2, &["precondition.fill=\"none\""], &reqs);
    for (chunk, overflow, k) in [(8, 272.0, 15.0), (4, 656.0, 6.0)] {
        let v = run_ok(
            2,
            &[
                "precondition.fill=\"none\"",
                "scheme.name=\"dpa\"",
                &format!("scheme.params.chunk_bytes={chunk}"),
            ],
            &reqs,
        );
        let s = &v["scheme_stats"];
        assert_eq!(f(s, "overflow_bytes_per_page"), overflow);
        assert_eq!(f(s, "tags_per_redundant_page"), k);
        let red = f(s, "redundant_page_writes");
        let par = f(s, "parity_page_writes");
        let extra = f(&v, "flash.programs") - f(&base, "flash.programs");
        assert_eq!(
            extra,
            red + par,
            "chunk {chunk}: every extra program is DRM's"
        );
        let floor = (1.0 / k) * 1.25;
        let got = extra / n as f64;
        assert!(
            (got - floor).abs() <= 0.03 * floor + 2.0 / n as f64,
            "chunk {chunk}: write overhead {got:.4} vs floor {floor:.4}"
        );
        // Against the spec's unpacked floor overflow/page × 1.25 (R2: at most 1 page in k).
        assert!(
            got >= overflow / 4096.0 * 1.25 * 0.97,
            "chunk {chunk}: {got}"
        );
        assert_eq!(f(s, "flushes_forced"), 0.0);
        assert!(f(s, "flushes_idle") > 0.0);
        assert_eq!(f(s, "slots_exhausted"), 0.0);
    }
}

#[test]
fn four_byte_chunks_cost_at_least_eight_byte_in_writes_and_erases() {
    // Random overwrites of 60 % of the logical space: GC and compaction run. (At 90 % the
    // 4 B run's redundant pages, ~20 % of the data plus invalid tags, do not fit the 15 %
    // over-provisioning: the run stalls with no free block, as a drive would fill up.)
    let c = cfg(2, &[]).unwrap();
    let logical = {
        let (_, l) = c.size_device(0).unwrap();
        l
    };
    let reqs = writes(40_000, 1_000_000, Some(logical * 6 / 10));
    let base = run_ok(2, &[], &reqs);
    let d8 = run_ok(2, &["scheme.name=\"dpa\""], &reqs);
    let d4 = run_ok(
        2,
        &["scheme.name=\"dpa\"", "scheme.params.chunk_bytes=4"],
        &reqs,
    );
    for key in ["flash.programs", "flash.erases"] {
        let (b, e8, e4) = (f(&base, key), f(&d8, key), f(&d4, key));
        assert!(b > 0.0, "{key}: baseline {b}");
        assert!(
            e8 >= b && e4 >= e8,
            "{key}: baseline {b}, 8 B {e8}, 4 B {e4}"
        );
    }
    assert!(f(&d4, "flash.programs") > f(&d8, "flash.programs"));
    for v in [&d8, &d4] {
        let s = &v["scheme_stats"];
        assert!(
            f(s, "compactions") + f(s, "redundant_pages_dropped") > 0.0,
            "{s}"
        );
        assert_eq!(f(s, "slots_exhausted"), 0.0);
        assert_eq!(f(s, "same_die_reads"), 0.0);
    }
}

/// Reads of preconditioned pages 0..n, one per `gap_ns`, LPN order given.
fn reads(lpns: &[u64], gap_ns: u64) -> Vec<HostRequest> {
    lpns.iter()
        .enumerate()
        .map(|(i, &l)| req(i as u64 * gap_ns, Op::Read, l))
        .collect()
}

#[test]
fn a_read_waits_for_its_redundant_page_on_a_miss_and_not_on_a_hit() {
    // One channel shared by both dies: the redundant page's transfer follows the data page's,
    // so a miss costs exactly one transfer more; a hit costs nothing. The touched fill writes
    // LPNs 0..64 in order with their redundant pages (untimed): on die 0 (even LPNs) the tags
    // of 0, 2, …, 28 and of 30, …, 58 fill two redundant pages on die 1 (and the odd LPNs' on
    // die 0); 60, 62 (61, 63) stay in the open page in DRAM.
    let lpns: Vec<u64> = (0..64).collect();
    let mut t = reads(&lpns, 10_000_000);
    let base = run_ok(1, &[], &t[..1]);
    let one = f(&base, "host.read.mean_us");
    let xfer = f(&base, "device.transfer_us");
    // Then LPN 0, LPN 2 (same redundant page) and LPN 0 again.
    for (i, l) in [0u64, 2, 0].iter().enumerate() {
        t.push(req((64 + i as u64) * 10_000_000, Op::Read, *l));
    }
    let with_cache = run_ok(1, &["scheme.name=\"dpa\""], &t);
    let no_cache = run_ok(
        1,
        &["scheme.name=\"dpa\"", "scheme.params.cache_pages=0"],
        &t,
    );
    let sc = &with_cache["scheme_stats"];
    let sn = &no_cache["scheme_stats"];
    // 4 redundant pages on flash: 4 misses with the cache, the other 56 + 3 reads hit.
    assert_eq!(f(sc, "redundant_reads"), 4.0, "{sc}");
    assert_eq!(f(sc, "cache_hits"), 59.0, "{sc}");
    assert_eq!(f(sc, "buffer_hits"), 4.0, "{sc}");
    assert_eq!(f(sc, "same_die_reads"), 0.0);
    assert_eq!(f(sn, "cache_hits"), 0.0);
    assert_eq!(f(sn, "redundant_reads"), 63.0, "{sn}");
    // Every read of a flushed redundant page: hit → baseline time; miss → one transfer more.
    let reads_n = t.len() as f64;
    let misses_c = f(sc, "redundant_reads");
    let misses_n = f(sn, "redundant_reads");
    assert!(
        misses_n >= misses_c + 3.0,
        "cache {misses_c}, none {misses_n}"
    );
    let expect = |m: f64| one + xfer * m / reads_n;
    let got_c = f(&with_cache, "host.read.mean_us");
    let got_n = f(&no_cache, "host.read.mean_us");
    assert!(
        (got_c - expect(misses_c)).abs() < 0.01,
        "cache: {got_c} vs {}",
        expect(misses_c)
    );
    assert!(
        (got_n - expect(misses_n)).abs() < 0.01,
        "no cache: {got_n} vs {}",
        expect(misses_n)
    );
    // Host flash reads: one per page plus one per miss.
    assert_eq!(
        f(&no_cache, "flash.reads_by_source.host"),
        reads_n + misses_n
    );
}

#[test]
fn delayed_writes_go_at_idle_and_a_full_buffer_costs_the_host() {
    let spaced = writes(600, 5_000_000, None);
    let v = run_ok(
        2,
        &["precondition.fill=\"none\"", "scheme.name=\"dpa\""],
        &spaced,
    );
    let s = &v["scheme_stats"];
    assert!(f(s, "flushes_idle") >= 30.0, "{s}");
    assert_eq!(f(s, "flushes_forced"), 0.0);
    let base = run_ok(2, &["precondition.fill=\"none\""], &spaced);
    // Idle-time writes never delay a host write that arrives after the gap.
    assert!(
        (f(&v, "host.write.mean_us") - f(&base, "host.write.mean_us")).abs() < 1e-9,
        "{} vs {}",
        f(&v, "host.write.mean_us"),
        f(&base, "host.write.mean_us")
    );
    // Back to back (no idle gap above one program) with no buffer: every full page is forced.
    let burst = writes(600, 1_000, None);
    let forced = run_ok(
        2,
        &[
            "precondition.fill=\"none\"",
            "scheme.name=\"dpa\"",
            "scheme.params.buffer_pages=0",
        ],
        &burst,
    );
    let sf = &forced["scheme_stats"];
    assert_eq!(f(sf, "flushes_idle"), 0.0, "{sf}");
    assert!(f(sf, "flushes_forced") >= 30.0, "{sf}");
    let base_b = run_ok(2, &["precondition.fill=\"none\""], &burst);
    assert!(f(&forced, "host.write.mean_us") > f(&base_b, "host.write.mean_us"));
}

#[test]
fn configurations_dpa_cannot_run_on_are_errors_naming_what_to_use() {
    let w = writes(10, 1_000_000, None);
    let cases: [(&[&str], &str); 6] = [
        (&["ftl.trim=true"], "ftl.trim = false"),
        (&["host.mode=\"closed\""], "delayed_write = false"),
        (
            &["ftl.allocation=\"dynamic\""],
            "ftl.allocation = \"static\"",
        ),
        (&["dram.capacity_bytes=1048576"], "dram.capacity_bytes = 0"),
        (&["ftl.streams=2"], "ftl.streams ≥ 3"),
        (&["scheme.params.chunk_bytes=16"], "4 or 8"),
    ];
    for (extra, want) in cases {
        let mut ov = vec!["scheme.name=\"dpa\""];
        ov.extend_from_slice(extra);
        let err = cfg(2, &ov)
            .and_then(|c| run(c, &w))
            .expect_err("must be refused");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    // One die: no other die for the parallel read.
    let one_die = load(
        DPA,
        "dpa.toml",
        &[
            "device.channels=1".into(),
            "device.chips_per_channel=1".into(),
            "device.blocks_per_plane=128".into(),
            "scheme.name=\"dpa\"".into(),
        ],
    )
    .unwrap();
    let err = run(one_die, &w).expect_err("one die");
    assert!(err.contains("another die"), "{err}");
    // Closed loop without delayed writes runs.
    run_ok(
        2,
        &[
            "scheme.name=\"dpa\"",
            "host.mode=\"closed\"",
            "scheme.params.delayed_write=false",
        ],
        &w,
    );
}

use crate::common::{f, rq, simulate};
use crate::without_wall_clock as strip;

#[test]
fn same_seed_same_report() {
    let mut reqs = writes(3000, 300_000, Some(4000));
    reqs.extend((0..2000u64).map(|i| req(900_000_000 + i * 200_000, Op::Read, (i * 7919) % 4000)));
    let a = run_ok(
        2,
        &["scheme.name=\"dpa\"", "scheme.params.path_a_share=0.3"],
        &reqs,
    );
    let b = run_ok(
        2,
        &["scheme.name=\"dpa\"", "scheme.params.path_a_share=0.3"],
        &reqs,
    );
    assert_eq!(strip(a.clone()), strip(b));
    let s = &a["scheme_stats"];
    let tagged = f(s, "tagged_page_writes");
    let path_a = f(s, "path_a_page_writes");
    assert!(((path_a / (tagged + path_a)) - 0.3).abs() < 0.001, "{s}");
}
