//! The cached mapping table (`ftl.mapping = "cached"`, issue 35; `src/ftl/cmt.rs`,
//! `src/engine/mapping.rs`): a test per rule. Latency tests run at low load (one request at a
//! time), where a response is exactly its flash operations' service times.

use nandlab_core::trace::{HostRequest, Op};
use serde_json::Value;

// The small device (4 KiB pages: 1,024 mapping entries per translation page, 64 MiB
// logical), run without preconditioning.
use crate::common::{run_small as run, SMALL_DEV as DEV};

/// `n` one-page writes of LPNs `0..n`, then reads of the same pages, 5 ms apart: an idle
/// device (a program takes 1.31 ms, a write-back adds a read and a program).
fn write_then_read(n: u64) -> Vec<HostRequest> {
    let mut v = Vec::new();
    for (k, op) in [(0, Op::Write), (1, Op::Read)] {
        for i in 0..n {
            v.push(HostRequest {
                arrival_ns: (k * n + i) * 5_000_000,
                op,
                offset_bytes: i * 4096,
                len_bytes: 4096,
            });
        }
    }
    v
}

fn f(r: &Value, path: &[&str]) -> f64 {
    let mut v = r;
    for k in path {
        v = &v[*k];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("{path:?} missing in {}", r["mapping"]))
}

const CACHED: &str = "ftl.mapping=\"cached\"";

#[test]
fn a_cmt_holding_every_entry_costs_no_flash_operation() {
    let reqs = write_then_read(64);
    let dram = run(&[], reqs.clone());
    let cached = run(&[CACHED, "ftl.cmt_bytes=1024"], reqs);
    assert!(dram.get("mapping").is_none(), "no mapping block without it");
    // Writes miss (cold cache) on never-written translation pages: nothing to read; the
    // reads hit the entries the writes put in the cache.
    assert_eq!(f(&cached, &["mapping", "hits"]), 64.0);
    assert_eq!(f(&cached, &["mapping", "misses"]), 64.0);
    assert_eq!(f(&cached, &["mapping", "translation_reads"]), 0.0);
    assert_eq!(f(&cached, &["mapping", "translation_programs"]), 0.0);
    for k in ["read", "write"] {
        assert_eq!(
            f(&cached, &["host", k, "mean_us"]),
            f(&dram, &["host", k, "mean_us"]),
            "{k}"
        );
    }
}

#[test]
fn each_read_miss_waits_for_one_translation_page_read() {
    let reqs = write_then_read(64);
    let dram = run(&[], reqs.clone());
    // One entry: every lookup misses, every write evicts the previous (dirty) entry.
    let one = run(&[CACHED, "ftl.cmt_bytes=8"], reqs);
    assert_eq!(f(&one, &["mapping", "cmt_entries"]), 1.0);
    assert_eq!(f(&one, &["mapping", "hits"]), 0.0);
    // Each read reads the translation page, then the data page: twice the read's service, all
    // of it service. (The first read also evicts the last write's dirty entry, and its
    // translation read may queue behind that write-back's read: within 1 % over 64 reads.)
    let rd = f(&dram, &["host", "read", "mean_us"]);
    let m = f(&one, &["host", "read", "mean_us"]);
    assert!(m >= 2.0 * rd && m <= 1.01 * 2.0 * rd, "{m} vs 2 × {rd}");
    assert!(f(&one, &["host", "wait", "read", "mean_us"]) <= 0.01 * m);
    assert_eq!(
        f(&one, &["mapping", "requests_waited"]),
        f(&one, &["mapping", "translation_reads"])
    );
    assert!(f(&one, &["mapping", "translation_reads"]) >= 64.0);
}

#[test]
fn dirty_evictions_write_translation_pages_back_and_count_in_write_amplification() {
    let reqs = write_then_read(64);
    let one = run(&[CACHED, "ftl.cmt_bytes=8"], reqs);
    let host = f(&one, &["flash", "programs_by_source", "host"]);
    let tp = f(&one, &["mapping", "translation_programs"]);
    assert_eq!(host, 64.0);
    // Writes 2–64 each evict the previous write's dirty entry, and the first read the last
    // one's; the first write-back has no old copy to read, every later one reads it first.
    assert_eq!(f(&one, &["mapping", "dirty_evictions"]), 64.0);
    assert_eq!(tp, 64.0);
    assert_eq!(f(&one, &["mapping", "writeback_reads"]), 63.0);
    assert_eq!(f(&one, &["flash", "programs_by_source", "mapping"]), tp);
    assert_eq!(f(&one, &["write_amplification"]), (host + tp) / host);
}

/// Random one-page overwrites of a small logical space on a small device: GC runs.
fn gc_workload() -> Vec<HostRequest> {
    let mut x: u64 = 42;
    (0..30_000u64)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            HostRequest {
                arrival_ns: i * 200_000,
                op: if i % 4 == 0 { Op::Read } else { Op::Write },
                offset_bytes: ((x >> 33) % 6_000) * 4096,
                len_bytes: 4096,
            }
        })
        .collect()
}

#[test]
fn gc_moves_of_uncached_entries_update_their_translation_pages_after_the_erase() {
    let o = [
        CACHED,
        "ftl.cmt_bytes=4096",
        "device.logical_capacity_bytes=0",
        "device.blocks_per_plane=64",
        "precondition.fill=\"fraction\"",
        "precondition.fill_fraction=1.0",
    ];
    let r = run(&o, gc_workload());
    assert!(f(&r, &["gc", "pages_moved"]) > 0.0, "GC ran");
    assert!(f(&r, &["mapping", "uncached_moves"]) > 0.0);
    assert!(f(&r, &["mapping", "stale_page_updates"]) > 0.0);
    // Preconditioning wrote the table of the filled space: a page per 1,024 LPNs.
    let logical = f(&r, &["device", "logical_pages"]);
    assert_eq!(
        f(&r, &["mapping", "translation_pages_preconditioned"]),
        (logical / 1024.0).ceil()
    );
    // Every host request completed.
    assert_eq!(f(&r, &["host", "requests"]), 30_000.0);
    // Same seed, same inputs: the same report.
    let again = run(&o, gc_workload());
    assert_eq!(r["mapping"], again["mapping"]);
    assert_eq!(r["host"], again["host"]);
}

#[test]
fn a_larger_cmt_hits_more_and_writes_fewer_translation_pages() {
    let base = [
        CACHED,
        "device.logical_capacity_bytes=0",
        "device.blocks_per_plane=64",
        "precondition.fill=\"fraction\"",
        "precondition.fill_fraction=1.0",
    ];
    let at = |bytes: &str| {
        let mut o = base.to_vec();
        o.push(bytes);
        run(&o, gc_workload())
    };
    let (small, large) = (at("ftl.cmt_bytes=8192"), at("ftl.cmt_bytes=65536"));
    let h = |r: &Value| f(r, &["mapping", "hit_rate"]);
    assert!(h(&large) > h(&small), "{} vs {}", h(&large), h(&small));
    assert!(
        f(&large, &["mapping", "translation_programs"])
            < f(&small, &["mapping", "translation_programs"])
    );
    assert!(f(&large, &["host", "read", "mean_us"]) < f(&small, &["host", "read", "mean_us"]));
}

#[test]
fn mapping_settings_that_cannot_apply_are_one_line_errors_naming_the_way_out() {
    for (o, key, hint) in [
        (
            vec!["ftl.cmt_bytes=1024"],
            "ftl.cmt_bytes",
            "ftl.mapping = \"cached\"",
        ),
        (vec![CACHED], "ftl.cmt_bytes", "1048576"),
        (vec![CACHED, "ftl.cmt_bytes=4"], "ftl.cmt_bytes", "8 B"),
        (
            vec![CACHED, "ftl.cmt_bytes=1024", "dram.capacity_bytes=65536"],
            "dram.capacity_bytes",
            "ftl.mapping = \"dram\"",
        ),
    ] {
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        let err = nandlab_core::config::load(DEV, "<test>", &o)
            .err()
            .unwrap_or_else(|| panic!("{o:?} accepted"))
            .to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains(key) && err.contains(hint), "{o:?}: {err}");
    }
}
