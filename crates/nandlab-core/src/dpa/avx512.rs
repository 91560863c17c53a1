//! AVX-512 kernel of the DPA-PPU scrambler search: eight polynomials per instruction
//! (`vpclmulqdq` on 512-bit registers, `vpopcntq`, `vpminuq`).
//!
//! Built only with rustc ≥ 1.89 (where these intrinsics are stable; the crate's MSRV is lower)
//! and used only when the CPU reports avx512f, vpclmulqdq and avx512vpopcntdq. Measured reason
//! for the `unsafe`: the 64-polynomial search is the codec's whole cost; this kernel does it in
//! 8 vector groups instead of 64 scalar carry-less multiplies (see `benches/dpa_codec.rs`).
//! The result is bit-identical to the scalar kernels (tested in `tests/dpa_codec.rs`).

/// Whether this build has the kernel and the CPU can run it.
#[rustversion::since(1.89)]
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("vpclmulqdq")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this build has the kernel and the CPU can run it (not with this rustc).
#[rustversion::before(1.89)]
pub fn available() -> bool {
    false
}

/// Polynomials padded to a multiple of 8, structure of arrays: `soa[j * n8 + t]` = word j of
/// polynomial t's inverse series; padding lanes repeat polynomial 0 (same key as tag 0, so they
/// never change the minimum). Returns (soa, n8).
pub fn layout(inv: &[u64], words: usize) -> (Vec<u64>, usize) {
    let n = inv.len() / words;
    let n8 = n.div_ceil(8) * 8;
    let mut soa = vec![0u64; words * n8];
    for j in 0..words {
        for t in 0..n8 {
            let src = if t < n { t } else { 0 };
            soa[j * n8 + t] = inv[src * words + j];
        }
    }
    (soa, n8)
}

/// Best tag of every chunk (see `codec::scan_page`): returns the sum of the minima.
/// `n` polynomials, padded to `n8`; `I` chunks (1 or 2) share each polynomial load and their
/// final reductions.
///
/// # Safety
/// The caller must have checked [`available`].
#[rustversion::since(1.89)]
#[allow(clippy::incompatible_msrv)]
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,avx512vpopcntdq")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn scan<const CB: usize, const W: usize, const I: usize, const STATS: bool>(
    page: &[u8],
    soa: &[u64],
    n: usize,
    n8: usize,
    tags: &mut [u8],
    reduced: &mut [u64],
    best: &mut [u64],
) -> u64 {
    use std::arch::x86_64::{
        _mm512_add_epi64, _mm512_castsi512_si128, _mm512_clmulepi64_epi128,
        _mm512_cmplt_epu64_mask, _mm512_loadu_epi64, _mm512_mask_add_epi64, _mm512_min_epu64,
        _mm512_or_si512, _mm512_popcnt_epi64, _mm512_reduce_min_epu64, _mm512_set1_epi64,
        _mm512_setzero_si512, _mm512_shuffle_i64x2, _mm512_slli_epi64, _mm512_storeu_epi64,
        _mm512_unpackhi_epi64, _mm512_unpacklo_epi64, _mm512_xor_si512, _mm_cvtsi128_si64,
        _mm_unpackhi_epi64,
    };
    let groups = n8 / 8;
    // Per-group reduce counters (STATS only), at most 32 groups of 8 (256 polynomials).
    let mut counts = [_mm512_setzero_si512(); 32];
    let one = _mm512_set1_epi64(1);
    // Tag of each lane; padding lanes (t ≥ n) repeat polynomial 0, so they get tag 0 and tie
    // with it.
    let mut tagvs = [_mm512_setzero_si512(); 32];
    for (g, v) in tagvs.iter_mut().enumerate().take(groups) {
        let mut lanes = [0i64; 8];
        for (k, l) in lanes.iter_mut().enumerate() {
            let t = 8 * g + k;
            *l = if t < n { t as i64 } else { 0 };
        }
        *v = _mm512_loadu_epi64(lanes.as_ptr());
    }
    let mut total = 0u64;
    let mut chunk_groups = page.chunks_exact(CB * I);
    let mut tag_groups = tags.chunks_exact_mut(I);
    for (chunks, tg) in (&mut chunk_groups).zip(&mut tag_groups) {
        let mut bv = [[_mm512_setzero_si512(); W]; I];
        let mut basev = [_mm512_setzero_si512(); I];
        // Two 4-byte chunks come out of one 8-byte load and bit reversal.
        let pair = if CB == 4 && I == 2 {
            super::words::load_words::<8, 1>(chunks)[0]
        } else {
            0
        };
        for c in 0..I {
            let mut b = if CB == 4 && I == 2 {
                let mut w = [0u64; W];
                w[0] = (pair >> (32 * c)) & 0xFFFF_FFFF;
                w
            } else {
                super::words::load_words::<CB, W>(&chunks[c * CB..(c + 1) * CB])
            };
            let base: u32 = b.iter().map(|x| x.count_ones()).sum();
            if CB == 4 {
                // The 32 product bits we need land in bits 32..63 of the low qword, zeros
                // below: no mask needed before the popcount.
                b[0] <<= 32;
            }
            for i in 0..W {
                bv[c][i] = _mm512_set1_epi64(b[i] as i64);
            }
            basev[c] = _mm512_set1_epi64(i64::from(base));
        }
        let mut bestv = [_mm512_set1_epi64(-1); I];
        for g in 0..groups {
            let mut s = [[_mm512_setzero_si512(); W]; I];
            for j in 0..W {
                let q = _mm512_loadu_epi64(soa.as_ptr().add(j * n8 + 8 * g).cast());
                for c in 0..I {
                    for i in 0..W - j {
                        // Even polynomials (low qword of each 128-bit lane) and odd (high).
                        let pe = _mm512_clmulepi64_epi128(q, bv[c][i], 0x00);
                        let po = _mm512_clmulepi64_epi128(q, bv[c][i], 0x01);
                        s[c][i + j] = _mm512_xor_si512(s[c][i + j], _mm512_unpacklo_epi64(pe, po));
                        if i + j + 1 < W {
                            s[c][i + j + 1] =
                                _mm512_xor_si512(s[c][i + j + 1], _mm512_unpackhi_epi64(pe, po));
                        }
                    }
                }
            }
            for c in 0..I {
                let mut ones = _mm512_popcnt_epi64(s[c][0]);
                for v in s[c].iter().skip(1) {
                    ones = _mm512_add_epi64(ones, _mm512_popcnt_epi64(*v));
                }
                let key = _mm512_or_si512(_mm512_slli_epi64::<8>(ones), tagvs[g]);
                bestv[c] = _mm512_min_epu64(bestv[c], key);
                if STATS {
                    let m = _mm512_cmplt_epu64_mask(ones, basev[c]);
                    counts[g] = _mm512_mask_add_epi64(counts[g], m, counts[g], one);
                }
            }
        }
        let mut keys = [0u64; I];
        if I == 2 {
            // Both chunks' minima at once: pairs of qwords, then pairs and quads of lanes.
            let (a, b) = (bestv[0], bestv[I - 1]);
            let r = _mm512_min_epu64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
            let r = _mm512_min_epu64(r, _mm512_shuffle_i64x2::<0xB1>(r, r));
            let r = _mm512_min_epu64(r, _mm512_shuffle_i64x2::<0x4E>(r, r));
            let x = _mm512_castsi512_si128(r);
            keys[0] = _mm_cvtsi128_si64(x) as u64;
            keys[I - 1] = _mm_cvtsi128_si64(_mm_unpackhi_epi64(x, x)) as u64;
        } else {
            for c in 0..I {
                keys[c] = _mm512_reduce_min_epu64(bestv[c]);
            }
        }
        for c in 0..I {
            tg[c] = (keys[c] & 0xFF) as u8;
            total += keys[c] >> 8;
            if STATS {
                best[usize::from(tg[c])] += 1;
            }
        }
    }
    if STATS {
        let mut lanes = [0u64; 8];
        for (g, cnt) in counts.iter().enumerate().take(groups) {
            _mm512_storeu_epi64(lanes.as_mut_ptr().cast(), *cnt);
            for (k, &c) in lanes.iter().enumerate() {
                if let Some(r) = reduced.get_mut(8 * g + k) {
                    if 8 * g + k < n {
                        *r += c;
                    }
                }
            }
        }
    }
    let rest = chunk_groups.remainder();
    if !rest.is_empty() {
        total +=
            scan::<CB, W, 1, STATS>(rest, soa, n, n8, tag_groups.into_remainder(), reduced, best);
    }
    total
}

/// [`scan`] behind the runtime check (the codec only selects the AVX-512 backend when
/// [`available`] holds).
#[rustversion::since(1.89)]
#[allow(clippy::too_many_arguments)]
pub fn scan_checked<const CB: usize, const W: usize, const STATS: bool>(
    page: &[u8],
    soa: &[u64],
    n: usize,
    n8: usize,
    tags: &mut [u8],
    reduced: &mut [u64],
    best: &mut [u64],
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        assert!(
            available(),
            "AVX-512 DPA kernel selected on a CPU without it"
        );
        // SAFETY: the CPU features `scan` is compiled for were just checked (and were checked
        // when the codec chose this backend).
        if CB <= 8 {
            unsafe { scan::<CB, W, 2, STATS>(page, soa, n, n8, tags, reduced, best) }
        } else {
            unsafe { scan::<CB, W, 1, STATS>(page, soa, n, n8, tags, reduced, best) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (page, soa, n, n8, tags, reduced, best);
        unreachable!("AVX-512 DPA kernel on a non-x86-64 target")
    }
}

/// Stub for compilers without the AVX-512 intrinsics: [`available`] is false there, so no
/// codec ever selects this backend.
#[rustversion::before(1.89)]
#[allow(clippy::too_many_arguments)]
pub fn scan_checked<const CB: usize, const W: usize, const STATS: bool>(
    _page: &[u8],
    _soa: &[u64],
    _n: usize,
    _n8: usize,
    _tags: &mut [u8],
    _reduced: &mut [u64],
    _best: &mut [u64],
) -> u64 {
    unreachable!("AVX-512 DPA kernel not built with this rustc")
}
