//! Page bytes as GF(2) power-series words: the loads the portable codec, the AVX-512 path and
//! the analysis share (kept apart from all of them, so none imports another for them).

/// The first 8 bytes of `b` as a big-endian word (one load and a byte swap).
#[inline(always)]
pub(crate) fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// The first 8 bytes of `b` as a little-endian word (one load).
#[inline(always)]
pub(crate) fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Chunk bytes → `W` power-series words (`CB` = 4 fills the low half of one word).
#[inline(always)]
pub(crate) fn load_words<const CB: usize, const W: usize>(chunk: &[u8]) -> [u64; W] {
    let mut out = [0u64; W];
    if CB == 4 {
        let v = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        out[0] = u64::from(v.reverse_bits());
    } else {
        for (o, b) in out.iter_mut().zip(chunk.chunks_exact(8)) {
            *o = be64(b).reverse_bits();
        }
    }
    out
}
