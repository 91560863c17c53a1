//! The DPA-PPU codec's GF(2) arithmetic (Guo §2.4; bit order and series as in the [`super::codec`]
//! module documentation): chunk bytes to power-series words and back, carry-less
//! multiplication (software, or `pclmulqdq` when the CPU has it), the truncated products by a
//! polynomial's inverse series (scrambling) or by the sparse polynomial itself (descrambling),
//! and the per-page search for every chunk's fewest-ones polynomial that the encoder runs.

use super::words::{be64, load_words};

/// Words of the largest chunk (32 bytes).
pub(super) const MAX_WORDS: usize = 4;

/// Chunk bytes → power-series words.
#[inline(always)]
pub(super) fn load(chunk: &[u8], words: usize, out: &mut [u64]) {
    if chunk.len() == 4 {
        let v = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        out[0] = u64::from(v.reverse_bits());
        return;
    }
    for (w, o) in out.iter_mut().enumerate().take(words) {
        let b = &chunk[8 * w..8 * w + 8];
        let v = be64(b);
        *o = v.reverse_bits();
    }
}

/// Power-series words → chunk bytes, inverted when `invert`.
#[inline(always)]
pub(super) fn store(words: &[u64], out: &mut [u8], invert: bool) {
    let flip = if invert { !0u64 } else { 0 };
    if out.len() == 4 {
        let v = ((words[0] as u32).reverse_bits() ^ flip as u32).to_be_bytes();
        out.copy_from_slice(&v);
        return;
    }
    for (w, o) in out.chunks_exact_mut(8).enumerate() {
        o.copy_from_slice(&(words[w].reverse_bits() ^ flip).to_be_bytes());
    }
}

/// Software carry-less 64×64 → 128 multiply (portable fallback, tests).
#[inline]
pub(super) fn clmul_soft(a: u64, b: u64) -> (u64, u64) {
    let (mut lo, mut hi) = (0u64, 0u64);
    let mut x = b;
    while x != 0 {
        let i = x.trailing_zeros();
        lo ^= a << i;
        if i > 0 {
            hi ^= a >> (64 - i);
        }
        x &= x - 1;
    }
    (lo, hi)
}

/// s = b·q mod x^(64·words), then the last word masked.
#[inline(always)]
pub(super) fn mul_trunc_with(
    b: &[u64],
    q: &[u64],
    words: usize,
    mask: u64,
    out: &mut [u64; MAX_WORDS],
    clmul: impl Fn(u64, u64) -> (u64, u64),
) {
    *out = [0; MAX_WORDS];
    for i in 0..words {
        for j in 0..words - i {
            let (lo, hi) = clmul(b[i], q[j]);
            out[i + j] ^= lo;
            if i + j + 1 < words {
                out[i + j + 1] ^= hi;
            }
        }
    }
    out[words - 1] &= mask;
}

/// `out ^= src · x^(64·ws + bs)`, truncated to `out.len()` words (`bs` < 64).
#[inline(always)]
pub(super) fn xor_shifted(out: &mut [u64], src: &[u64], ws: usize, bs: usize) {
    for (d, o) in out.iter_mut().enumerate().skip(ws) {
        let i = d - ws;
        let mut x = src[i] << bs;
        if bs > 0 && i > 0 {
            x |= src[i - 1] >> (64 - bs);
        }
        *o ^= x;
    }
}

/// s = b·p mod x^(64·words) for a sparse p (descrambling): XOR of shifted copies.
pub(super) fn mul_poly(s: &[u64], p: u32, words: usize, mask: u64, out: &mut [u64]) {
    out[..words].fill(0);
    let mut taps = p;
    while taps != 0 {
        let k = taps.trailing_zeros() as usize;
        taps &= taps - 1;
        xor_shifted(&mut out[..words], s, k / 64, k % 64);
    }
    out[words - 1] &= mask;
}

/// The fewest-ones polynomial of every chunk of `page`: for each chunk and each polynomial t,
/// `prod(b, per_poly[t])` is the scrambled chunk; keys `(ones << 8) | t` are minimised, so ties
/// go to the lowest tag. `I` chunks are processed together per polynomial (independent
/// dependency chains). With `STATS`, `reduced[t]` counts chunks whose ones polynomial t
/// lowers and `best[t]` chunks whose best polynomial is t. Returns the sum of the minima.
#[inline(always)]
pub(super) fn scan_page<const CB: usize, const W: usize, const I: usize, const STATS: bool>(
    page: &[u8],
    per_poly: &[u64],
    stride: usize,
    tags: &mut [u8],
    reduced: &mut [u64],
    best: &mut [u64],
    prod: impl Fn(&[u64; W], &[u64]) -> [u64; W],
) -> u64 {
    let mask: u64 = if CB == 4 { 0xFFFF_FFFF } else { !0 };
    let mut total = 0u64;
    let mut groups = page.chunks_exact(CB * I);
    let mut tag_groups = tags.chunks_exact_mut(I);
    for (g, tg) in (&mut groups).zip(&mut tag_groups) {
        let mut b = [[0u64; W]; I];
        let mut base = [0u32; I];
        for i in 0..I {
            b[i] = load_words::<CB, W>(&g[i * CB..(i + 1) * CB]);
            base[i] = b[i].iter().map(|x| x.count_ones()).sum();
        }
        let mut key = [u32::MAX; I];
        for (t, q) in per_poly.chunks_exact(stride).enumerate() {
            for i in 0..I {
                let mut s = prod(&b[i], q);
                s[W - 1] &= mask;
                let ones: u32 = s.iter().map(|x| x.count_ones()).sum();
                key[i] = key[i].min((ones << 8) | t as u32);
                if STATS {
                    reduced[t] += u64::from(ones < base[i]);
                }
            }
        }
        for i in 0..I {
            tg[i] = (key[i] & 0xFF) as u8;
            total += u64::from(key[i] >> 8);
            if STATS {
                best[usize::from(tg[i])] += 1;
            }
        }
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        total += scan_page::<CB, W, 1, STATS>(
            rest,
            per_poly,
            stride,
            tag_groups.into_remainder(),
            reduced,
            best,
            prod,
        );
    }
    total
}

/// Portable s = b·q via the per-byte table `tab` of one polynomial (256 entries × `W` words)
/// and shifts: s = Σ_j tab[byte j of b] · x^(8j), truncated.
#[inline(always)]
pub(super) fn portable_mul<const CB: usize, const W: usize>(b: &[u64; W], tab: &[u64]) -> [u64; W] {
    let mut s = [0u64; W];
    for j in 0..CB {
        let v = ((b[j / 8] >> (8 * (j % 8))) & 0xFF) as usize;
        let e = &tab[v * W..(v + 1) * W];
        xor_shifted(&mut s, e, j / 8, 8 * (j % 8));
    }
    s
}

/// [`portable_mul`] for a runtime chunk size (single chunks: re-scrambling, `scramble_chunk`).
#[inline]
pub(super) fn portable_mul_dyn(
    b: &[u64; MAX_WORDS],
    tab: &[u64],
    words: usize,
    bytes: usize,
    mask: u64,
    s: &mut [u64; MAX_WORDS],
) {
    *s = [0; MAX_WORDS];
    for j in 0..bytes {
        let v = ((b[j / 8] >> (8 * (j % 8))) & 0xFF) as usize;
        let e = &tab[v * words..(v + 1) * words];
        xor_shifted(&mut s[..words], e, j / 8, 8 * (j % 8));
    }
    s[words - 1] &= mask;
}

/// Whether this CPU has the instructions of the `pclmulqdq` kernels (cached by std after the
/// first call: one atomic load).
#[inline(always)]
pub(super) fn has_clmul() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Carry-less 64×64 → 128 multiply: `pclmulqdq` when the CPU has it, else software.
#[inline(always)]
pub(super) fn clmul_hw(a: u64, b: u64) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_clmul() {
            // SAFETY: the CPU has pclmulqdq (checked just above).
            return unsafe { clmul_x86(a, b) };
        }
    }
    clmul_soft(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) unsafe fn clmul_x86(a: u64, b: u64) -> (u64, u64) {
    use std::arch::x86_64::{
        _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_cvtsi64_si128, _mm_unpackhi_epi64,
    };
    let p = _mm_clmulepi64_si128(_mm_cvtsi64_si128(a as i64), _mm_cvtsi64_si128(b as i64), 0);
    (
        _mm_cvtsi128_si64(p) as u64,
        _mm_cvtsi128_si64(_mm_unpackhi_epi64(p, p)) as u64,
    )
}

/// [`scan_page`] with carry-less multiplication by each polynomial's inverse series.
#[inline(always)]
pub(super) fn scan_clmul<const CB: usize, const W: usize, const I: usize, const STATS: bool>(
    page: &[u8],
    inv: &[u64],
    tags: &mut [u8],
    reduced: &mut [u64],
    best: &mut [u64],
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_clmul() {
            // SAFETY: the CPU has pclmulqdq and popcnt (checked just above, once per page).
            // Measured reason for `unsafe`: one pclmulqdq per (chunk, polynomial) instead of a
            // 24-operation table product, 4-40× faster (benches/dpa_codec.rs, issue 16).
            return unsafe { scan_x86::<CB, W, I, STATS>(page, inv, tags, reduced, best) };
        }
    }
    scan_page::<CB, W, I, STATS>(page, inv, W, tags, reduced, best, |b, q| {
        let mut s = [0u64; MAX_WORDS];
        mul_trunc_with(b, q, W, !0, &mut s, clmul_soft);
        let mut o = [0u64; W];
        o.copy_from_slice(&s[..W]);
        o
    })
}

/// The x86-64 body of [`scan_clmul`]: [`scan_page`] compiled with pclmulqdq and popcnt. One
/// `pclmulqdq` per (chunk word pair, polynomial): 1 for 4/8-byte chunks, 3 for 16, 10 for 32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,popcnt,sse2")]
pub(super) unsafe fn scan_x86<
    const CB: usize,
    const W: usize,
    const I: usize,
    const STATS: bool,
>(
    page: &[u8],
    inv: &[u64],
    tags: &mut [u8],
    reduced: &mut [u64],
    best: &mut [u64],
) -> u64 {
    use std::arch::x86_64::{
        _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_cvtsi64_si128, _mm_unpackhi_epi64,
    };
    scan_page::<CB, W, I, STATS>(page, inv, W, tags, reduced, best, |b, q| {
        let mut s = [0u64; W];
        for j in 0..W {
            let qv = _mm_cvtsi64_si128(q[j] as i64);
            for i in 0..W - j {
                let p = _mm_clmulepi64_si128(_mm_cvtsi64_si128(b[i] as i64), qv, 0);
                s[i + j] ^= _mm_cvtsi128_si64(p) as u64;
                if i + j + 1 < W {
                    s[i + j + 1] ^= _mm_cvtsi128_si64(_mm_unpackhi_epi64(p, p)) as u64;
                }
            }
        }
        s
    })
}
