//! Path A of the DPA-PPU codec (Guo §2.4, after \[32\]): byte de-correlation
//! `y_0 = x_0, y_i = x_i ⊕ x_(i−1)` and the ones counts the path selection compares.

use super::words::le64;

/// Ones of the page after byte de-correlation `y_0 = x_0, y_i = x_i ⊕ x_(i−1)` (path A; Guo
/// §2.4 after \[32\]).
#[inline(always)]
pub fn decorrelated_ones(page: &[u8]) -> u64 {
    let mut ones = 0u64;
    let mut prev = 0u64;
    let mut words = page.chunks_exact(8);
    for c in &mut words {
        let w = le64(c);
        ones += u64::from((w ^ ((w << 8) | prev)).count_ones());
        prev = w >> 56;
    }
    let mut prev = prev as u8;
    for &b in words.remainder() {
        ones += u64::from((b ^ prev).count_ones());
        prev = b;
    }
    ones
}

/// Write the de-correlated page (inverted when `invert`) into `out` (same length).
#[inline(always)]
pub fn decorrelate_into(page: &[u8], out: &mut [u8], invert: bool) {
    let flip = if invert { 0xFF } else { 0 };
    let mut prev = 0u8;
    for (o, &x) in out.iter_mut().zip(page) {
        *o = (x ^ prev) ^ flip;
        prev = x;
    }
}

/// Ones in `data`.
pub fn ones(data: &[u8]) -> u64 {
    let mut n = 0u64;
    let mut words = data.chunks_exact(8);
    for c in &mut words {
        n += u64::from(le64(c).count_ones());
    }
    n + words
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>()
}
