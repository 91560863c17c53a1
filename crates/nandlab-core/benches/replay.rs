//! Replay throughput: the bundled real trace (parse-only vs full simulation) and an in-memory
//! synthetic workload (engine alone, no parsing). Throughput is in host requests.
//!
//! `cargo bench -p nandlab-core --bench replay`

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nandlab_core::api::simulate_source;
use nandlab_core::config::load;
use nandlab_core::host::VecSource;
use nandlab_core::trace::{HostRequest, Op, TraceOptions, TraceReader};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn default_config() -> String {
    std::fs::read_to_string(root().join("python/nandlab/configs/default.toml"))
        .expect("default config")
}

fn bench_bundled(c: &mut Criterion) {
    let trace = root().join("python/nandlab/data/pgbench_rw_slice.csv.gz");
    let opts = TraceOptions::default();
    let mut n = 0u64;
    let mut r = TraceReader::open(&trace, &opts).expect("trace");
    while r.next_request().expect("parse").is_some() {
        n += 1;
    }
    let mut g = c.benchmark_group("pgbench_rw_slice");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n));
    g.bench_function("parse_only", |b| {
        b.iter(|| {
            let mut r = TraceReader::open(&trace, &opts).expect("trace");
            let mut k = 0u64;
            while r.next_request().expect("parse").is_some() {
                k += 1;
            }
            k
        })
    });
    let text = default_config();
    g.bench_function("simulate_default", |b| {
        b.iter(|| {
            let cfg = load(&text, "default.toml", &[]).expect("config");
            let mut open = || Ok(TraceReader::open(&trace, &opts)?);
            simulate_source(cfg, &mut open, serde_json::Value::Null, &mut |_, _| {}).expect("run")
        })
    });
    g.finish();
}

fn bench_engine(c: &mut Criterion) {
    // 200 k random requests over 4 GiB, 70 % writes, 4–64 KiB, Poisson at 2000 IOPS (the
    // `trace generate` defaults, scaled down).
    let n = 200_000u64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let sizes = [4096u64, 8192, 16384, 32768, 65536];
    let mut t = 0u64;
    let reqs: Vec<HostRequest> = (0..n)
        .map(|_| {
            t += (-(1.0 - rng.gen::<f64>()).ln() / 2000.0 * 1e9) as u64;
            let len = sizes[rng.gen_range(0..sizes.len())];
            HostRequest {
                arrival_ns: t,
                op: if rng.gen_bool(0.7) {
                    Op::Write
                } else {
                    Op::Read
                },
                offset_bytes: rng.gen_range(0..(4u64 << 30) - len) / 4096 * 4096,
                len_bytes: len,
            }
        })
        .collect();
    let text = default_config();
    let mut g = c.benchmark_group("synthetic_200k");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n));
    g.bench_function("engine_only", |b| {
        b.iter(|| {
            let cfg = load(&text, "default.toml", &[]).expect("config");
            let mut open = || Ok(VecSource::new(reqs.clone()));
            simulate_source(cfg, &mut open, serde_json::Value::Null, &mut |_, _| {}).expect("run")
        })
    });
    g.finish();
}

criterion_group!(benches, bench_bundled, bench_engine);
criterion_main!(benches);
