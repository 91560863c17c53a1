//! `nandlab dpa analyze`: DPA-PPU statistics over real files (Guo §2.6, Figs. 9–11, Table 5).
//!
//! Each file is cut into pages of `page_size_bytes` (Guo Table 3: 4096 B); the last page is
//! shortened to a whole number of the largest configured chunk, and the remaining tail (fewer
//! bytes than one chunk) is skipped and counted. Every page goes through every configured codec
//! ([`CodecSpec`]); everything is counted in integers so that groups of files add up exactly.
//!
//! **Cells** (Guo §2.1.1: "MSB and LSB in the same cell belong to the lower page and the upper
//! page"). Our reading: consecutive pages 2k and 2k+1 of a file are the lower (MSB) and upper
//! (LSB) page of one word line, and bit i of both forms one cell; an unpaired or short last
//! page is left out of the cell counts. Cells are counted by bit pattern `v = msb·2 + lsb`
//! (index 0 = "00" … 3 = "11"); the level of a pattern depends on the level map (Guo prints
//! L0..L3 = 11, 10, 01, 00), which the caller applies. The thesis itself computes level
//! probabilities from the ones ratio as if bits were independent (§2.2.1: p0 = p(1)p(1) …);
//! [`Profile`] gives both.
//!
//! No file is read twice; memory is one buffer of pages plus the codecs' tables.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::codec::{decorrelated_ones, ones, Codec, Encoded, TagStats, DEFAULT_PAGE_BYTES};
use super::poly::{polynomial_set, tag_bits};
use super::{Backend, Choice, DpaError};

/// Pages per read buffer (even, so page pairs never straddle buffers).
const BUFFER_PAGES: usize = 64;

/// One codec configuration of an analysis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodecSpec {
    /// Chunk size, bytes (4, 8, 16, 32).
    pub chunk_bytes: usize,
    /// Polynomial order (2..=16; Guo default 16).
    #[serde(default = "default_order")]
    pub order: u32,
    /// Number of polynomials; `None` = min(64, what the order offers).
    #[serde(default)]
    pub polynomials: Option<usize>,
}

fn default_order() -> u32 {
    16
}

impl CodecSpec {
    /// Guo's default scrambler (order 16, Table 4's 64 polynomials) at `chunk_bytes`.
    pub fn guo(chunk_bytes: usize) -> Self {
        CodecSpec {
            chunk_bytes,
            order: 16,
            polynomials: None,
        }
    }

    /// Build the codec.
    ///
    /// # Errors
    /// [`DpaError::Param`] for a bad chunk size, order or polynomial count.
    pub fn codec(&self, backend: Backend) -> Result<Codec, DpaError> {
        Codec::with_backend(
            self.chunk_bytes,
            &polynomial_set(self.order, self.polynomials)?,
            backend,
        )
    }
}

/// Request of [`analyze`].
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalyzeRequest {
    /// Files to analyse.
    pub files: Vec<String>,
    /// Page size, bytes (a multiple of every chunk size).
    pub page_size_bytes: usize,
    /// Codec configurations (default: chunks 4, 8, 16, 32 B with Table 4).
    pub configs: Vec<CodecSpec>,
    /// Analyse at most this many bytes of each file (0 = all).
    pub max_bytes_per_file: u64,
    /// `auto` (default), `avx512`, `clmul` or `portable`.
    pub backend: String,
}

impl Default for AnalyzeRequest {
    fn default() -> Self {
        AnalyzeRequest {
            files: Vec::new(),
            page_size_bytes: DEFAULT_PAGE_BYTES,
            configs: super::codec::CHUNK_SIZES
                .iter()
                .map(|&c| CodecSpec::guo(c))
                .collect(),
            max_bytes_per_file: 0,
            backend: "auto".into(),
        }
    }
}

/// Counts of one codec configuration over one file (or a group of files).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigStats {
    /// The configuration.
    pub chunk_bytes: usize,
    /// Highest polynomial degree.
    pub order: u32,
    /// Polynomials in the set.
    pub polynomials: usize,
    /// Bits per tag (⌈log2 polynomials⌉).
    pub tag_bits: u32,
    /// Pages encoded.
    pub pages: u64,
    /// Pages that took path A (de-correlation).
    pub path_a_pages: u64,
    /// Chunks scrambled.
    pub chunks: u64,
    /// Σ over chunks of the fewest ones any polynomial gives (Fig. 10(a–c) numerator).
    pub scrambled_ones: u64,
    /// Σ over pages of the ones of the selected output before inversion, i.e. the zeros
    /// actually stored (Fig. 10(d) numerator).
    pub selected_ones: u64,
    /// `reduced[t]`: chunks that polynomial t reduces (Table 5 numerator; denominator `chunks`).
    pub reduced: Vec<u64>,
    /// `best[t]`: chunks whose fewest-ones polynomial is t.
    pub best: Vec<u64>,
    /// Cells of the *stored* pages by bit pattern (index = msb·2 + lsb).
    pub stored_cells: [u64; 4],
    /// Tag bits the path-B pages need (Σ over path-B pages of chunks × tag bits).
    pub tag_bits_total: u64,
    /// Seconds spent encoding (wall clock of this single-threaded loop).
    pub encode_s: f64,
    /// CPU seconds of the encoding thread in that loop (0 where the platform does not give
    /// thread CPU time). Unlike `encode_s`, unaffected by other load on the machine.
    pub encode_cpu_s: f64,
}

/// `a[i] += b[i]` for every index of both (merging per-file counts).
fn add_each(a: &mut [u64], b: &[u64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl ConfigStats {
    fn new(spec: &CodecSpec, codec: &Codec) -> Self {
        let n = codec.polynomials().len();
        ConfigStats {
            chunk_bytes: spec.chunk_bytes,
            order: codec.order(),
            polynomials: n,
            tag_bits: tag_bits(n),
            reduced: vec![0; n],
            best: vec![0; n],
            ..Default::default()
        }
    }

    /// Add another file's counts of the same configuration.
    pub fn merge(&mut self, o: &ConfigStats) {
        self.pages += o.pages;
        self.path_a_pages += o.path_a_pages;
        self.chunks += o.chunks;
        self.scrambled_ones += o.scrambled_ones;
        self.selected_ones += o.selected_ones;
        add_each(&mut self.reduced, &o.reduced);
        add_each(&mut self.best, &o.best);
        add_each(&mut self.stored_cells, &o.stored_cells);
        self.tag_bits_total += o.tag_bits_total;
        self.encode_s += o.encode_s;
        self.encode_cpu_s += o.encode_cpu_s;
    }
}

/// Statistics of one file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileStats {
    /// The path as given.
    pub path: String,
    /// Why the file could not be analysed (then every count is 0).
    pub error: Option<String>,
    /// File size, bytes.
    pub size_bytes: u64,
    /// Bytes analysed.
    pub bytes: u64,
    /// Bytes left out: the tail shorter than one chunk, and anything beyond
    /// `max_bytes_per_file`.
    pub skipped_bytes: u64,
    /// Pages (the last may be short).
    pub pages: u64,
    /// Ones of the raw data (Fig. 5(a), Fig. 9 "before").
    pub raw_ones: u64,
    /// Ones after per-page byte de-correlation (Fig. 9 "after").
    pub decorrelated_ones: u64,
    /// Cells of the raw pages by bit pattern (index = msb·2 + lsb).
    pub raw_cells: [u64; 4],
    /// Per configuration, in request order.
    pub configs: Vec<ConfigStats>,
}

/// The data profile of one configuration: what a simulator scheme needs from `dpa analyze`
/// (ones ratio of the stored data, share of path-A pages, tag volume), plus the level
/// probabilities both ways.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Chunk size, bytes.
    pub chunk_bytes: usize,
    /// Polynomials.
    pub polynomials: usize,
    /// Ones ratio of the raw data.
    pub raw_ones_ratio: f64,
    /// Ones ratio after de-correlation alone.
    pub decorrelated_ones_ratio: f64,
    /// Ones ratio after scrambling alone (best polynomial per chunk).
    pub scrambled_ones_ratio: f64,
    /// Ones ratio of the DPA-PPU output before inversion (= zeros ratio of the stored data,
    /// Fig. 10(d)).
    pub selected_ones_ratio: f64,
    /// Ones ratio of the stored (inverted) data.
    pub stored_ones_ratio: f64,
    /// Share of pages that took path A.
    pub path_a_share: f64,
    /// Tag bits per page of data, averaged over all pages (path-B pages carry
    /// chunks × tag bits; every page one correlation bit, not included).
    pub tag_bits_per_page: f64,
    /// Stored-cell probabilities by bit pattern (index msb·2 + lsb) from paired pages; `None`
    /// when no page pair was complete.
    pub stored_patterns_paired: Option<[f64; 4]>,
    /// Stored-cell probabilities by bit pattern assuming independent bits with the stored
    /// ones ratio (Guo §2.2.1).
    pub stored_patterns_independent: [f64; 4],
    /// Raw-cell probabilities by bit pattern, paired pages (`None` without a pair).
    pub raw_patterns_paired: Option<[f64; 4]>,
    /// Raw-cell probabilities by bit pattern assuming independent bits.
    pub raw_patterns_independent: [f64; 4],
}

/// Pattern probabilities (index msb·2 + lsb) of independent bits with P(1) = `p1`.
pub fn independent_patterns(p1: f64) -> [f64; 4] {
    let p0 = 1.0 - p1;
    [p0 * p0, p0 * p1, p1 * p0, p1 * p1]
}

fn ratio(n: u64, d: u64) -> f64 {
    if d == 0 {
        f64::NAN
    } else {
        n as f64 / d as f64
    }
}

fn patterns(c: &[u64; 4]) -> Option<[f64; 4]> {
    let t: u64 = c.iter().sum();
    (t > 0).then(|| c.map(|x| x as f64 / t as f64))
}

impl Profile {
    /// The profile of configuration `c` over data whose raw counts are in `f` (a file or a sum
    /// of files; `f.configs` is not used).
    pub fn of(f: &FileStats, c: &ConfigStats) -> Self {
        let bits = 8 * f.bytes;
        let raw = ratio(f.raw_ones, bits);
        let selected = ratio(c.selected_ones, bits);
        let stored = 1.0 - selected;
        Profile {
            chunk_bytes: c.chunk_bytes,
            polynomials: c.polynomials,
            raw_ones_ratio: raw,
            decorrelated_ones_ratio: ratio(f.decorrelated_ones, bits),
            scrambled_ones_ratio: ratio(c.scrambled_ones, bits),
            selected_ones_ratio: selected,
            stored_ones_ratio: stored,
            path_a_share: ratio(c.path_a_pages, c.pages),
            tag_bits_per_page: ratio(c.tag_bits_total, c.pages),
            stored_patterns_paired: patterns(&c.stored_cells),
            stored_patterns_independent: independent_patterns(stored),
            raw_patterns_paired: patterns(&f.raw_cells),
            raw_patterns_independent: independent_patterns(raw),
        }
    }
}

/// Counts of several files added together, with the profile of each configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Files added (those without an error).
    pub files: usize,
    /// The summed counts (`path` lists the files, `error` is `None`).
    pub stats: FileStats,
    /// One profile per configuration, in order.
    pub profiles: Vec<Profile>,
}

/// Add up the files that were analysed (those without `error`) and compute the profiles.
/// All files must have the same configurations (as one [`analyze`] call gives).
///
/// # Errors
/// [`DpaError::Param`] when the files' configurations differ or no file has data.
pub fn summarize(files: &[FileStats]) -> Result<Summary, DpaError> {
    let ok: Vec<&FileStats> = files.iter().filter(|f| f.error.is_none()).collect();
    let Some(first) = ok.first() else {
        return Err(DpaError::Param {
            name: "files",
            value: files.len().to_string(),
            allowed: "at least one file analysed without error".into(),
        });
    };
    let shape = |f: &FileStats| -> Vec<(usize, u32, usize)> {
        f.configs
            .iter()
            .map(|c| (c.chunk_bytes, c.order, c.polynomials))
            .collect()
    };
    let mut total = FileStats {
        path: ok
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        configs: first
            .configs
            .iter()
            .map(|c| ConfigStats {
                chunk_bytes: c.chunk_bytes,
                order: c.order,
                polynomials: c.polynomials,
                tag_bits: c.tag_bits,
                reduced: vec![0; c.polynomials],
                best: vec![0; c.polynomials],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    for f in &ok {
        if shape(f) != shape(first) {
            return Err(DpaError::Param {
                name: "files",
                value: f.path.clone(),
                allowed: "files analysed with the same configurations".into(),
            });
        }
        total.size_bytes += f.size_bytes;
        total.bytes += f.bytes;
        total.skipped_bytes += f.skipped_bytes;
        total.pages += f.pages;
        total.raw_ones += f.raw_ones;
        total.decorrelated_ones += f.decorrelated_ones;
        add_each(&mut total.raw_cells, &f.raw_cells);
        for (a, b) in total.configs.iter_mut().zip(&f.configs) {
            a.merge(b);
        }
    }
    let profiles = total
        .configs
        .iter()
        .map(|c| Profile::of(&total, c))
        .collect();
    Ok(Summary {
        files: ok.len(),
        stats: total,
        profiles,
    })
}

/// Add the cells of a lower (MSB) page `a` and an upper (LSB) page `b` of equal length.
fn count_cells(a: &[u8], b: &[u8], cells: &mut [u64; 4]) {
    let mut wa = a.chunks_exact(8);
    let mut wb = b.chunks_exact(8);
    let le = super::words::le64;
    for (x, y) in (&mut wa).zip(&mut wb) {
        let (x, y) = (le(x), le(y));
        cells[3] += u64::from((x & y).count_ones());
        cells[2] += u64::from((x & !y).count_ones());
        cells[1] += u64::from((!x & y).count_ones());
        cells[0] += u64::from((!x & !y).count_ones());
    }
    for (&x, &y) in wa.remainder().iter().zip(wb.remainder()) {
        cells[3] += u64::from((x & y).count_ones());
        cells[2] += u64::from((x & !y).count_ones());
        cells[1] += u64::from((!x & y).count_ones());
        cells[0] += u64::from((!x & !y).count_ones());
    }
}

/// Result of [`analyze`].
#[derive(Clone, Debug, Serialize)]
pub struct AnalyzeResult {
    /// Page size, bytes.
    pub page_size_bytes: usize,
    /// Kernel used (`avx512` / `clmul` / `portable`).
    pub backend: &'static str,
    /// The configurations, in order.
    pub configs: Vec<CodecSpec>,
    /// One entry per requested file, in order (failed files carry `error`).
    pub files: Vec<FileStats>,
    /// Bytes analysed over all files.
    pub bytes: u64,
    /// Wall seconds of the whole analysis (reading included).
    pub wall_s: f64,
}

/// Progress callback: (bytes analysed so far, total bytes to analyse).
pub type Progress<'a> = dyn FnMut(u64, u64) + 'a;

struct Worker {
    codec: Codec,
    enc: [Encoded; 2],
    tags: TagStats,
}

/// Analyse every file of `req`. A file that cannot be read (missing, unreadable, a directory,
/// not a regular file, empty, shorter than one chunk) gets a one-line `error` and the others
/// are analysed.
///
/// # Errors
/// [`DpaError::Param`] for a bad configuration or page size (nothing is analysed then).
pub fn analyze(
    req: &AnalyzeRequest,
    progress: &mut Progress<'_>,
) -> Result<AnalyzeResult, DpaError> {
    let t0 = Instant::now();
    let backend = Backend::parse(&req.backend)?;
    if req.configs.is_empty() {
        return Err(DpaError::Param {
            name: "configs",
            value: "[]".into(),
            allowed: "at least one codec configuration".into(),
        });
    }
    let mut workers = Vec::with_capacity(req.configs.len());
    for spec in &req.configs {
        let codec = spec.codec(backend)?;
        let n = codec.polynomials().len();
        workers.push(Worker {
            codec,
            enc: [Encoded::default(), Encoded::default()],
            tags: TagStats::new(n),
        });
    }
    let unit = req.configs.iter().map(|c| c.chunk_bytes).max().unwrap_or(1);
    let page = req.page_size_bytes;
    if page == 0 || !page.is_multiple_of(unit) || page > 1 << 24 {
        return Err(DpaError::Param {
            name: "page_size_bytes",
            value: page.to_string(),
            allowed: format!("a multiple of the largest chunk size ({unit} B), at most 16 MiB"),
        });
    }
    // Sizes first, for the progress total.
    let limit = |len: u64| {
        if req.max_bytes_per_file > 0 {
            len.min(req.max_bytes_per_file)
        } else {
            len
        }
    };
    let sizes: Vec<Option<u64>> = req
        .files
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .collect();
    let total: u64 = sizes.iter().flatten().map(|&l| limit(l)).sum();
    let mut done = 0u64;
    let mut buf = vec![0u8; page * BUFFER_PAGES];
    let mut files = Vec::with_capacity(req.files.len());
    for (path, size) in req.files.iter().zip(&sizes) {
        let done_before = done;
        let mut fs = FileStats {
            path: path.clone(),
            ..Default::default()
        };
        for (w, spec) in workers.iter_mut().zip(&req.configs) {
            w.tags = TagStats::new(w.codec.polynomials().len());
            fs.configs.push(ConfigStats::new(spec, &w.codec));
        }
        match analyze_file(
            Path::new(path),
            page,
            unit,
            req.max_bytes_per_file,
            &mut buf,
            &mut workers,
            &mut fs,
            &mut |n| {
                done += n;
                progress(done, total);
            },
        ) {
            Ok(()) => {
                for (w, c) in workers.iter().zip(fs.configs.iter_mut()) {
                    c.chunks = w.tags.chunks;
                    c.reduced.clone_from(&w.tags.reduced);
                    c.best.clone_from(&w.tags.best);
                }
            }
            Err(msg) => {
                let size = fs.size_bytes;
                let configs = fs
                    .configs
                    .iter()
                    .map(|c| ConfigStats {
                        reduced: vec![0; c.polynomials],
                        best: vec![0; c.polynomials],
                        chunk_bytes: c.chunk_bytes,
                        order: c.order,
                        polynomials: c.polynomials,
                        tag_bits: c.tag_bits,
                        ..Default::default()
                    })
                    .collect();
                fs = FileStats {
                    path: path.clone(),
                    error: Some(msg),
                    size_bytes: size,
                    configs,
                    ..Default::default()
                };
            }
        }
        // The bar ends at the total even when a file failed or shrank while being read.
        if let Some(&len) = size.as_ref() {
            if done != done_before + limit(len) {
                done = done_before + limit(len);
                progress(done, total);
            }
        }
        files.push(fs);
    }
    let bytes = files.iter().map(|f| f.bytes).sum();
    Ok(AnalyzeResult {
        page_size_bytes: page,
        backend: backend.name(),
        configs: req.configs.clone(),
        files,
        bytes,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// CPU time of the calling thread, ns (`CLOCK_THREAD_CPUTIME_ID` on Unix, the thread times on
/// Windows); `None` where the platform does not give it.
fn thread_cpu_ns() -> Option<u64> {
    cpu_time::ThreadTime::try_now()
        .ok()
        .map(|t| u64::try_from(t.as_duration().as_nanos()).unwrap_or(u64::MAX))
}

/// Fill `buf` from `r` as far as possible; returns the bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[allow(clippy::too_many_arguments)]
fn analyze_file(
    path: &Path,
    page: usize,
    unit: usize,
    max_bytes: u64,
    buf: &mut [u8],
    workers: &mut [Worker],
    fs: &mut FileStats,
    progress: &mut dyn FnMut(u64),
) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if meta.is_dir() {
        return Err("is a directory, not a file".into());
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    fs.size_bytes = meta.len();
    if meta.len() == 0 {
        return Err("empty file".into());
    }
    if meta.len() < unit as u64 {
        return Err(format!(
            "{} bytes is shorter than one {unit}-byte chunk; nothing to analyse",
            meta.len()
        ));
    }
    let mut file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let budget = if max_bytes > 0 {
        meta.len().min(max_bytes)
    } else {
        meta.len()
    };
    let mut left = budget;
    let mut read_total = 0u64;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = fill(&mut file, &mut buf[..want]).map_err(|e| format!("read error: {e}"))?;
        if n == 0 {
            break;
        }
        read_total += n as u64;
        left -= n as u64;
        let usable = n - n % unit;
        let data = &buf[..usable];
        for p in data.chunks(page) {
            fs.pages += 1;
            fs.raw_ones += ones(p);
            fs.decorrelated_ones += decorrelated_ones(p);
        }
        // Raw cells: pairs of full pages (buffers hold an even number of pages).
        for pair in data.chunks_exact(2 * page) {
            let (lower, upper) = pair.split_at(page);
            count_cells(lower, upper, &mut fs.raw_cells);
        }
        for (w, c) in workers.iter_mut().zip(fs.configs.iter_mut()) {
            let t = Instant::now();
            let cpu0 = thread_cpu_ns();
            for (i, p) in data.chunks(page).enumerate() {
                let slot = i % 2;
                let (lo, hi) = w.enc.split_at_mut(1);
                let (enc, other) = if slot == 0 {
                    (&mut lo[0], &hi[0])
                } else {
                    (&mut hi[0], &lo[0])
                };
                w.codec
                    .encode_with_stats(p, Choice::Auto, enc, &mut w.tags)
                    .map_err(|e| e.to_string())?;
                c.pages += 1;
                if enc.correlated {
                    c.path_a_pages += 1;
                    c.selected_ones += enc.ones_decorrelated;
                } else {
                    c.selected_ones += enc.ones_scrambled;
                    c.tag_bits_total += enc.tags.len() as u64 * u64::from(c.tag_bits);
                }
                c.scrambled_ones += enc.ones_scrambled;
                if slot == 1 && p.len() == page && other.stored.len() == page {
                    count_cells(&other.stored, &enc.stored, &mut c.stored_cells);
                }
            }
            c.encode_s += t.elapsed().as_secs_f64();
            if let (Some(a), Some(b)) = (cpu0, thread_cpu_ns()) {
                c.encode_cpu_s += b.saturating_sub(a) as f64 * 1e-9;
            }
        }
        // A page pair must not straddle buffers: the buffer is an even number of pages, so a
        // short read only happens at the end of the file.
        for w in workers.iter_mut() {
            w.enc[0].stored.clear();
            w.enc[1].stored.clear();
        }
        fs.bytes += usable as u64;
        fs.skipped_bytes += (n - usable) as u64;
        progress(n as u64);
        if n < want {
            break;
        }
    }
    fs.skipped_bytes += meta.len().saturating_sub(read_total);
    Ok(())
}
