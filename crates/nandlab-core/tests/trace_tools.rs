//! scan, stats, convert (round trip) and generate.

use std::path::{Path, PathBuf};

use nandlab_core::trace::{
    convert, generate, scan, stats, write_canonical, GenParams, HostRequest, Op, TraceFormat,
    TraceOptions, TraceReader,
};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trace")
        .join(name)
}

fn read_all(p: &Path, opts: &TraceOptions) -> Vec<HostRequest> {
    TraceReader::open(p, opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn scan_canonical_fixture() {
    let s = scan(&fixture("canonical_small.csv"), &TraceOptions::default()).unwrap();
    assert_eq!(s.format, TraceFormat::Canonical);
    assert_eq!((s.requests, s.reads, s.writes), (3, 1, 2));
    assert_eq!((s.bytes_read, s.bytes_written), (4096, 8192 + 512));
    assert_eq!((s.min_offset_bytes, s.max_end_bytes), (0, 16384));
    assert_eq!((s.first_arrival_ns, s.last_arrival_ns), (0, 2500));
    assert_eq!(s.counters.requests_emitted, 3);
}

#[test]
fn stats_page_classes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("pages.csv");
    // 8 KiB pages: page 0 read-only; page 1 read then written (overlapped);
    // pages 2-3 write-only (one 16 KiB write at 16 KiB); page 10 read-only.
    std::fs::write(
        &p,
        "0,R,0,8192\n1000,R,8192,4096\n2000,W,12288,4096\n3000,W,16384,16384\n\
         1000000000,R,81920,512\n",
    )
    .unwrap();
    let s = stats(&p, &TraceOptions::default(), 8192).unwrap();
    assert_eq!(s.requests, 5);
    assert!((s.read_ratio - 0.6).abs() < 1e-12);
    assert_eq!(s.pages_touched, 5);
    assert_eq!(
        (s.read_only_pages, s.write_only_pages, s.overlapped_pages),
        (2, 2, 1)
    );
    assert!((s.overlapped_frac - 0.2).abs() < 1e-12);
    // Page accesses: R p0, R p1, W p1, W p2, W p3, R p10 = 6.
    assert_eq!(s.page_accesses, 6);
    assert!((s.overlapped_access_frac - 2.0 / 6.0).abs() < 1e-12);
    assert!((s.duration_s - 1.0).abs() < 1e-12);
    let expect_kib = (8192.0 + 4096.0 + 4096.0 + 16384.0 + 512.0) / 5.0 / 1024.0;
    assert!((s.mean_size_kib - expect_kib).abs() < 1e-12);
    assert!((s.address_space_gib - 82432.0 / (1u64 << 30) as f64).abs() < 1e-15);
    assert!(s.dense_page_map);
    // Zero page size is an error naming the option.
    let e = stats(&p, &TraceOptions::default(), 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("page_size_bytes") && e.contains("pages.csv"),
        "{e}"
    );
    // JSON-serialisable.
    let j = serde_json::to_string(&s).unwrap();
    assert!(j.contains("\"overlapped_pages\":1"));
}

#[test]
fn stats_sparse_fallback_matches() {
    // Two far-apart regions: address space above the dense limit -> hash map.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("far.csv");
    let far = 1u64 << 42;
    std::fs::write(
        &p,
        format!(
            "0,R,0,8192\n1,W,0,4096\n2,W,{far},8192\n3,R,{},8192\n",
            far + 8192
        ),
    )
    .unwrap();
    let s = stats(&p, &TraceOptions::default(), 8192).unwrap();
    assert!(!s.dense_page_map);
    assert_eq!(
        (s.read_only_pages, s.write_only_pages, s.overlapped_pages),
        (1, 1, 1)
    );
}

#[test]
fn stats_on_msr_sample() {
    let p = shared().join("msr/msr_hm_0_sample1000.csv");
    if !p.exists() {
        return;
    }
    let s = stats(&p, &TraceOptions::default(), 8192).unwrap();
    assert_eq!(s.requests, 1000);
    assert!((s.read_ratio - 0.508).abs() < 1e-9);
    assert_eq!(
        s.read_only_pages + s.write_only_pages + s.overlapped_pages,
        s.pages_touched
    );
    assert!(s.pages_touched > 0);
}

/// Convert `src` to canonical (plain and .gz); reading back gives the same requests.
fn round_trip(src: &Path, dir: &tempfile::TempDir, exts: &[&str]) {
    let opts = TraceOptions::default();
    let orig = read_all(src, &opts);
    for ext in exts {
        let name = src.file_name().unwrap().to_string_lossy();
        let out = dir.path().join(format!("{name}.{ext}"));
        let n = convert(src, &opts, &out).unwrap();
        assert_eq!(n as usize, orig.len());
        let back_opts = TraceOptions {
            format: None,
            reorder_window: 0, // canonical output is sorted
            ..TraceOptions::default()
        };
        let back = TraceReader::open(&out, &back_opts).unwrap();
        assert_eq!(back.format(), TraceFormat::Canonical, "{}", out.display());
        let back: Vec<_> = back.map(Result::unwrap).collect();
        assert!(back == orig, "{} differs after round trip", src.display());
    }
}

#[test]
fn convert_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "spc_financial1_head.spc",
        "blkparse_sample.txt",
        "canonical_small.csv",
        "mqsim_multi.trace",
    ] {
        round_trip(&fixture(f), &dir, &["csv", "csv.gz"]);
    }
    for rel in [
        "msr/msr_hm_0_sample1000.csv",
        "umass/Financial1_first10000.ssdsim.ascii",
        "umass/WebSearch1_first24783.mqsim.trace",
        "other/tpcc-small.mqsim.trace",
        "other/systor17-traces-sample1000.csv.gz",
        "other/systor17-additional-sample1000.csv.gz",
        "other/tencent_cbs_sample50000.csv.gz",
        "other/disksim_ssd-postmark-aligned2.trace.gz",
    ] {
        let p = shared().join(rel);
        if p.exists() {
            // gzip output is slow in debug builds: plain only for the bigger samples.
            let exts: &[&str] = if rel.starts_with("msr/") {
                &["csv", "csv.gz"]
            } else {
                &["csv"]
            };
            round_trip(&p, &dir, exts);
        }
    }
}

#[test]
fn write_canonical_to_memory() {
    let mut rd =
        TraceReader::open(&fixture("canonical_small.csv"), &TraceOptions::default()).unwrap();
    let mut out = Vec::new();
    let n = write_canonical(&mut rd, &mut out).unwrap();
    assert_eq!(n, 3);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "time_ns,op,offset_bytes,size_bytes\n0,R,0,4096\n1000,W,8192,8192\n2500,W,4096,512\n"
    );
}

#[test]
fn generate_is_deterministic_and_valid() {
    let dir = tempfile::tempdir().unwrap();
    let params = GenParams {
        requests: 20_000,
        span_bytes: 1 << 30,
        ..GenParams::default()
    };
    let a = dir.path().join("a.csv");
    let b = dir.path().join("b.csv");
    assert_eq!(generate(&params, &a).unwrap(), 20_000);
    assert_eq!(generate(&params, &b).unwrap(), 20_000);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Another seed gives another file.
    let c = dir.path().join("c.csv");
    generate(
        &GenParams {
            seed: 7,
            ..params.clone()
        },
        &c,
    )
    .unwrap();
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
    // gz output reads back identically.
    let g = dir.path().join("a.csv.gz");
    generate(&params, &g).unwrap();
    assert_eq!(std::fs::read(&g).unwrap()[..2], [0x1f, 0x8b]);
    let opts = TraceOptions::default();
    let v = read_all(&a, &opts);
    assert_eq!(v, read_all(&g, &opts));

    assert_eq!(v.len(), 20_000);
    let writes = v.iter().filter(|r| r.op == Op::Write).count() as f64 / 20_000.0;
    assert!((writes - 0.7).abs() < 0.02, "{writes}");
    for r in &v {
        assert_eq!(r.offset_bytes % 4096, 0);
        assert!(r.offset_bytes + r.len_bytes <= 1 << 30);
        assert!(params.sizes_bytes.contains(&r.len_bytes));
    }
    // Poisson at 2000 IOPS: 20000 requests take about 10 s.
    let dur = v.last().unwrap().arrival_ns as f64 / 1e9;
    assert!((dur - 10.0).abs() < 0.5, "{dur}");
}

#[test]
fn generate_rejects_bad_params() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.csv");
    let bad = [
        (
            GenParams {
                write_fraction: 1.5,
                ..GenParams::default()
            },
            "write_fraction",
        ),
        (
            GenParams {
                sizes_bytes: vec![],
                ..GenParams::default()
            },
            "sizes_bytes",
        ),
        (
            GenParams {
                iops: 0.0,
                ..GenParams::default()
            },
            "iops",
        ),
        (
            GenParams {
                span_bytes: 1024,
                ..GenParams::default()
            },
            "sizes_bytes",
        ),
    ];
    for (p, field) in bad {
        let e = generate(&p, &out).unwrap_err().to_string();
        assert!(e.contains(field), "{e}");
    }
    // Defaults fill missing fields when deserialising.
    let p: GenParams = serde_json::from_str(r#"{"requests": 5}"#).unwrap();
    assert_eq!(p.requests, 5);
    assert_eq!(p.iops, 2000.0);
    assert_eq!(p.span_bytes, 16 << 30);
}
