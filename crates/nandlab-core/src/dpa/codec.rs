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
//! multiplication: eight polynomials per AVX-512 `vpclmulqdq`, one per `pclmulqdq`, byte tables
//! on other CPUs; see [`Backend`]) and are tested against it and against each other.
//!
//! **Selection** (Fig. 7): each chunk takes the tag of its fewest-ones scrambling (ties to the
//! lowest tag); the page takes path A (correlation bit 1, no tags) when the de-correlated page
//! has no more ones than the sum of the chunk minima (ties go to A, the reading of spec §1.2),
//! else path B (correlation bit 0, one tag per chunk). The stored page is the inversion of the
//! selected output, so it is mostly 1s (erased level L0 under Guo's level map).
//!
//! The encoder allocates nothing per page once its [`Encoded`] buffers have grown to the page
//! size.
//!
//! The codec's parts by subject: this file holds its types, construction and the page
//! encoder and decoder; `clmul.rs` the GF(2) power-series arithmetic and the per-page tag
//! search kernels (portable, `pclmulqdq`); `avx512.rs` the AVX-512 kernel; `reference.rs` the
//! bit-serial reference scrambler; `decorrelate.rs` the path-A de-correlation and ones counts.

use super::clmul::*;
use super::poly::{degree, polynomial_set, MAX_POLYNOMIALS};
use super::words::{be64, load_words};
use super::DpaError;

pub use super::decorrelate::{decorrelate_into, decorrelated_ones, ones};
pub use super::reference::{descramble_reference, scramble_reference};

/// Chunk sizes of Guo Fig. 10(c), bytes.
pub const CHUNK_SIZES: [usize; 4] = [4, 8, 16, 32];
/// Default chunk size (Guo §2.6: 8 B).
pub const DEFAULT_CHUNK_BYTES: usize = 8;
/// Page size of Guo Table 3 (4 KB data + 218 B OOB), bytes.
pub const DEFAULT_PAGE_BYTES: usize = 4096;

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

/// Which multiplication kernel a codec uses. All give bit-identical results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// AVX-512 (`vpclmulqdq`, `vpopcntq`): eight polynomials per instruction (x86-64 with
    /// avx512f, vpclmulqdq and avx512vpopcntdq; built with rustc ≥ 1.89).
    Avx512,
    /// Carry-less multiply instruction (x86-64 `pclmulqdq` + `popcnt`).
    Clmul,
    /// Byte-indexed tables of each polynomial's inverse series (any CPU).
    Portable,
}

impl Backend {
    /// The fastest backend this CPU (and this build) supports.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("pclmulqdq")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                if super::avx512::available() {
                    return Backend::Avx512;
                }
                return Backend::Clmul;
            }
        }
        Backend::Portable
    }

    /// Whether this CPU and build can run the backend.
    pub fn supported(self) -> bool {
        matches!(
            (self, Backend::detect()),
            (Backend::Portable, _)
                | (Backend::Clmul, Backend::Clmul | Backend::Avx512)
                | (Backend::Avx512, Backend::Avx512)
        )
    }

    /// Short name (`avx512` / `clmul` / `portable`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Avx512 => "avx512",
            Backend::Clmul => "clmul",
            Backend::Portable => "portable",
        }
    }

    /// Parse a name; `auto` = [`Backend::detect`].
    ///
    /// # Errors
    /// [`DpaError::Param`] for an unknown name or one this CPU cannot run.
    pub fn parse(name: &str) -> Result<Self, DpaError> {
        let b = match name {
            "auto" | "" => return Ok(Backend::detect()),
            "avx512" => Backend::Avx512,
            "clmul" => Backend::Clmul,
            "portable" => Backend::Portable,
            other => {
                return Err(DpaError::Param {
                    name: "backend",
                    value: other.into(),
                    allowed: "auto, avx512, clmul, portable".into(),
                })
            }
        };
        if !b.supported() {
            return Err(DpaError::Param {
                name: "backend",
                value: name.into(),
                allowed: format!(
                    "{} on this CPU and build (auto picks the fastest)",
                    [Backend::Avx512, Backend::Clmul, Backend::Portable]
                        .iter()
                        .filter(|b| b.supported())
                        .map(|b| b.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        Ok(b)
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
    /// AVX-512 backend: the inverse series as a structure of arrays padded to 8 polynomials
    /// (see `avx512::layout`), and the padded count.
    soa: Vec<u64>,
    n8: usize,
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
        if !backend.supported() {
            Backend::parse(backend.name())?;
        }
        let words = chunk_bytes.div_ceil(8);
        let bits = 8 * chunk_bytes;
        let mask = if bits.is_multiple_of(64) {
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
            soa: Vec::new(),
            n8: 0,
        };
        match backend {
            Backend::Portable => codec.build_tables(),
            Backend::Avx512 => (codec.soa, codec.n8) = super::avx512::layout(&codec.inv, words),
            Backend::Clmul => {}
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
            Backend::Clmul | Backend::Avx512 => mul_trunc_with(b, q, w, self.mask, s, clmul_hw),
            Backend::Portable => {
                let t = &self.tables[tag * 256 * w..(tag + 1) * 256 * w];
                portable_mul_dyn(b, t, w, self.chunk_bytes, self.mask, s);
            }
        }
    }

    fn check_page(&self, len: usize) -> Result<(), DpaError> {
        if len == 0 || !len.is_multiple_of(self.chunk_bytes) {
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
        #[cfg(target_arch = "x86_64")]
        {
            if self.backend != Backend::Portable && has_clmul() {
                // SAFETY: the CPU has pclmulqdq and popcnt (checked just above, once per page).
                unsafe { encode_x86::<STATS>(self, page, choice, out, stats) };
                return Ok(());
            }
        }
        self.encode_body::<STATS>(page, choice, out, stats);
        Ok(())
    }

    /// The encoder after validation; inlined into [`encode_x86`] so that its popcounts and
    /// carry-less products compile to single instructions.
    #[inline(always)]
    fn encode_body<const STATS: bool>(
        &self,
        page: &[u8],
        choice: Choice,
        out: &mut Encoded,
        stats: Option<&mut TagStats>,
    ) {
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
            let ones = match self.chunk_bytes {
                4 => self.scramble_page::<4, 1>(page, &out.tags, &mut out.stored),
                8 => self.scramble_page::<8, 1>(page, &out.tags, &mut out.stored),
                16 => self.scramble_page::<16, 2>(page, &out.tags, &mut out.stored),
                _ => self.scramble_page::<32, 4>(page, &out.tags, &mut out.stored),
            };
            if let Choice::Tag(_) = choice {
                out.ones_scrambled = ones;
            }
        }
    }

    /// [`Codec::scramble_page`] for 4-byte chunks with carry-less multiplication: two chunks
    /// per 8-byte load and per bit reversal.
    #[inline(always)]
    fn scramble_page4(&self, page: &[u8], tags: &[u8], stored: &mut [u8]) -> u64 {
        let mut ones = 0u64;
        let prod = |b: u64, t: u8| -> u64 {
            let q = self.inv[usize::from(t)];
            clmul_hw(b, q).0 & 0xFFFF_FFFF
        };
        let mut pairs = page.chunks_exact(8);
        let mut dsts = stored.chunks_exact_mut(8);
        let mut tag_pairs = tags.chunks_exact(2);
        for ((src, dst), tp) in (&mut pairs).zip(&mut dsts).zip(&mut tag_pairs) {
            let r = be64(src).reverse_bits();
            let s = prod(r & 0xFFFF_FFFF, tp[0]) | (prod(r >> 32, tp[1]) << 32);
            ones += u64::from(s.count_ones());
            dst.copy_from_slice(&(!s.reverse_bits()).to_be_bytes());
        }
        let (src, dst) = (pairs.remainder(), dsts.into_remainder());
        if let (4, Some(&t)) = (src.len(), tag_pairs.remainder().first()) {
            let b = u64::from(u32::from_be_bytes([src[0], src[1], src[2], src[3]]).reverse_bits());
            let s = prod(b, t);
            ones += u64::from(s.count_ones());
            dst.copy_from_slice(&(!(s as u32).reverse_bits()).to_be_bytes());
        }
        ones
    }

    /// Scramble every chunk of `page` with its tag into `stored`, inverted; returns the ones
    /// of the scrambled (not inverted) page.
    #[inline(always)]
    fn scramble_page<const CB: usize, const W: usize>(
        &self,
        page: &[u8],
        tags: &[u8],
        stored: &mut [u8],
    ) -> u64 {
        if CB == 4 && self.backend != Backend::Portable {
            return self.scramble_page4(page, tags, stored);
        }
        let mask: u64 = if CB == 4 { 0xFFFF_FFFF } else { !0 };
        let mut ones = 0u64;
        for ((chunk, dst), &tag) in page
            .chunks_exact(CB)
            .zip(stored.chunks_exact_mut(CB))
            .zip(tags)
        {
            let b = load_words::<CB, W>(chunk);
            let t = usize::from(tag);
            let mut s = match self.backend {
                Backend::Portable => {
                    portable_mul::<CB, W>(&b, &self.tables[t * 256 * W..(t + 1) * 256 * W])
                }
                Backend::Clmul | Backend::Avx512 => {
                    let q = &self.inv[t * W..(t + 1) * W];
                    let mut s = [0u64; W];
                    for j in 0..W {
                        for i in 0..W - j {
                            let (lo, hi) = clmul_hw(b[i], q[j]);
                            s[i + j] ^= lo;
                            if i + j + 1 < W {
                                s[i + j + 1] ^= hi;
                            }
                        }
                    }
                    s
                }
            };
            s[W - 1] &= mask;
            for x in &s {
                ones += u64::from(x.count_ones());
            }
            if CB == 4 {
                dst.copy_from_slice(&(!(s[0] as u32).reverse_bits()).to_be_bytes());
            } else {
                for (o, x) in dst.chunks_exact_mut(8).zip(&s) {
                    o.copy_from_slice(&(!x.reverse_bits()).to_be_bytes());
                }
            }
        }
        ones
    }

    /// Best tag of every chunk of `page` into `tags`; returns the sum of the minima.
    #[inline(always)]
    fn best_tags<const STATS: bool>(
        &self,
        page: &[u8],
        tags: &mut [u8],
        stats: Option<&mut TagStats>,
    ) -> u64 {
        let mut none_r: [u64; 0] = [];
        let mut none_b: [u64; 0] = [];
        let (reduced, best): (&mut [u64], &mut [u64]) = match stats {
            Some(st) if STATS => {
                st.chunks += tags.len() as u64;
                (&mut st.reduced, &mut st.best)
            }
            _ => (&mut none_r, &mut none_b),
        };
        macro_rules! go {
            ($cb:literal, $w:literal, $i:literal) => {
                match self.backend {
                    Backend::Avx512 => super::avx512::scan_checked::<$cb, $w, STATS>(
                        page,
                        &self.soa,
                        self.polys.len(),
                        self.n8,
                        tags,
                        reduced,
                        best,
                    ),
                    Backend::Clmul => {
                        scan_clmul::<$cb, $w, $i, STATS>(page, &self.inv, tags, reduced, best)
                    }
                    Backend::Portable => scan_page::<$cb, $w, $i, STATS>(
                        page,
                        &self.tables,
                        256 * $w,
                        tags,
                        reduced,
                        best,
                        |b, tab| portable_mul::<$cb, $w>(b, tab),
                    ),
                }
            };
        }
        match self.chunk_bytes {
            4 => go!(4, 1, 4),
            8 => go!(8, 1, 4),
            16 => go!(16, 2, 1),
            _ => go!(32, 4, 1),
        }
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

/// [`Codec::encode_body`] compiled with pclmulqdq and popcnt.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,popcnt,sse2")]
unsafe fn encode_x86<const STATS: bool>(
    codec: &Codec,
    page: &[u8],
    choice: Choice,
    out: &mut Encoded,
    stats: Option<&mut TagStats>,
) {
    codec.encode_body::<STATS>(page, choice, out, stats);
}
