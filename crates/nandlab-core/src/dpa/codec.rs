//! The DPA-PPU page codec (Guo §2.4, Fig. 7): de-correlation (path A) or per-chunk scrambling
//! with the best of N polynomials (path B), then inversion of the whole page.
//!
//! **Bit order.** A chunk's bits b_0, b_1, … are taken MSB-first per byte (b_0 = bit 7 of byte 0).
//! Internally a chunk is a power series b(x) = Σ b_i x^i held in 64-bit words (bit i of word w
//! is the coefficient of x^(64w+i)).
//!
//! **Scrambler** (spec §1.2; Guo says "modulo 2 division … LFSR"): with K_t = {k ∈ 1..=order :
//! x^k ∈ p_t} and a register zeroed at the start of each chunk,
//! `s_i = b_i ⊕ ⊕_{k ∈ K_t, k ≤ i} s_(i−k)`, i.e. s(x) = b(x) / p_t(x) as a power series,
//! truncated to the chunk. Descrambling is the FIR inverse `b_i = s_i ⊕ ⊕ s_(i−k)`, i.e.
//! b(x) = s(x)·p_t(x). A chunk holding p_t's own pattern (b_i = coefficient of x^i) scrambles to
//! a single 1: the "overlap" Guo describes. [`scramble_reference`] is that recurrence bit by bit;
//! the fast paths multiply by the precomputed inverse series q_t = 1/p_t mod x^(8c) (carry-less
//! multiplication, `pclmulqdq` on x86-64, byte tables elsewhere) and are tested against it.
//!
//! **Selection** (Fig. 7): each chunk takes the tag of its fewest-ones scrambling (ties to the
//! lowest tag); the page takes path A (correlation bit 1, no tags) when the de-correlated page
//! has no more ones than the sum of the chunk minima (ties go to A, the reading of spec §1.2),
//! else path B (correlation bit 0, one tag per chunk). The stored page is the inversion of the
//! selected output, so it is mostly 1s (erased level L0 under Guo's level map).
//!
//! The encoder allocates nothing per page once its [`Encoded`] buffers have grown to the page
//! size.

use super::poly::{degree, polynomial_set, MAX_POLYNOMIALS};
use super::DpaError;

/// Chunk sizes of Guo Fig. 10(c), bytes.
pub const CHUNK_SIZES: [usize; 4] = [4, 8, 16, 32];
/// Default chunk size (Guo §2.6: 8 B).
pub const DEFAULT_CHUNK_BYTES: usize = 8;
/// Page size of Guo Table 3 (4 KB data + 218 B OOB), bytes.
pub const DEFAULT_PAGE_BYTES: usize = 4096;
const MAX_WORDS: usize = 4;

/// How the encoder picks the path of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Guo Fig. 7: fewer ones wins, ties to de-correlation.
    Auto,
    /// Always path A (de-correlation).
    Decorrelate,
    /// Always path B with each chunk's best polynomial.
    Scramble,
    /// Path B with this tag for every chunk (for round-trip tests of each polynomial).
    Tag(u8),
}

/// Which multiplication kernel a codec uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Carry-less multiply instruction (x86-64 `pclmulqdq` + `popcnt`).
    Clmul,
    /// Byte-indexed tables of each polynomial's inverse series (any CPU).
    Portable,
}

impl Backend {
    /// The fastest backend this CPU supports.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("pclmulqdq")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                return Backend::Clmul;
            }
        }
        Backend::Portable
    }

    /// Short name (`clmul` / `portable`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Clmul => "clmul",
            Backend::Portable => "portable",
        }
    }
}

/// One encoded page: what is programmed into the page and what must be stored beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoded {
    /// The stored (inverted) page, same length as the input.
    pub stored: Vec<u8>,
    /// Correlation bit: `true` = path A (no tags), `false` = path B.
    pub correlated: bool,
    /// One polynomial tag per chunk (path B); empty for path A.
    pub tags: Vec<u8>,
    /// Ones of the de-correlated page (path A output before inversion).
    pub ones_decorrelated: u64,
    /// Sum over chunks of the fewest ones any polynomial gives (path B output before
    /// inversion). 0 when the choice was [`Choice::Decorrelate`].
    pub ones_scrambled: u64,
}

/// Per-polynomial statistics gathered while encoding (Guo Table 5 and the tag histogram).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagStats {
    /// Chunks seen.
    pub chunks: u64,
    /// `reduced[t]`: chunks whose ones polynomial t strictly reduces (Table 5's numerator).
    pub reduced: Vec<u64>,
    /// `best[t]`: chunks whose fewest-ones polynomial is t (over every page, whichever path
    /// the page then takes).
    pub best: Vec<u64>,
}

impl TagStats {
    /// Zeroed statistics for `n` polynomials.
    pub fn new(n: usize) -> Self {
        TagStats {
            chunks: 0,
            reduced: vec![0; n],
            best: vec![0; n],
        }
    }

    /// Add `other` (same polynomial count) into `self`.
    pub fn merge(&mut self, other: &TagStats) {
        self.chunks += other.chunks;
        for (a, b) in self.reduced.iter_mut().zip(&other.reduced) {
            *a += b;
        }
        for (a, b) in self.best.iter_mut().zip(&other.best) {
            *a += b;
        }
    }
}

/// A DPA-PPU codec for one chunk size and polynomial set.
#[derive(Clone, Debug)]
pub struct Codec {
    chunk_bytes: usize,
    words: usize,
    /// Mask of the valid bits of the last word of a chunk.
    mask: u64,
    polys: Vec<u32>,
    order: u32,
    /// Inverse series q_t = 1/p_t mod x^(8c), `words` words per polynomial.
    inv: Vec<u64>,
    backend: Backend,
    /// Portable backend: for each polynomial and byte value v (bit k = x^k), v·q_t truncated,
    /// `words` words per entry (256 entries per polynomial).
    tables: Vec<u64>,
}

/// The literal bit-serial scrambler of spec §1.2: `s_i = b_i ⊕ ⊕_{k∈K, k≤i} s_(i−k)` over the
/// chunk's bits (MSB-first per byte), register zeroed per chunk. Slow; the reference the fast
/// kernels are tested against.
pub fn scramble_reference(chunk: &[u8], p: u32) -> Vec<u8> {
    let n = chunk.len() * 8;
    let bit = |v: &[u8], i: usize| (v[i / 8] >> (7 - i % 8)) & 1;
    let d = degree(p).unwrap_or(0) as usize;
    let taps: Vec<usize> = (1..=d).filter(|&k| (p >> k) & 1 == 1).collect();
    let mut out = vec![0u8; chunk.len()];
    for i in 0..n {
        let mut s = bit(chunk, i);
        for &k in &taps {
            if k <= i {
                s ^= bit(&out, i - k);
            }
        }
        out[i / 8] |= s << (7 - i % 8);
    }
    out
}

/// The literal bit-serial descrambler: `b_i = s_i ⊕ ⊕_{k∈K, k≤i} s_(i−k)`.
pub fn descramble_reference(chunk: &[u8], p: u32) -> Vec<u8> {
    let n = chunk.len() * 8;
    let bit = |v: &[u8], i: usize| (v[i / 8] >> (7 - i % 8)) & 1;
    let d = degree(p).unwrap_or(0) as usize;
    let taps: Vec<usize> = (1..=d).filter(|&k| (p >> k) & 1 == 1).collect();
    let mut out = vec![0u8; chunk.len()];
    for i in 0..n {
        let mut b = bit(chunk, i);
        for &k in &taps {
            if k <= i {
                b ^= bit(chunk, i - k);
            }
        }
        out[i / 8] |= b << (7 - i % 8);
    }
    out
}

/// Chunk bytes → power-series words.
#[inline(always)]
fn load(chunk: &[u8], words: usize, out: &mut [u64]) {
    if chunk.len() == 4 {
        let v = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        out[0] = u64::from(v.reverse_bits());
        return;
    }
    for (w, o) in out.iter_mut().enumerate().take(words) {
        let b = &chunk[8 * w..8 * w + 8];
        let v = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        *o = v.reverse_bits();
    }
}

/// Power-series words → chunk bytes, inverted when `invert`.
#[inline(always)]
fn store(words: &[u64], out: &mut [u8], invert: bool) {
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
fn clmul_soft(a: u64, b: u64) -> (u64, u64) {
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
fn mul_trunc_with(
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

/// s = b·p mod x^(64·words) for a sparse p (descrambling): XOR of shifted copies.
fn mul_poly(s: &[u64], p: u32, words: usize, mask: u64, out: &mut [u64]) {
    out[..words].fill(0);
    let mut taps = p;
    while taps != 0 {
        let k = taps.trailing_zeros() as usize;
        taps &= taps - 1;
        let (ws, bs) = (k / 64, k % 64);
        for dst in ws..words {
            let src = dst - ws;
            let mut v = s[src] << bs;
            if bs > 0 && src > 0 {
                v |= s[src - 1] >> (64 - bs);
            }
            out[dst] ^= v;
        }
    }
    out[words - 1] &= mask;
}

impl Codec {
    /// A codec for `chunk_bytes` ∈ {4, 8, 16, 32} over the polynomial set `polys` (degree
    /// 1..=16, constant term 1, at most 256), with the fastest backend of this CPU.
    ///
    /// # Errors
    /// [`DpaError::Param`] naming the chunk size or the offending polynomial.
    pub fn new(chunk_bytes: usize, polys: &[u32]) -> Result<Self, DpaError> {
        Self::with_backend(chunk_bytes, polys, Backend::detect())
    }

    /// The codec Guo's experiments use by default at `chunk_bytes`: Table 4's 64 order-16
    /// polynomials.
    ///
    /// # Errors
    /// [`DpaError::Param`] for a chunk size outside {4, 8, 16, 32}.
    pub fn guo(chunk_bytes: usize) -> Result<Self, DpaError> {
        Self::new(chunk_bytes, &polynomial_set(16, None)?)
    }

    /// As [`Codec::new`] with an explicit backend. [`Backend::Clmul`] on a CPU without it is an
    /// error naming [`Backend::Portable`].
    ///
    /// # Errors
    /// [`DpaError::Param`].
    pub fn with_backend(
        chunk_bytes: usize,
        polys: &[u32],
        backend: Backend,
    ) -> Result<Self, DpaError> {
        if !CHUNK_SIZES.contains(&chunk_bytes) {
            return Err(DpaError::Param {
                name: "chunk_bytes",
                value: chunk_bytes.to_string(),
                allowed: "4, 8, 16 or 32 (Guo Fig. 10(c))".into(),
            });
        }
        if polys.is_empty() || polys.len() > MAX_POLYNOMIALS {
            return Err(DpaError::Param {
                name: "polynomials",
                value: polys.len().to_string(),
                allowed: format!("1..={MAX_POLYNOMIALS} polynomials"),
            });
        }
        let mut order = 0;
        for &p in polys {
            let d = degree(p).unwrap_or(0);
            if !(1..=16).contains(&d) || p & 1 == 0 {
                return Err(DpaError::Param {
                    name: "polynomial",
                    value: format!("{p:#x}"),
                    allowed: "degree 1..=16 with constant term 1".into(),
                });
            }
            order = order.max(d);
        }
        if backend == Backend::Clmul && Backend::detect() != Backend::Clmul {
            return Err(DpaError::Param {
                name: "backend",
                value: "clmul".into(),
                allowed: "portable (this CPU has no pclmulqdq/popcnt)".into(),
            });
        }
        let words = chunk_bytes.div_ceil(8);
        let bits = 8 * chunk_bytes;
        let mask = if bits % 64 == 0 {
            !0u64
        } else {
            (1u64 << (bits % 64)) - 1
        };
        let mut inv = Vec::with_capacity(polys.len() * words);
        let mut impulse = vec![0u8; chunk_bytes];
        impulse[0] = 0x80;
        let mut w = [0u64; MAX_WORDS];
        for &p in polys {
            load(&scramble_reference(&impulse, p), words, &mut w);
            inv.extend_from_slice(&w[..words]);
        }
        let mut codec = Codec {
            chunk_bytes,
            words,
            mask,
            polys: polys.to_vec(),
            order,
            inv,
            backend,
            tables: Vec::new(),
        };
        if backend == Backend::Portable {
            codec.build_tables();
        }
        Ok(codec)
    }

    fn build_tables(&mut self) {
        let w = self.words;
        let mut t = vec![0u64; self.polys.len() * 256 * w];
        let mut out = [0u64; MAX_WORDS];
        for p in 0..self.polys.len() {
            let q = &self.inv[p * w..(p + 1) * w];
            for v in 0..256u64 {
                let mut b = [0u64; MAX_WORDS];
                b[0] = v;
                mul_trunc_with(&b, q, w, self.mask, &mut out, clmul_soft);
                let at = (p * 256 + v as usize) * w;
                t[at..at + w].copy_from_slice(&out[..w]);
            }
        }
        self.tables = t;
    }

    /// Chunk size, bytes.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }
    /// The polynomial set (tag t = `polynomials()[t]`).
    pub fn polynomials(&self) -> &[u32] {
        &self.polys
    }
    /// Highest polynomial degree in the set.
    pub fn order(&self) -> u32 {
        self.order
    }
    /// The multiplication kernel in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Scramble one chunk with polynomial `tag` (fast path); `out` has the chunk's length.
    ///
    /// # Errors
    /// [`DpaError::Param`] for a wrong chunk length or a tag outside the set.
    pub fn scramble_chunk(&self, chunk: &[u8], tag: u8, out: &mut [u8]) -> Result<(), DpaError> {
        self.check_chunk(chunk, out, tag)?;
        let mut b = [0u64; MAX_WORDS];
        load(chunk, self.words, &mut b);
        let mut s = [0u64; MAX_WORDS];
        self.mul_inv(&b, usize::from(tag), &mut s);
        store(&s[..self.words], out, false);
        Ok(())
    }

    /// Descramble one chunk scrambled with polynomial `tag`.
    ///
    /// # Errors
    /// [`DpaError::Param`] for a wrong chunk length or a tag outside the set.
    pub fn descramble_chunk(&self, chunk: &[u8], tag: u8, out: &mut [u8]) -> Result<(), DpaError> {
        self.check_chunk(chunk, out, tag)?;
        let mut s = [0u64; MAX_WORDS];
        load(chunk, self.words, &mut s);
        let mut b = [0u64; MAX_WORDS];
        mul_poly(
            &s,
            self.polys[usize::from(tag)],
            self.words,
            self.mask,
            &mut b,
        );
        store(&b[..self.words], out, false);
        Ok(())
    }

    fn check_chunk(&self, chunk: &[u8], out: &[u8], tag: u8) -> Result<(), DpaError> {
        if chunk.len() != self.chunk_bytes || out.len() != self.chunk_bytes {
            return Err(DpaError::Param {
                name: "chunk length",
                value: chunk.len().to_string(),
                allowed: format!("{} bytes (input and output)", self.chunk_bytes),
            });
        }
        if usize::from(tag) >= self.polys.len() {
            return Err(DpaError::Param {
                name: "tag",
                value: tag.to_string(),
                allowed: format!("0..{}", self.polys.len()),
            });
        }
        Ok(())
    }

    /// s = b · q_tag (truncated), with the codec's backend.
    #[inline]
    fn mul_inv(&self, b: &[u64; MAX_WORDS], tag: usize, s: &mut [u64; MAX_WORDS]) {
        let w = self.words;
        let q = &self.inv[tag * w..(tag + 1) * w];
        match self.backend {
            Backend::Clmul => mul_trunc_with(b, q, w, self.mask, s, clmul_hw),
            Backend::Portable => {
                let t = &self.tables[tag * 256 * w..(tag + 1) * 256 * w];
                portable_mul(b, t, w, self.chunk_bytes, self.mask, s);
            }
        }
    }

    fn check_page(&self, len: usize) -> Result<(), DpaError> {
        if len == 0 || len % self.chunk_bytes != 0 {
            return Err(DpaError::Param {
                name: "page length",
                value: len.to_string(),
                allowed: format!("a positive multiple of the chunk size {}", self.chunk_bytes),
            });
        }
        Ok(())
    }

    /// Encode one page (any positive multiple of the chunk size; Guo: 4096 B) into `out`,
    /// reusing its buffers.
    ///
    /// # Errors
    /// [`DpaError::Param`] for a bad page length or a tag outside the set.
    pub fn encode(&self, page: &[u8], choice: Choice, out: &mut Encoded) -> Result<(), DpaError> {
        self.encode_impl::<false>(page, choice, out, None)
    }

    /// [`Codec::encode`] that also counts, per polynomial, the chunks it would reduce and the
    /// chunks it is best for (Guo Table 5) into `stats` (sized for this codec's polynomials).
    ///
    /// # Errors
    /// As [`Codec::encode`]; [`DpaError::Param`] when `stats` has the wrong size.
    pub fn encode_with_stats(
        &self,
        page: &[u8],
        choice: Choice,
        out: &mut Encoded,
        stats: &mut TagStats,
    ) -> Result<(), DpaError> {
        if stats.reduced.len() != self.polys.len() || stats.best.len() != self.polys.len() {
            return Err(DpaError::Param {
                name: "stats",
                value: stats.reduced.len().to_string(),
                allowed: format!("{} polynomials", self.polys.len()),
            });
        }
        self.encode_impl::<true>(page, choice, out, Some(stats))
    }

    fn encode_impl<const STATS: bool>(
        &self,
        page: &[u8],
        choice: Choice,
        out: &mut Encoded,
        stats: Option<&mut TagStats>,
    ) -> Result<(), DpaError> {
        self.check_page(page.len())?;
        if let Choice::Tag(t) = choice {
            if usize::from(t) >= self.polys.len() {
                return Err(DpaError::Param {
                    name: "tag",
                    value: t.to_string(),
                    allowed: format!("0..{}", self.polys.len()),
                });
            }
        }
        out.stored.resize(page.len(), 0);
        out.ones_decorrelated = decorrelated_ones(page);
        out.ones_scrambled = 0;
        let n_chunks = page.len() / self.chunk_bytes;
        out.tags.clear();
        if choice != Choice::Decorrelate {
            out.tags.resize(n_chunks, 0);
            match choice {
                Choice::Tag(t) => out.tags.fill(t),
                _ => {
                    out.ones_scrambled = self.best_tags::<STATS>(page, &mut out.tags, stats);
                }
            }
        }
        out.correlated = match choice {
            Choice::Auto => out.ones_decorrelated <= out.ones_scrambled,
            Choice::Decorrelate => true,
            Choice::Scramble | Choice::Tag(_) => false,
        };
        if out.correlated {
            out.tags.clear();
            decorrelate_into(page, &mut out.stored, true);
        } else {
            let w = self.words;
            let mut b = [0u64; MAX_WORDS];
            let mut s = [0u64; MAX_WORDS];
            let mut ones = 0u64;
            for ((chunk, dst), &tag) in page
                .chunks_exact(self.chunk_bytes)
                .zip(out.stored.chunks_exact_mut(self.chunk_bytes))
                .zip(&out.tags)
            {
                load(chunk, w, &mut b);
                self.mul_inv(&b, usize::from(tag), &mut s);
                ones += s[..w]
                    .iter()
                    .map(|x| u64::from(x.count_ones()))
                    .sum::<u64>();
                store(&s[..w], dst, true);
            }
            if let Choice::Tag(_) = choice {
                out.ones_scrambled = ones;
            }
        }
        Ok(())
    }

    /// Best tag of every chunk of `page` into `tags`; returns the sum of the minima.
    fn best_tags<const STATS: bool>(
        &self,
        page: &[u8],
        tags: &mut [u8],
        mut stats: Option<&mut TagStats>,
    ) -> u64 {
        let mut total = 0u64;
        let w = self.words;
        let mut b = [0u64; MAX_WORDS];
        let np = self.polys.len();
        for (chunk, tag) in page.chunks_exact(self.chunk_bytes).zip(tags.iter_mut()) {
            load(chunk, w, &mut b);
            let base = b[..w].iter().map(|x| x.count_ones()).sum::<u32>();
            let reduced: &mut [u64] = match (STATS, stats.as_deref_mut()) {
                (true, Some(st)) => &mut st.reduced,
                _ => &mut [],
            };
            let key = match (self.backend, w) {
                (Backend::Clmul, 1) => {
                    scan_clmul::<1, STATS>(&b, &self.inv, self.mask, base, reduced)
                }
                (Backend::Clmul, 2) => {
                    scan_clmul::<2, STATS>(&b, &self.inv, self.mask, base, reduced)
                }
                (Backend::Clmul, _) => {
                    scan_clmul::<4, STATS>(&b, &self.inv, self.mask, base, reduced)
                }
                (Backend::Portable, _) => {
                    let mut best = u32::MAX;
                    let mut s = [0u64; MAX_WORDS];
                    for t in 0..np {
                        let tab = &self.tables[t * 256 * w..(t + 1) * 256 * w];
                        portable_mul(&b, tab, w, self.chunk_bytes, self.mask, &mut s);
                        let ones = s[..w].iter().map(|x| x.count_ones()).sum::<u32>();
                        best = best.min((ones << 8) | t as u32);
                        if STATS {
                            reduced[t] += u64::from(ones < base);
                        }
                    }
                    best
                }
            };
            *tag = (key & 0xFF) as u8;
            total += u64::from(key >> 8);
            if STATS {
                if let Some(st) = stats.as_deref_mut() {
                    st.chunks += 1;
                    st.best[usize::from(*tag)] += 1;
                }
            }
        }
        total
    }

    /// Decode a stored page: invert, then re-correlate (`correlated`) or descramble each chunk
    /// with its tag.
    ///
    /// # Errors
    /// [`DpaError::Param`] for a bad length, a wrong tag count or a tag outside the set.
    pub fn decode(
        &self,
        stored: &[u8],
        correlated: bool,
        tags: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), DpaError> {
        self.check_page(stored.len())?;
        out.resize(stored.len(), 0);
        if correlated {
            let mut prev = 0u8;
            for (o, &s) in out.iter_mut().zip(stored) {
                prev ^= !s;
                *o = prev;
            }
            return Ok(());
        }
        let n_chunks = stored.len() / self.chunk_bytes;
        if tags.len() != n_chunks {
            return Err(DpaError::Param {
                name: "tags",
                value: tags.len().to_string(),
                allowed: format!("{n_chunks} (one per chunk)"),
            });
        }
        if let Some(&t) = tags.iter().find(|&&t| usize::from(t) >= self.polys.len()) {
            return Err(DpaError::Param {
                name: "tag",
                value: t.to_string(),
                allowed: format!("0..{}", self.polys.len()),
            });
        }
        let w = self.words;
        let mut s = [0u64; MAX_WORDS];
        let mut b = [0u64; MAX_WORDS];
        let mut inv_chunk = [0u8; 32];
        for ((chunk, dst), &tag) in stored
            .chunks_exact(self.chunk_bytes)
            .zip(out.chunks_exact_mut(self.chunk_bytes))
            .zip(tags)
        {
            for (d, &c) in inv_chunk.iter_mut().zip(chunk) {
                *d = !c;
            }
            load(&inv_chunk[..self.chunk_bytes], w, &mut s);
            mul_poly(&s, self.polys[usize::from(tag)], w, self.mask, &mut b);
            store(&b[..w], dst, false);
        }
        Ok(())
    }
}

/// Portable s = b·q via per-byte tables `tab` (256 entries × `words` words) and shifts.
#[inline(always)]
fn portable_mul(
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
        if v == 0 {
            continue;
        }
        let e = &tab[v * words..(v + 1) * words];
        let (ws, bs) = (j / 8, 8 * (j % 8));
        for dst in ws..words {
            let src = dst - ws;
            let mut x = e[src] << bs;
            if bs > 0 && src > 0 {
                x |= e[src - 1] >> (64 - bs);
            }
            s[dst] ^= x;
        }
    }
    s[words - 1] &= mask;
}

/// Hardware carry-less multiply when available, else the software one (only reached through
/// [`Backend::Clmul`], which [`Codec::with_backend`] allows only when the CPU has it).
#[inline(always)]
fn clmul_hw(a: u64, b: u64) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `Backend::Clmul` is only selected after `is_x86_feature_detected!` confirmed
        // pclmulqdq and popcnt (see `Codec::with_backend`), and this function is only called on
        // that path.
        unsafe { clmul_x86(a, b) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        clmul_soft(a, b)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse2")]
unsafe fn clmul_x86(a: u64, b: u64) -> (u64, u64) {
    use std::arch::x86_64::{
        _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_cvtsi64_si128, _mm_unpackhi_epi64,
    };
    let p = _mm_clmulepi64_si128(_mm_cvtsi64_si128(a as i64), _mm_cvtsi64_si128(b as i64), 0);
    (
        _mm_cvtsi128_si64(p) as u64,
        _mm_cvtsi128_si64(_mm_unpackhi_epi64(p, p)) as u64,
    )
}

/// Fewest-ones key `(ones << 8) | tag` over every polynomial for one chunk `b` (W words),
/// using `pclmulqdq`; with `STATS`, counts in `reduced[t]` whether polynomial t gives fewer
/// ones than `base`.
#[inline(always)]
fn scan_clmul<const W: usize, const STATS: bool>(
    b: &[u64; MAX_WORDS],
    inv: &[u64],
    mask: u64,
    base: u32,
    reduced: &mut [u64],
) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: reached only with `Backend::Clmul`, which `Codec::with_backend` accepts only
        // after `is_x86_feature_detected!` confirmed pclmulqdq and popcnt on this CPU.
        unsafe { scan_x86::<W, STATS>(b, inv, mask, base, reduced) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut best = u32::MAX;
        let mut s = [0u64; MAX_WORDS];
        for (t, q) in inv.chunks_exact(W).enumerate() {
            mul_trunc_with(b, q, W, mask, &mut s, clmul_soft);
            let ones = s[..W].iter().map(|x| x.count_ones()).sum::<u32>();
            best = best.min((ones << 8) | t as u32);
            if STATS {
                reduced[t] += u64::from(ones < base);
            }
        }
        best
    }
}

/// The x86-64 kernel of [`scan_clmul`]. One `pclmulqdq` per (chunk word pair, polynomial):
/// 1 for 4/8-byte chunks, 3 for 16, 10 for 32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,popcnt,sse2")]
unsafe fn scan_x86<const W: usize, const STATS: bool>(
    b: &[u64; MAX_WORDS],
    inv: &[u64],
    mask: u64,
    base: u32,
    reduced: &mut [u64],
) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_cvtsi64_si128, _mm_unpackhi_epi64,
    };
    let mut bv: [__m128i; W] = [_mm_cvtsi64_si128(0); W];
    for i in 0..W {
        bv[i] = _mm_cvtsi64_si128(b[i] as i64);
    }
    let mut best = u32::MAX;
    for (t, q) in inv.chunks_exact(W).enumerate() {
        let ones = if W == 1 {
            let p = _mm_clmulepi64_si128(bv[0], _mm_cvtsi64_si128(q[0] as i64), 0);
            ((_mm_cvtsi128_si64(p) as u64) & mask).count_ones()
        } else {
            let mut s = [0u64; W];
            for j in 0..W {
                let qv = _mm_cvtsi64_si128(q[j] as i64);
                for i in 0..W - j {
                    let p = _mm_clmulepi64_si128(bv[i], qv, 0);
                    s[i + j] ^= _mm_cvtsi128_si64(p) as u64;
                    if i + j + 1 < W {
                        s[i + j + 1] ^= _mm_cvtsi128_si64(_mm_unpackhi_epi64(p, p)) as u64;
                    }
                }
            }
            s[W - 1] &= mask;
            let mut n = 0;
            for x in s {
                n += x.count_ones();
            }
            n
        };
        best = best.min((ones << 8) | t as u32);
        if STATS {
            reduced[t] += u64::from(ones < base);
        }
    }
    best
}

/// Ones of the page after byte de-correlation `y_0 = x_0, y_i = x_i ⊕ x_(i−1)` (path A; Guo
/// §2.4 after \[32\]).
pub fn decorrelated_ones(page: &[u8]) -> u64 {
    let mut ones = 0u64;
    let mut prev = 0u64;
    let mut words = page.chunks_exact(8);
    for c in &mut words {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
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
        n += u64::from(
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]).count_ones(),
        );
    }
    n + words
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>()
}
