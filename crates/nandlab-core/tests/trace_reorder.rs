//! Out-of-order policy (bounded re-sort, clamping, window 0) and the multi-device policy.

use std::path::{Path, PathBuf};

use nandlab_core::trace::{HostRequest, Op, TraceError, TraceOptions, TraceReader};

fn canonical(dir: &tempfile::TempDir, name: &str, times: &[u64]) -> PathBuf {
    // Offset = 4096 * line index, so each request can be identified.
    let mut s = String::from("time_ns,op,offset_bytes,size_bytes\n");
    for (i, t) in times.iter().enumerate() {
        s.push_str(&format!("{t},R,{},4096\n", i as u64 * 4096));
    }
    let p = dir.path().join(name);
    std::fs::write(&p, s).unwrap();
    p
}

fn window(w: usize) -> TraceOptions {
    TraceOptions {
        reorder_window: w,
        ..TraceOptions::default()
    }
}

fn read_all(p: &Path, opts: &TraceOptions) -> (Vec<HostRequest>, TraceReader) {
    let mut rd = TraceReader::open(p, opts).unwrap();
    let mut v = Vec::new();
    while let Some(r) = rd.next_request().unwrap() {
        v.push(r);
    }
    (v, rd)
}

/// (arrival, line index) pairs.
fn order(v: &[HostRequest]) -> Vec<(u64, u64)> {
    v.iter()
        .map(|r| (r.arrival_ns, r.offset_bytes / 4096))
        .collect()
}

#[test]
fn resorts_within_window() {
    let dir = tempfile::tempdir().unwrap();
    let p = canonical(&dir, "ooo.csv", &[10, 20, 50, 30, 40, 60, 60, 55]);
    let (v, rd) = read_all(&p, &window(4));
    assert_eq!(
        order(&v),
        vec![
            (0, 0),
            (10, 1),
            (20, 3),
            (30, 4),
            (40, 2),
            (45, 7),
            (50, 5),
            (50, 6)
        ]
    );
    let c = rd.counters();
    // 50 (line 2) is overtaken by 30 and 40; both 60s by 55.
    assert_eq!(c.requests_reordered, 3);
    assert_eq!(c.requests_clamped, 0);
    assert_eq!(c.requests_emitted, 8);
}

#[test]
fn equal_times_keep_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = canonical(&dir, "ties.csv", &[5, 7, 7, 6, 7]);
    let (v, rd) = read_all(&p, &window(8));
    assert_eq!(order(&v), vec![(0, 0), (1, 3), (2, 1), (2, 2), (2, 4)]);
    assert_eq!(rd.counters().requests_reordered, 2);
}

#[test]
fn rebases_to_smallest_time_in_first_window() {
    let dir = tempfile::tempdir().unwrap();
    let p = canonical(&dir, "first.csv", &[50, 10, 20]);
    let (v, _) = read_all(&p, &window(4));
    assert_eq!(order(&v), vec![(0, 1), (10, 2), (40, 0)]);
}

#[test]
fn clamps_beyond_window() {
    let dir = tempfile::tempdir().unwrap();
    let p = canonical(&dir, "clamp.csv", &[100, 200, 300, 400, 50, 500]);
    let (v, rd) = read_all(&p, &window(2));
    // 50 arrives when 100 and 200 are already out: it gets time 200 (the last emitted).
    assert_eq!(
        order(&v),
        vec![(0, 0), (100, 1), (100, 4), (200, 2), (300, 3), (400, 5)]
    );
    let c = rd.counters();
    assert_eq!(c.requests_clamped, 1);
    assert_eq!(c.requests_reordered, 2); // 300 and 400 were overtaken by the clamped one
}

#[test]
fn window_zero_rejects_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = canonical(&dir, "strict.csv", &[10, 20, 20, 15]);
    let mut rd = TraceReader::open(&p, &window(0)).unwrap();
    let mut got = 0;
    let err = loop {
        match rd.next_request() {
            Ok(Some(_)) => got += 1,
            Ok(None) => panic!("no error"),
            Err(e) => break e,
        }
    };
    assert_eq!(got, 3);
    assert!(matches!(
        err,
        TraceError::OutOfOrder {
            line: 5,
            time_ns: 15,
            prev_ns: 20,
            prev_line: 4,
            ..
        }
    ));
    let msg = err.to_string();
    for part in [
        "strict.csv",
        "line 5:",
        "`time_ns`",
        "15 ns",
        "20 ns",
        "line 4",
    ] {
        assert!(msg.contains(part), "{msg:?} lacks {part:?}");
    }
    // Sorted input is fine with window 0.
    let p = canonical(&dir, "sorted.csv", &[10, 20, 20, 25]);
    let (v, _) = read_all(&p, &window(0));
    assert_eq!(v.len(), 4);
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trace")
        .join(name)
}

#[test]
fn merge_gives_disjoint_ranges() {
    // 0 0 0 8 0 / 100 1 0 8 1 / 200 0 2048 16 0 / 300 2 10 8 1
    let p = fixture("mqsim_multi.trace");
    let (v, rd) = read_all(&p, &TraceOptions::default());
    // Device 0 ends at 2064 sectors (1.01 MiB) -> 2 MiB; device 1 at 4 KiB -> 1 MiB.
    let mib = 1u64 << 20;
    assert_eq!(rd.device_bases(), &[(0, 0), (1, 2 * mib), (2, 3 * mib)]);
    let w = |t, op, off, len| HostRequest {
        arrival_ns: t,
        op,
        offset_bytes: off,
        len_bytes: len,
    };
    assert_eq!(
        v,
        vec![
            w(0, Op::Write, 0, 4096),
            w(100, Op::Read, 2 * mib, 4096),
            w(200, Op::Write, 2048 * 512, 8192),
            w(300, Op::Read, 3 * mib + 5120, 4096),
        ]
    );
    // Each device's requests stay inside [base(d), base(d+1)).
    let bases = rd.device_bases();
    for (i, r) in v.iter().enumerate() {
        let dev = [0usize, 1, 0, 2][i];
        let lo = bases[dev].1;
        let hi = bases.get(dev + 1).map_or(u64::MAX, |b| b.1);
        assert!(r.offset_bytes >= lo && r.offset_bytes + r.len_bytes <= hi);
    }
}

#[test]
fn device_filter_keeps_one_device() {
    let p = fixture("mqsim_multi.trace");
    let opts = TraceOptions {
        device: Some(0),
        ..TraceOptions::default()
    };
    let (v, rd) = read_all(&p, &opts);
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].offset_bytes, v[1].offset_bytes), (0, 2048 * 512));
    assert_eq!((v[0].arrival_ns, v[1].arrival_ns), (0, 200));
    assert_eq!(rd.counters().dropped_device_filter, 2);
    assert!(rd.device_bases().is_empty());
}
