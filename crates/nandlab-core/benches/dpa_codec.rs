//! DPA-PPU encode throughput (Guo §2.4 codec, Table 4's 64 polynomials) on random 4 KiB pages,
//! per chunk size and kernel; decode for 8 B chunks. Throughput is in bytes of page data.
//! The acceptance bar is ≥ 200 MB/s per core for encoding.
//!
//! `cargo bench -p nandlab-core --bench dpa_codec`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nandlab_core::dpa::codec::CHUNK_SIZES;
use nandlab_core::dpa::poly::TABLE4;
use nandlab_core::dpa::{Backend, Choice, Codec, Encoded};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const PAGES: usize = 64;
const PAGE: usize = 4096;

fn data() -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    (0..PAGES * PAGE).map(|_| rng.gen::<u8>()).collect()
}

fn bench_encode(c: &mut Criterion) {
    let data = data();
    let mut g = c.benchmark_group("dpa_encode");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    let backends = [Backend::Avx512, Backend::Clmul, Backend::Portable];
    for be in backends.into_iter().filter(|b| b.supported()) {
        for &cb in &CHUNK_SIZES {
            let codec = Codec::with_backend(cb, &TABLE4, be).expect("codec");
            let mut enc = Encoded::default();
            g.bench_with_input(
                BenchmarkId::new(be.name(), format!("{cb}B")),
                &cb,
                |b, _| {
                    b.iter(|| {
                        let mut ones = 0u64;
                        for p in data.chunks_exact(PAGE) {
                            codec.encode(p, Choice::Auto, &mut enc).expect("encode");
                            ones += enc.ones_scrambled;
                        }
                        ones
                    })
                },
            );
        }
    }
    g.finish();
}

fn bench_decode(c: &mut Criterion) {
    let data = data();
    let codec = Codec::guo(8).expect("codec");
    let mut stored = Vec::new();
    let mut enc = Encoded::default();
    for p in data.chunks_exact(PAGE) {
        codec.encode(p, Choice::Scramble, &mut enc).expect("encode");
        stored.push((enc.stored.clone(), enc.tags.clone()));
    }
    let mut g = c.benchmark_group("dpa_decode");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    let mut out = Vec::new();
    g.bench_function("8B", |b| {
        b.iter(|| {
            for (s, t) in &stored {
                codec.decode(s, false, t, &mut out).expect("decode");
            }
            out.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench_encode, bench_decode);
criterion_main!(benches);
