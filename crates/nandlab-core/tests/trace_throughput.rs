//! Parse throughput probe (not a pass/fail test). Run in release:
//! `cargo test --release -p nandlab-core --test trace_throughput -- --ignored --nocapture`

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use nandlab_core::trace::{TraceOptions, TraceReader};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
}

/// Read the whole file; print lines/s and MB/s of decompressed text.
fn measure(label: &str, p: &Path, text_bytes: u64) {
    let t0 = Instant::now();
    let mut rd = TraceReader::open(p, &TraceOptions::default()).unwrap();
    let mut n = 0u64;
    let mut chk = 0u64;
    while let Some(r) = rd.next_request().unwrap() {
        n += 1;
        chk = chk.wrapping_add(r.offset_bytes ^ r.arrival_ns);
    }
    let s = t0.elapsed().as_secs_f64();
    let lines = rd.counters().lines_read;
    println!(
        "{label}: {n} requests, {lines} lines, {:.0} MB text in {s:.3} s: {:.2} M lines/s, {:.0} MB/s (chk {chk:x})",
        text_bytes as f64 / 1e6,
        lines as f64 / s / 1e6,
        text_bytes as f64 / s / 1e6
    );
}

fn text_size(p: &Path) -> u64 {
    let mut f = std::fs::File::open(p).unwrap();
    let mut magic = [0u8; 2];
    f.read_exact(&mut magic).unwrap();
    if magic == [0x1f, 0x8b] {
        let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(p).unwrap());
        std::io::copy(&mut d, &mut std::io::sink()).unwrap()
    } else {
        std::fs::metadata(p).unwrap().len()
    }
}

#[test]
#[ignore]
fn throughput() {
    let rw = shared().join("captured/pgbench_rw.csv.gz");
    if rw.exists() {
        // Uncompressed MSR CSV: the hot path without gzip.
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("pgbench_rw.csv");
        let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(&rw).unwrap());
        let mut out = std::io::BufWriter::new(std::fs::File::create(&plain).unwrap());
        let bytes = std::io::copy(&mut d, &mut out).unwrap();
        out.flush().unwrap();
        drop(out);
        // Warm the page cache, then measure twice.
        measure("pgbench_rw.csv (plain, warm-up)", &plain, bytes);
        measure("pgbench_rw.csv (plain)", &plain, bytes);
        measure("pgbench_rw.csv (plain)", &plain, bytes);
    }
    for rel in [
        "captured/pgbench_rw.csv.gz",
        "captured/pgbench_wh.csv.gz",
        "captured/devtree.csv.gz",
        "captured/pgbench_ro.part1.csv.gz",
        "msr/msr_hm_0_sample1000.csv",
        "umass/Financial1_first10000.ssdsim.ascii",
        "other/tencent_cbs_sample50000.csv.gz",
        "other/cloudphysics_vscsi_sample113872.csv.gz",
    ] {
        let p = shared().join(rel);
        if p.exists() {
            let b = text_size(&p);
            measure(rel, &p, b);
        }
    }
}
