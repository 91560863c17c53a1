//! DPA-PPU codec: exact vectors of spec `dpa-flexlevel.md` §4, round trips (property tests),
//! agreement of the fast kernels with the literal bit-serial scrambler, Table 4's structure.

use nandlab_core::dpa::codec::{
    decorrelated_ones, descramble_reference, ones, scramble_reference, CHUNK_SIZES,
};
use nandlab_core::dpa::poly::{is_primitive, polynomial_set, reciprocal, TABLE4};
use nandlab_core::dpa::{Backend, Choice, Codec, Encoded};
use proptest::prelude::*;

/// SHA-256 (FIPS 180-4), for the spec's test page only.
fn sha256(msg: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut m = msg.to_vec();
    m.push(0x80);
    while m.len() % 64 != 56 {
        m.push(0);
    }
    m.extend_from_slice(&((msg.len() as u64) * 8).to_be_bytes());
    for block in m.chunks_exact(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                block[4 * i],
                block[4 * i + 1],
                block[4 * i + 2],
                block[4 * i + 3],
            ]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn sha_page() -> Vec<u8> {
    (0..128)
        .flat_map(|i| sha256(format!("dpa-test-{i}").as_bytes()))
        .collect()
}

fn backends() -> Vec<Backend> {
    [Backend::Portable, Backend::Clmul, Backend::Avx512]
        .into_iter()
        .filter(|b| b.supported())
        .collect()
}

#[test]
fn sha256_is_right() {
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn chunk_vectors_of_spec_section_4() {
    let chunk = unhex("0123456789abcdef");
    for be in backends() {
        let c = Codec::with_backend(8, &TABLE4, be).unwrap();
        let mut out = [0u8; 8];
        for (tag, want) in [
            (0u8, "013b5b187c38842f"),
            (1, "01823cc96b3d3d96"),
            (32, "01568039939b283d"),
            (48, "01b25e9527d2bc47"),
        ] {
            c.scramble_chunk(&chunk, tag, &mut out).unwrap();
            assert_eq!(hex(&out), want, "tag {tag} ({be:?})");
            assert_eq!(
                scramble_reference(&chunk, TABLE4[usize::from(tag)]),
                out.to_vec()
            );
        }
        // Best tag is 10 with 19 ones (tests the reconstruction of #10).
        let mut enc = Encoded::default();
        c.encode(&chunk, Choice::Scramble, &mut enc).unwrap();
        assert_eq!(enc.tags, vec![10]);
        assert_eq!(enc.ones_scrambled, 19);
    }
}

#[test]
fn a_chunk_holding_a_polynomial_scrambles_to_a_single_one() {
    let c = Codec::guo(8).unwrap();
    for (t, &p) in TABLE4.iter().enumerate() {
        // b_i = coefficient of x^i, MSB-first.
        let mut chunk = [0u8; 8];
        for i in 0..=16 {
            if (p >> i) & 1 == 1 {
                chunk[i / 8] |= 0x80 >> (i % 8);
            }
        }
        let mut enc = Encoded::default();
        c.encode(&chunk, Choice::Scramble, &mut enc).unwrap();
        let want = match t {
            29 => 25,
            30 => 27,
            _ => t as u8,
        };
        assert_eq!(enc.tags, vec![want], "polynomial #{t}");
        let mut s = [0u8; 8];
        c.scramble_chunk(&chunk, t as u8, &mut s).unwrap();
        assert_eq!(hex(&s), "8000000000000000");
    }
}

#[test]
fn page_vectors_of_spec_section_4() {
    let c8 = Codec::guo(8).unwrap();
    let c4 = Codec::guo(4).unwrap();
    let mut e = Encoded::default();
    // All 0x00: path A, stored all 0xFF.
    let zero = vec![0u8; 4096];
    c8.encode(&zero, Choice::Auto, &mut e).unwrap();
    assert_eq!(e.ones_decorrelated, 0);
    assert!(e.correlated && e.tags.is_empty());
    assert!(e.stored.iter().all(|&b| b == 0xFF));
    // All 0xFF.
    let ff = vec![0xFFu8; 4096];
    c8.encode(&ff, Choice::Auto, &mut e).unwrap();
    assert_eq!((e.ones_decorrelated, e.ones_scrambled), (8, 12288));
    assert!(e.correlated);
    assert_eq!(e.stored[0], 0);
    assert!(e.stored[1..].iter().all(|&b| b == 0xFF));
    c4.encode(&ff, Choice::Auto, &mut e).unwrap();
    assert_eq!(e.ones_scrambled, 11264);
    // Ramp.
    let ramp: Vec<u8> = (0..4096).map(|i| (i % 256) as u8).collect();
    c8.encode(&ramp, Choice::Auto, &mut e).unwrap();
    assert_eq!((e.ones_decorrelated, e.ones_scrambled), (8152, 11712));
    assert!(e.correlated);
    assert_eq!(ones(&e.stored), 24616);
    c4.encode(&ramp, Choice::Auto, &mut e).unwrap();
    assert_eq!(e.ones_scrambled, 9648);
    // SHA page.
    let sha = sha_page();
    c8.encode(&sha, Choice::Auto, &mut e).unwrap();
    assert_eq!((e.ones_decorrelated, e.ones_scrambled), (16403, 11724));
    assert!(!e.correlated);
    assert_eq!(ones(&e.stored), 21044);
    assert_eq!(e.tags[..8], [52, 44, 2, 1, 13, 43, 60, 20]);
    c4.encode(&sha, Choice::Auto, &mut e).unwrap();
    assert_eq!(e.ones_scrambled, 9960);
    assert!(!e.correlated);
    assert_eq!(ones(&e.stored), 22808);
    assert_eq!(e.tags[..8], [4, 2, 12, 14, 1, 32, 1, 61]);
}

#[test]
fn table4_structure() {
    // All 64 primitive; #10 is the reciprocal of #21; 16 each of 5/7/9/13 terms; pairs
    // 32..63 are reciprocal pairs.
    for (i, &p) in TABLE4.iter().enumerate() {
        assert!(is_primitive(p), "#{i} = {p:#x} is not primitive");
    }
    assert_eq!(reciprocal(TABLE4[10]), TABLE4[21]);
    let mut terms = std::collections::BTreeMap::new();
    for &p in &TABLE4 {
        *terms.entry(p.count_ones()).or_insert(0) += 1;
    }
    assert_eq!(
        terms.into_iter().collect::<Vec<_>>(),
        vec![(5, 16), (7, 16), (9, 16), (13, 16)]
    );
    for k in 16..32 {
        assert_eq!(
            reciprocal(TABLE4[2 * k]),
            TABLE4[2 * k + 1],
            "pair {}",
            2 * k
        );
    }
}

fn pages() -> Vec<(&'static str, Vec<u8>)> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    vec![
        ("random", random),
        ("zero", vec![0; 4096]),
        ("ones", vec![0xFF; 4096]),
        ("ramp", (0..4096).map(|i| (i % 256) as u8).collect()),
        (
            "periodic",
            (0..4096)
                .map(|i| [0xA5u8, 0x3C, 0x00, 0xFF, 0x81][i % 5])
                .collect(),
        ),
    ]
}

#[test]
fn round_trip_every_page_chunk_path_and_tag() {
    for be in backends() {
        for &cb in &CHUNK_SIZES {
            let c = Codec::with_backend(cb, &TABLE4, be).unwrap();
            let mut e = Encoded::default();
            let mut back = Vec::new();
            for (name, page) in pages() {
                let mut choices = vec![Choice::Auto, Choice::Decorrelate, Choice::Scramble];
                choices.extend((0..64).map(Choice::Tag));
                for ch in choices {
                    c.encode(&page, ch, &mut e).unwrap();
                    c.decode(&e.stored, e.correlated, &e.tags, &mut back)
                        .unwrap();
                    assert!(back == page, "{name} chunk {cb} {ch:?} {be:?}");
                }
            }
        }
    }
}

#[test]
fn fast_kernels_match_the_bit_serial_scrambler() {
    let sha = sha_page();
    for be in backends() {
        for &cb in &CHUNK_SIZES {
            let c = Codec::with_backend(cb, &TABLE4, be).unwrap();
            let mut out = vec![0u8; cb];
            let mut back = vec![0u8; cb];
            for (i, chunk) in sha.chunks_exact(cb).take(40).enumerate() {
                let tag = (i * 7 % 64) as u8;
                c.scramble_chunk(chunk, tag, &mut out).unwrap();
                assert_eq!(
                    out,
                    scramble_reference(chunk, TABLE4[usize::from(tag)]),
                    "{cb} {be:?}"
                );
                c.descramble_chunk(&out, tag, &mut back).unwrap();
                assert_eq!(back, chunk);
                assert_eq!(descramble_reference(&out, TABLE4[usize::from(tag)]), chunk);
            }
            // Best tags and minima agree between backends.
            let mut e = Encoded::default();
            c.encode(&sha, Choice::Scramble, &mut e).unwrap();
            let p = Codec::with_backend(cb, &TABLE4, Backend::Portable).unwrap();
            let mut f = Encoded::default();
            p.encode(&sha, Choice::Scramble, &mut f).unwrap();
            assert_eq!(e, f);
        }
    }
}

#[test]
fn decorrelation_counts() {
    assert_eq!(decorrelated_ones(&[0xFF; 13]), 8);
    let ramp: Vec<u8> = (0..4096).map(|i| (i % 256) as u8).collect();
    assert_eq!(decorrelated_ones(&ramp), 8152);
}

#[test]
fn bad_input_is_an_error_naming_the_parameter() {
    let e = Codec::guo(12).unwrap_err().to_string();
    assert!(
        e.contains("chunk_bytes") && e.contains("4, 8, 16 or 32"),
        "{e}"
    );
    let c = Codec::guo(8).unwrap();
    let mut enc = Encoded::default();
    let e = c
        .encode(&[0u8; 12], Choice::Auto, &mut enc)
        .unwrap_err()
        .to_string();
    assert!(e.contains("page length"), "{e}");
    let e = c
        .encode(&[0u8; 16], Choice::Tag(64), &mut enc)
        .unwrap_err()
        .to_string();
    assert!(e.contains("tag"), "{e}");
    let mut out = Vec::new();
    let e = c
        .decode(&[0u8; 16], false, &[1], &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("tags") && e.contains("2"), "{e}");
    let e = c
        .decode(&[0u8; 16], false, &[1, 99], &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("tag") && e.contains("99"), "{e}");
    assert!(Codec::new(8, &[0x10000]).is_err()); // no constant term
    assert!(Codec::new(8, &[]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_round_trip(
        data in proptest::collection::vec(any::<u8>(), 1..=64usize).prop_map(|v| {
            // Pages of 32..=2048 bytes, a multiple of 32, from a short random seed pattern.
            let n = 32 * (1 + v.len() % 64);
            (0..n).map(|i| v[i % v.len()].wrapping_mul((i / v.len()) as u8 | 1)).collect::<Vec<u8>>()
        }),
        chunk_i in 0usize..4,
        tag in 0u8..64,
        order_i in 0usize..3,
    ) {
        let cb = CHUNK_SIZES[chunk_i];
        let order = [4u32, 8, 16][order_i];
        let polys = polynomial_set(order, None).unwrap();
        let tag = tag % polys.len() as u8;
        let c = Codec::new(cb, &polys).unwrap();
        let mut e = Encoded::default();
        let mut back = Vec::new();
        for ch in [Choice::Auto, Choice::Decorrelate, Choice::Scramble, Choice::Tag(tag)] {
            c.encode(&data, ch, &mut e).unwrap();
            prop_assert_eq!(e.stored.len(), data.len());
            c.decode(&e.stored, e.correlated, &e.tags, &mut back).unwrap();
            prop_assert_eq!(&back, &data);
            // The stored page is the inversion of the selected output.
            let sel = if e.correlated { e.ones_decorrelated } else { e.ones_scrambled };
            prop_assert_eq!(ones(&e.stored), 8 * data.len() as u64 - sel);
        }
    }
}

#[test]
fn every_backend_gives_the_same_tags_and_statistics() {
    use nandlab_core::dpa::TagStats;
    let mut data = sha_page();
    data.extend(pages().into_iter().flat_map(|(_, p)| p));
    for (order, count) in [
        (16u32, Some(64usize)),
        (16, Some(13)),
        (4, None),
        (8, Some(37)),
        (16, Some(256)),
    ] {
        let polys = polynomial_set(order, count).unwrap();
        for &cb in &CHUNK_SIZES {
            let mut reference: Option<(Vec<Encoded>, TagStats)> = None;
            for be in backends() {
                let c = Codec::with_backend(cb, &polys, be).unwrap();
                let mut st = TagStats::new(polys.len());
                let mut encs = Vec::new();
                for p in data.chunks(4096) {
                    let mut e = Encoded::default();
                    c.encode_with_stats(p, Choice::Auto, &mut e, &mut st)
                        .unwrap();
                    encs.push(e);
                }
                match &reference {
                    None => reference = Some((encs, st)),
                    Some((re, rs)) => {
                        assert!(
                            re == &encs,
                            "order {order} n {} chunk {cb} {be:?}",
                            polys.len()
                        );
                        assert_eq!(rs, &st, "order {order} n {} chunk {cb} {be:?}", polys.len());
                    }
                }
            }
            let (_, st) = reference.unwrap();
            assert_eq!(st.chunks, (data.len() / cb) as u64);
            assert_eq!(st.best.iter().sum::<u64>(), st.chunks);
        }
    }
}
