//! The compact address map (issue 28): a trace whose span is far larger than what it touches
//! replays on a device sized for what it touches, exactly as the same trace with its offsets
//! packed by hand replays on a dense device.

use std::path::{Path, PathBuf};

use nandlab_core::api::{run, RunRequest};
use nandlab_core::trace::TraceOptions;
use serde_json::Value;

fn preset(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../python/nandlab/configs/{name}.toml"))
}

fn run_json(path: &Path, config: &str, overrides: &[&str]) -> Result<Value, String> {
    let p = preset(config);
    let req = RunRequest {
        config_toml: std::fs::read_to_string(&p).unwrap(),
        config_path: Some(p),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        scheme: None,
        trace_path: path.to_path_buf(),
        trace_options: TraceOptions::default(),
        flow_traces: Vec::new(),
    };
    run(&req, &mut |_, _, _| {})
        .map(|s| serde_json::from_str(&s).unwrap())
        .map_err(|e| e.to_string())
}

const MIB: u64 = 1 << 20;
const TIB: u64 = 1 << 40;

/// Requests over three far-apart regions (chunk-crossing, partial pages, reads and writes),
/// as (time_ns, op, offset, size).
fn sparse_requests() -> Vec<(u64, char, u64, u64)> {
    let regions = [5 * MIB, 3 * TIB + 7 * MIB, 40 * TIB];
    let mut out = Vec::new();
    let mut t = 0;
    for round in 0..40u64 {
        for (i, &base) in regions.iter().enumerate() {
            t += 20_000;
            let off = base + (round * 37_000 + i as u64 * 4096) % (3 * MIB);
            let op = if (round + i as u64).is_multiple_of(3) {
                'R'
            } else {
                'W'
            };
            // some requests cross a 1 MiB chunk boundary, some are partial pages
            let size = if round.is_multiple_of(5) {
                65_536
            } else {
                4096 + 512 * (round % 4)
            };
            out.push((t, op, off, size));
        }
    }
    out
}

fn write_trace(dir: &Path, name: &str, reqs: &[(u64, char, u64, u64)]) -> PathBuf {
    let p = dir.join(name);
    let mut s = String::new();
    for (t, op, off, size) in reqs {
        s.push_str(&format!("{t},{op},{off},{size}\n"));
    }
    std::fs::write(&p, s).unwrap();
    p
}

/// The offsets moved as the compact map moves them: touched 1 MiB chunks, packed in order.
fn packed(reqs: &[(u64, char, u64, u64)]) -> Vec<(u64, char, u64, u64)> {
    let mut chunks: Vec<u64> = reqs
        .iter()
        .flat_map(|&(_, _, o, s)| (o / MIB)..=((o + s - 1) / MIB))
        .collect();
    chunks.sort_unstable();
    chunks.dedup();
    reqs.iter()
        .map(|&(t, op, o, s)| {
            let rank = chunks.binary_search(&(o / MIB)).unwrap() as u64;
            (t, op, rank * MIB + o % MIB, s)
        })
        .collect()
}

/// What must agree between the compact run and the hand-packed dense run.
fn model(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    for k in ["timing", "trace", "config"] {
        o.remove(k);
    }
    o["device"].as_object_mut().unwrap().remove("address_map");
    v
}

#[test]
fn a_sparse_trace_replays_as_its_packed_twin_on_every_fill() {
    let dir = tempfile::tempdir().unwrap();
    let reqs = sparse_requests();
    let sparse = write_trace(dir.path(), "sparse.csv", &reqs);
    let twin = write_trace(dir.path(), "packed.csv", &packed(&reqs));
    for (config, extra) in [
        ("default", vec![]),
        // (A few MiB of logical space needs room for GC's reserve.)
        (
            "xia-diffecc",
            vec![
                "scheme.name=\"baseline\"",
                "device.op_percent_of_logical=400.0",
            ],
        ),
    ] {
        let a = run_json(&sparse, config, &extra).unwrap();
        let am = &a["device"]["address_map"];
        assert_eq!(am["mode"], "compact", "{config}: {am}");
        let span = am["trace_span_bytes"].as_u64().unwrap();
        assert!((40 * TIB..40 * TIB + 4 * MIB).contains(&span), "{span}");
        let chunks = am["touched_chunks"].as_u64().unwrap();
        // Three regions of up to 1.5 MiB each: two or three chunks apiece.
        assert!((3..=9).contains(&chunks), "{chunks}");
        let b = run_json(&twin, config, &extra).unwrap();
        assert_eq!(b["device"]["address_map"]["mode"], "dense");
        assert_eq!(model(a), model(b), "{config}");
    }
}

#[test]
fn the_map_can_be_asked_for_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let reqs = sparse_requests();
    let sparse = write_trace(dir.path(), "sparse.csv", &reqs);
    // A dense trace stays dense under auto, and compact when asked for.
    let small = write_trace(dir.path(), "small.csv", &packed(&reqs));
    let a = run_json(&small, "default", &["device.address_map=\"compact\""]).unwrap();
    assert_eq!(a["device"]["address_map"]["mode"], "compact");
    // Dense over 40 TiB: the device is refused before anything is allocated (one line,
    // naming the way out).
    let e = run_json(&sparse, "default", &["device.address_map=\"dense\""]).unwrap_err();
    assert!(
        e.contains("device.address_map") || e.contains("32-bit PPN"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // Compact and wrap are exclusive.
    let e = run_json(
        &sparse,
        "default",
        &["device.address_map=\"compact\"", "ftl.wrap_offsets=true"],
    )
    .unwrap_err();
    assert!(
        e.contains("device.address_map") && e.contains("wrap_offsets"),
        "{e}"
    );
    // Compact with a configured capacity smaller than what the trace touches.
    let e = run_json(
        &sparse,
        "xia-diffecc",
        &[
            "device.address_map=\"compact\"",
            "device.pages_per_block=16",
            "device.logical_capacity_bytes=\"4MiB\"",
            "device.op_percent_of_logical=400.0",
        ],
    )
    .unwrap_err();
    assert!(
        e.contains("device.address_map") && e.contains("touches"),
        "{e}"
    );
}
