//! Each format parses its sample / fixture; sniffing picks the right format for every shared
//! trace file.

use std::path::{Path, PathBuf};

use nandlab_core::trace::{
    sniff_format, BlkparseEvent, HostRequest, Op, TraceFormat, TraceOptions, TraceReader,
};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trace")
        .join(name)
}

/// Path of a shared sample, or `None` (test skipped) if the shared dir is absent.
fn sample(rel: &str) -> Option<PathBuf> {
    let p = shared().join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

fn req(arrival_ns: u64, op: Op, offset_bytes: u64, len_bytes: u64) -> HostRequest {
    HostRequest {
        arrival_ns,
        op,
        offset_bytes,
        len_bytes,
    }
}

fn read_all(path: &Path, opts: &TraceOptions) -> (Vec<HostRequest>, TraceReader) {
    let mut rd = TraceReader::open(path, opts).unwrap_or_else(|e| panic!("open: {e}"));
    let mut v = Vec::new();
    while let Some(r) = rd.next_request().unwrap_or_else(|e| panic!("read: {e}")) {
        v.push(r);
    }
    (v, rd)
}

fn first_n(path: &Path, opts: &TraceOptions, n: usize) -> Vec<HostRequest> {
    let mut rd = TraceReader::open(path, opts).unwrap_or_else(|e| panic!("open: {e}"));
    let mut v = Vec::new();
    while v.len() < n {
        match rd.next_request().unwrap_or_else(|e| panic!("read: {e}")) {
            Some(r) => v.push(r),
            None => break,
        }
    }
    v
}

fn check_sorted(v: &[HostRequest]) {
    assert_eq!(v[0].arrival_ns, 0);
    assert!(v.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
    assert!(v.iter().all(|r| r.len_bytes > 0));
}

fn reads(v: &[HostRequest]) -> usize {
    v.iter().filter(|r| r.op == Op::Read).count()
}

#[test]
fn sniff_every_shared_file() {
    use TraceFormat::*;
    let cases = [
        ("msr/msr_hm_0_sample1000.csv", Msr),
        ("umass/Financial1_first10000.ssdsim.ascii", Mqsim),
        ("umass/WebSearch1_first24783.mqsim.trace", Mqsim),
        ("other/tpcc-small.mqsim.trace", Mqsim),
        ("other/systor17-traces-sample1000.csv.gz", Systor),
        ("other/systor17-additional-sample1000.csv.gz", Systor),
        ("other/tencent_cbs_sample50000.csv.gz", Tencent),
        ("other/cloudphysics_vscsi_sample113872.csv.gz", Vscsi),
        ("other/disksim_ssd-postmark-aligned2.trace.gz", Disksim),
        ("other/disksim_ssd-iozone-aligned2-100K.trace.gz", Disksim),
        ("captured/pgbench_rw.csv.gz", Msr),
        ("captured/pgbench_wh.csv.gz", Msr),
        ("captured/pgbench_ro.part1.csv.gz", Msr),
        ("captured/devtree.csv.gz", Msr),
    ];
    for (rel, want) in cases {
        let Some(p) = sample(rel) else { continue };
        assert_eq!(sniff_format(&p).unwrap(), want, "{rel}");
    }
    // Every file in the sample directories is covered above.
    for dir in ["msr", "umass", "other"] {
        let Some(d) = sample(dir) else { continue };
        for e in std::fs::read_dir(d).unwrap() {
            let name = format!("{dir}/{}", e.unwrap().file_name().to_string_lossy());
            assert!(
                cases.iter().any(|(rel, _)| *rel == name),
                "{name} has no sniffing case"
            );
        }
    }
    let fixtures = [
        ("spc_financial1_head.spc", Spc),
        ("blkparse_sample.txt", Blkparse),
        ("canonical_small.csv", Canonical),
        ("mqsim_multi.trace", Mqsim),
    ];
    for (f, want) in fixtures {
        assert_eq!(sniff_format(&fixture(f)).unwrap(), want, "{f}");
    }
}

#[test]
fn msr_sample() {
    let Some(p) = sample("msr/msr_hm_0_sample1000.csv") else {
        return;
    };
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(rd.format(), TraceFormat::Msr);
    // 128166385295514663,hm,0,Write,9056014336,2048,2833
    // 128166385295514878,hm,0,Write,11855351808,512,2617
    assert_eq!(v[0], req(0, Op::Write, 9056014336, 2048));
    assert_eq!(v[1], req(21_500, Op::Write, 11855351808, 512));
    assert_eq!(v.len(), 1000);
    assert_eq!(reads(&v), 508);
    check_sorted(&v);
    let span_s = v.last().unwrap().arrival_ns as f64 / 1e9;
    assert!((span_s - 127.2).abs() < 0.1, "{span_s}");
    let c = rd.counters();
    assert_eq!(c.lines_read, 1000);
    assert_eq!(c.requests_emitted, 1000);
    assert_eq!(c.requests_reordered + c.requests_clamped, 0);
}

#[test]
fn captured_msr_first_requests() {
    let Some(p) = sample("captured/pgbench_rw.csv.gz") else {
        return;
    };
    // 132000000000000000,pgbench_rw,0,Read,25926303744,8192,10510
    // 132000000000013870,pgbench_rw,0,Read,25770070016,40960,3120
    let v = first_n(&p, &TraceOptions::default(), 3);
    assert_eq!(v[0], req(0, Op::Read, 25926303744, 8192));
    assert_eq!(v[1], req(1_387_000, Op::Read, 25770070016, 40960));
}

#[test]
fn financial1_ssdsim_ascii() {
    let Some(p) = sample("umass/Financial1_first10000.ssdsim.ascii") else {
        return;
    };
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(rd.format(), TraceFormat::Mqsim);
    // line 1 `0 0 303567 7 0`: device 0 has base 0 in the merge.
    assert_eq!(v[0], req(0, Op::Write, 303567 * 512, 3584));
    assert_eq!(v.len(), 10000);
    assert_eq!(reads(&v), 4078);
    check_sorted(&v);
    let bases = rd.device_bases();
    assert_eq!(bases.len(), 22);
    assert_eq!(bases[0], (0, 0));
    // Filter: device 0 only, line 3 `26214000 0 303574 7 0`.
    let opts = TraceOptions {
        device: Some(0),
        ..TraceOptions::default()
    };
    let (v0, rd0) = read_all(&p, &opts);
    assert_eq!(v0[1], req(26_214_000, Op::Write, 303574 * 512, 3584));
    assert_eq!(
        v0.len() as u64 + rd0.counters().dropped_device_filter,
        10000
    );
    assert!(rd0.device_bases().is_empty());
}

#[test]
fn websearch1_and_tpcc_mqsim() {
    if let Some(p) = sample("umass/WebSearch1_first24783.mqsim.trace") {
        let (v, _) = read_all(&p, &TraceOptions::default());
        // `11413000 0 657728 16 1` is the first request; rebased to 0.
        assert_eq!(v[0], req(0, Op::Read, 657728 * 512, 8192));
        assert_eq!(v.len(), 24783);
        assert_eq!(reads(&v), 24779);
        check_sorted(&v);
    }
    if let Some(p) = sample("other/tpcc-small.mqsim.trace") {
        let (v, rd) = read_all(&p, &TraceOptions::default());
        assert_eq!(v.len(), 6999);
        assert_eq!(reads(&v), 4381);
        assert_eq!(rd.device_bases().len(), 16);
        check_sorted(&v);
    }
}

#[test]
fn disksim_samples() {
    if let Some(p) = sample("other/disksim_ssd-postmark-aligned2.trace.gz") {
        let (v, rd) = read_all(&p, &TraceOptions::default());
        assert_eq!(rd.format(), TraceFormat::Disksim);
        // 7961.833 0 20228336 8 0 ; 8346.206 0 6397360 496 0
        assert_eq!(v[0], req(0, Op::Write, 20228336 * 512, 4096));
        assert_eq!(v[1], req(384_373_000, Op::Write, 6397360 * 512, 496 * 512));
        assert_eq!(v.len(), 62257);
        assert_eq!(reads(&v), 51780);
        check_sorted(&v);
        assert!(rd.device_bases().is_empty()); // one device: nothing to merge
    }
    if let Some(p) = sample("other/disksim_ssd-iozone-aligned2-100K.trace.gz") {
        let (v, _) = read_all(&p, &TraceOptions::default());
        assert_eq!(v.len(), 100_000);
        assert_eq!(reads(&v), 0);
    }
}

#[test]
fn systor_samples() {
    let Some(p) = sample("other/systor17-traces-sample1000.csv.gz") else {
        return;
    };
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(rd.format(), TraceFormat::Systor);
    assert_eq!(rd.counters().header_lines_skipped, 1);
    assert_eq!(v.len(), 999);
    assert_eq!(reads(&v), 826);
    check_sorted(&v);
    // Rows are unsorted: 1456095145.133076 precedes 1456095145.126285 in the file.
    assert!(rd.counters().requests_reordered > 0);
    let at = |off: u64| v.iter().find(|r| r.offset_bytes == off).unwrap();
    let (a, b) = (at(899056122368), at(4256049987072));
    assert_eq!((a.op, a.len_bytes), (Op::Read, 131072));
    assert_eq!(a.arrival_ns - b.arrival_ns, 6_791_000);
    if let Some(p) = sample("other/systor17-additional-sample1000.csv.gz") {
        let (v, _) = read_all(&p, &TraceOptions::default());
        assert_eq!(v.len(), 999);
        assert_eq!(reads(&v), 700);
    }
}

#[test]
fn tencent_sample() {
    let Some(p) = sample("other/tencent_cbs_sample50000.csv.gz") else {
        return;
    };
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(rd.format(), TraceFormat::Tencent);
    assert_eq!(v.len(), 50000);
    assert_eq!(reads(&v), 24521);
    check_sorted(&v);
    assert!(rd.device_bases().len() > 1000);
    let c = rd.counters();
    assert!(c.requests_reordered > 0);
    // Filter one volume: `1538323200,4247200,128,1,1058` is in volume 1058.
    let opts = TraceOptions {
        device: Some(1058),
        ..TraceOptions::default()
    };
    let (v, rd) = read_all(&p, &opts);
    let r = v.iter().find(|r| r.offset_bytes == 4247200 * 512).unwrap();
    assert_eq!((r.op, r.len_bytes), (Op::Write, 128 * 512));
    assert_eq!(v.len() as u64 + rd.counters().dropped_device_filter, 50000);
}

#[test]
fn vscsi_sample() {
    let Some(p) = sample("other/cloudphysics_vscsi_sample113872.csv.gz") else {
        return;
    };
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(rd.format(), TraceFormat::Vscsi);
    // 1,5633898368802,2a,512,42932745 ; 1,5633898611441,2a,512,42932746
    assert_eq!(v[0], req(0, Op::Write, 42932745 * 512, 512));
    assert_eq!(v[1], req(242_639_000, Op::Write, 42932746 * 512, 512));
    assert_eq!(v.len(), 113_872);
    assert_eq!(reads(&v), 46974);
    check_sorted(&v);
}

#[test]
fn spc_fixture() {
    let p = fixture("spc_financial1_head.spc");
    // Filter ASU 0: Financial1's published first records.
    let opts = TraceOptions {
        device: Some(0),
        ..TraceOptions::default()
    };
    let (v, rd) = read_all(&p, &opts);
    assert_eq!(
        v,
        vec![
            req(0, Op::Write, 303567 * 512, 3584),
            req(26_214_000, Op::Write, 303574 * 512, 3584),
        ]
    );
    assert_eq!(rd.counters().dropped_device_filter, 3);
    // Merge: ASU 0 ends at (303574*512+3584) -> 149 MiB; ASU 1 ends below 28 MiB.
    let (v, rd) = read_all(&p, &TraceOptions::default());
    let b1 = 149 << 20;
    let b2 = b1 + (28 << 20);
    assert_eq!(rd.device_bases(), &[(0, 0), (1, b1), (2, b2)]);
    assert_eq!(v[1], req(0, Op::Write, b1 + 55590 * 512, 3072));
    assert_eq!(v[3], req(30_000_000, Op::Read, b2 + 1000 * 512, 512));
    assert_eq!(v[4], req(40_000_000, Op::Read, b1 + 55596 * 512, 3072));
}

#[test]
fn blkparse_fixture() {
    let p = fixture("blkparse_sample.txt");
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(rd.format(), TraceFormat::Blkparse);
    assert_eq!(
        v,
        vec![
            req(0, Op::Write, 223490 * 512, 4096),
            req(23_000, Op::Read, 1000 * 512, 8192),
            req(58_000, Op::Read, 7000 * 512, 16384),
        ]
    );
    let c = rd.counters();
    assert_eq!(c.zero_size_skipped, 2); // D FWS (no sectors), D WS 3000 + 0
                                        // 4 Q, G, P, C, D discard, and 8 summary lines.
    assert_eq!(c.non_request_skipped, 8 + 8);
    assert_eq!(c.blank_lines_skipped, 1);
    let q = TraceOptions {
        blkparse_event: BlkparseEvent::Queue,
        ..TraceOptions::default()
    };
    let (v, _) = read_all(&p, &q);
    assert_eq!(
        v,
        vec![
            req(0, Op::Write, 223490 * 512, 4096),
            req(20_000, Op::Read, 1000 * 512, 8192),
        ]
    );
}

#[test]
fn canonical_fixture() {
    let p = fixture("canonical_small.csv");
    let (v, rd) = read_all(&p, &TraceOptions::default());
    assert_eq!(
        v,
        vec![
            req(0, Op::Read, 0, 4096),
            req(1000, Op::Write, 8192, 8192),
            req(2500, Op::Write, 4096, 512),
        ]
    );
    let c = rd.counters();
    assert_eq!(
        (
            c.header_lines_skipped,
            c.comment_lines_skipped,
            c.blank_lines_skipped
        ),
        (1, 1, 1)
    );
}

#[test]
fn explicit_format_overrides_sniffing() {
    // The MQSim fixture read as DiskSim: time in ms, op 1 = flags bit 0 = read.
    let p = fixture("mqsim_multi.trace");
    let opts = TraceOptions {
        format: Some(TraceFormat::Disksim),
        device: Some(1),
        ..TraceOptions::default()
    };
    let (v, rd) = read_all(&p, &opts);
    assert_eq!(rd.format(), TraceFormat::Disksim);
    assert_eq!(v, vec![req(0, Op::Read, 0, 4096)]);
}
