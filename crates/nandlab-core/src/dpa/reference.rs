//! The bit-serial reference scrambler and descrambler of spec §1.2 (Guo §2.4: "modulo 2
//! division … LFSR"), bit by bit as written there. Slow; the fast kernels of the codec are
//! tested against them (bit order as in the [`super::codec`] module documentation).

use super::poly::degree;

/// Bit `i` of `v`, MSB-first per byte.
fn bit(v: &[u8], i: usize) -> u8 {
    (v[i / 8] >> (7 - i % 8)) & 1
}

/// `out_i = in_i ⊕ ⊕_{k∈K, k≤i} x_(i−k)` over the chunk's bits with K the taps of `p`
/// (`x^k ∈ p`, 1 ≤ k ≤ deg p): `x` is the output itself when `feedback` (the LFSR, scrambling),
/// else the input (the FIR inverse, descrambling).
fn lfsr_reference(chunk: &[u8], p: u32, feedback: bool) -> Vec<u8> {
    let n = chunk.len() * 8;
    let d = degree(p).unwrap_or(0) as usize;
    let taps: Vec<usize> = (1..=d).filter(|&k| (p >> k) & 1 == 1).collect();
    let mut out = vec![0u8; chunk.len()];
    for i in 0..n {
        let mut s = bit(chunk, i);
        for &k in &taps {
            if k <= i {
                s ^= if feedback {
                    bit(&out, i - k)
                } else {
                    bit(chunk, i - k)
                };
            }
        }
        out[i / 8] |= s << (7 - i % 8);
    }
    out
}

/// The literal bit-serial scrambler of spec §1.2: `s_i = b_i ⊕ ⊕_{k∈K, k≤i} s_(i−k)` over the
/// chunk's bits (MSB-first per byte), register zeroed per chunk. Slow; the reference the fast
/// kernels are tested against.
pub fn scramble_reference(chunk: &[u8], p: u32) -> Vec<u8> {
    lfsr_reference(chunk, p, true)
}

/// The literal bit-serial descrambler: `b_i = s_i ⊕ ⊕_{k∈K, k≤i} s_(i−k)`.
pub fn descramble_reference(chunk: &[u8], p: u32) -> Vec<u8> {
    lfsr_reference(chunk, p, false)
}
