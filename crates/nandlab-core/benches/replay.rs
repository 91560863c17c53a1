//! Replay throughput in host requests, the three cases of `nandlab bench` (issue 12) on the
//! benchmark device (`xia-diffecc` preset, scheme `baseline`):
//!
//! * `bundled`: the bundled pgbench slice, touched pages pre-written (parse-only beside it);
//! * `synthetic_1m/empty`: the 1 M-request benchmark trace (`trace generate` defaults, seed
//!   42: random 4 KiB-aligned offsets over 16 GiB, 70 % writes, 4–64 KiB, Poisson 2000 IOPS)
//!   from an empty device;
//! * `synthetic_1m/gc`: the same trace with the touched pages pre-written (GC running, WA 1.8);
//!
//! plus parse-only of the synthetic trace (the denominator of the sim/parse ratio).
//!
//! `cargo bench -p nandlab-core --bench replay` (criterion reports wall time; compare runs on
//! an otherwise idle machine, or use `nandlab bench` for CPU time).

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nandlab_core::api::simulate_source;
use nandlab_core::config::load;
use nandlab_core::trace::{generate, GenParams, TraceOptions, TraceReader};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn preset() -> String {
    std::fs::read_to_string(root().join("python/nandlab/configs/xia-diffecc.toml"))
        .expect("xia-diffecc preset")
}

fn count(trace: &Path) -> u64 {
    let mut r = TraceReader::open(trace, &TraceOptions::default()).expect("trace");
    let mut n = 0u64;
    while r.next_request().expect("parse").is_some() {
        n += 1;
    }
    n
}

fn simulate(text: &str, trace: &Path, overrides: &[&str]) -> serde_json::Value {
    let mut ov = vec!["scheme.name=\"baseline\"".to_string()];
    ov.extend(overrides.iter().map(|s| s.to_string()));
    let cfg = load(text, "xia-diffecc.toml", &ov).expect("config");
    let opts = TraceOptions::default();
    let mut open = || Ok(TraceReader::open(trace, &opts)?);
    simulate_source(cfg, &mut open, serde_json::Value::Null, &mut |_, _, _| {}).expect("run")
}

fn bench_bundled(c: &mut Criterion) {
    let trace = root().join("python/nandlab/data/pgbench_rw_slice.csv.gz");
    let text = preset();
    let mut g = c.benchmark_group("bundled");
    g.sample_size(10);
    g.throughput(Throughput::Elements(count(&trace)));
    g.bench_function("parse_only", |b| b.iter(|| count(&trace)));
    g.bench_function("touched", |b| b.iter(|| simulate(&text, &trace, &[])));
    g.finish();
}

fn bench_synthetic(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("synthetic_1m_seed42.csv");
    let params = GenParams {
        requests: 1_000_000,
        seed: 42,
        ..GenParams::default()
    };
    generate(&params, &trace).expect("generate");
    let text = preset();
    let mut g = c.benchmark_group("synthetic_1m");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(params.requests));
    g.bench_function("parse_only", |b| b.iter(|| count(&trace)));
    g.bench_function("empty", |b| {
        b.iter(|| simulate(&text, &trace, &["precondition.fill=\"none\""]))
    });
    g.bench_function("gc", |b| {
        b.iter(|| simulate(&text, &trace, &["precondition.fill=\"touched\""]))
    });
    g.finish();
}

criterion_group!(benches, bench_bundled, bench_synthetic);
criterion_main!(benches);
