//! One-pass summaries ([`scan`]) and workload statistics ([`stats`]).

use std::collections::HashMap;
use std::path::Path;

use super::reader::{ReaderCounters, TraceReader};
use super::{HostRequest, Op, TraceError, TraceFormat, TraceOptions};

/// Totals of one pass over a trace (after device mapping, reordering and rebasing).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TraceSummary {
    /// Format read.
    pub format: TraceFormat,
    /// Requests.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Smallest offset, bytes.
    pub min_offset_bytes: u64,
    /// Largest `offset + len`, bytes (a device must be at least this large).
    pub max_end_bytes: u64,
    /// First arrival, ns (0 after rebasing).
    pub first_arrival_ns: u64,
    /// Last arrival, ns since the first.
    pub last_arrival_ns: u64,
    /// `(device, base offset)` used when merging devices; empty if none.
    pub device_bases: Vec<(u32, u64)>,
    /// Reader counters at the end.
    pub counters: ReaderCounters,
}

#[derive(Default)]
struct Acc {
    requests: u64,
    reads: u64,
    writes: u64,
    bytes_read: u64,
    bytes_written: u64,
    min_off: u64,
    max_end: u64,
    first: u64,
    last: u64,
}

impl Acc {
    #[inline]
    fn add(&mut self, r: &HostRequest) {
        if self.requests == 0 {
            self.min_off = r.offset_bytes;
            self.first = r.arrival_ns;
        }
        self.requests += 1;
        // A discard (only with `TraceOptions::discards`) moves no data.
        r.op.tally(
            r.len_bytes,
            (&mut self.reads, &mut self.bytes_read),
            (&mut self.writes, &mut self.bytes_written),
        );
        self.min_off = self.min_off.min(r.offset_bytes);
        self.max_end = self.max_end.max(r.offset_bytes + r.len_bytes);
        self.last = r.arrival_ns;
    }
}

/// Read the whole trace once and return its totals (for device sizing).
/// Errors: those of [`TraceReader::open`] and [`TraceReader::next_request`].
pub fn scan(path: &Path, opts: &TraceOptions) -> Result<TraceSummary, TraceError> {
    let mut rd = TraceReader::open(path, opts)?;
    let mut a = Acc::default();
    while let Some(r) = rd.next_request()? {
        a.add(&r);
    }
    Ok(TraceSummary {
        format: rd.format(),
        requests: a.requests,
        reads: a.reads,
        writes: a.writes,
        bytes_read: a.bytes_read,
        bytes_written: a.bytes_written,
        min_offset_bytes: a.min_off,
        max_end_bytes: a.max_end,
        first_arrival_ns: a.first,
        last_arrival_ns: a.last,
        device_bases: rd.device_bases().to_vec(),
        counters: rd.counters().clone(),
    })
}

/// Workload characteristics in the style of Xia & Xiao's Table II and §III Fig. 1
/// (page classification). Sizes in KiB are 1024-byte units; GiB = 2^30 bytes.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TraceStats {
    /// The file.
    pub file: String,
    /// Format read.
    pub format: TraceFormat,
    /// Requests.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Reads / requests.
    pub read_ratio: f64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Mean request size, KiB.
    pub mean_size_kib: f64,
    /// Mean read size, KiB (0 without reads).
    pub mean_read_size_kib: f64,
    /// Mean write size, KiB (0 without writes).
    pub mean_write_size_kib: f64,
    /// Smallest offset, bytes.
    pub min_offset_bytes: u64,
    /// Largest end offset, bytes.
    pub max_end_bytes: u64,
    /// Address space = (max end − min offset) / 2^30.
    pub address_space_gib: f64,
    /// Last arrival − first arrival, seconds.
    pub duration_s: f64,
    /// Page size used for the classification, bytes.
    pub page_size_bytes: u64,
    /// Distinct pages touched.
    pub pages_touched: u64,
    /// Pages only read.
    pub read_only_pages: u64,
    /// Pages only written.
    pub write_only_pages: u64,
    /// Pages both read and written.
    pub overlapped_pages: u64,
    /// `read_only_pages / pages_touched`.
    pub read_only_frac: f64,
    /// `write_only_pages / pages_touched`.
    pub write_only_frac: f64,
    /// `overlapped_pages / pages_touched`.
    pub overlapped_frac: f64,
    /// Page accesses (each request counts once per page it covers).
    pub page_accesses: u64,
    /// Fraction of page accesses that hit read-only pages.
    pub read_only_access_frac: f64,
    /// Fraction of page accesses that hit write-only pages.
    pub write_only_access_frac: f64,
    /// Fraction of page accesses that hit overlapped pages.
    pub overlapped_access_frac: f64,
    /// `true` if the page classes were kept in a dense 2-bit array, `false` for the hash-map
    /// fallback (address space above [`DENSE_MAX_PAGES`] pages).
    pub dense_page_map: bool,
    /// Reader counters.
    pub counters: ReaderCounters,
}

/// Largest address space (in pages) classified with the dense 2-bit array (16 MiB of memory).
pub const DENSE_MAX_PAGES: u64 = 64 << 20;

const READ_BIT: u8 = 1;
const WRITE_BIT: u8 = 2;

enum PageMap {
    Dense { bits: Vec<u8>, first: u64 },
    Sparse(HashMap<u64, u8>),
}

impl PageMap {
    fn new(first_page: u64, pages: u64) -> PageMap {
        if pages <= DENSE_MAX_PAGES {
            PageMap::Dense {
                bits: vec![0; pages.div_ceil(4) as usize],
                first: first_page,
            }
        } else {
            PageMap::Sparse(HashMap::new())
        }
    }

    #[inline]
    fn mark(&mut self, page: u64, bit: u8) {
        match self {
            PageMap::Dense { bits, first } => {
                // Pages outside the first pass's range (file changed meanwhile) are ignored.
                let i = page.wrapping_sub(*first);
                if let Some(b) = bits.get_mut((i >> 2) as usize) {
                    *b |= bit << ((i & 3) * 2);
                }
            }
            PageMap::Sparse(m) => *m.entry(page).or_insert(0) |= bit,
        }
    }

    #[inline]
    fn class(&self, page: u64) -> u8 {
        match self {
            PageMap::Dense { bits, first } => {
                let i = page.wrapping_sub(*first);
                bits.get((i >> 2) as usize)
                    .map_or(0, |b| (b >> ((i & 3) * 2)) & 3)
            }
            PageMap::Sparse(m) => m.get(&page).copied().unwrap_or(0),
        }
    }

    /// Counts of pages per class (index 0..4).
    fn counts(&self) -> [u64; 4] {
        let mut c = [0u64; 4];
        match self {
            PageMap::Dense { bits, .. } => {
                for &b in bits {
                    for k in 0..4 {
                        c[((b >> (k * 2)) & 3) as usize] += 1;
                    }
                }
            }
            PageMap::Sparse(m) => {
                for &v in m.values() {
                    c[(v & 3) as usize] += 1;
                }
            }
        }
        c
    }
}

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Workload statistics with page classification at `page_size_bytes` (8192 is the usual
/// choice). Reads the trace three times: totals, page classes, page accesses per class.
/// Memory: a 2-bit-per-page array over [min offset, max end) when that is at most
/// [`DENSE_MAX_PAGES`] pages, else a hash map of touched pages; independent of trace length.
///
/// Errors: those of [`scan`], and [`TraceError::InvalidOption`] (`page_size_bytes`) for a page
/// size of 0.
pub fn stats(
    path: &Path,
    opts: &TraceOptions,
    page_size_bytes: u64,
) -> Result<TraceStats, TraceError> {
    if page_size_bytes == 0 {
        return Err(TraceError::InvalidOption {
            file: path.to_path_buf(),
            option: "page_size_bytes",
            msg: "value 0; expected a page size > 0 bytes (e.g. 8192)".into(),
        });
    }
    let s = scan(path, opts)?;
    // The reader rejects empty traces, so requests > 0 and max_end > min_offset.
    let ps = page_size_bytes;
    let first_page = s.min_offset_bytes / ps;
    let end_page = s.max_end_bytes.div_ceil(ps);
    let mut map = PageMap::new(first_page, end_page - first_page);
    let pages_of = |r: &HostRequest| {
        let a = r.offset_bytes / ps;
        let b = (r.offset_bytes + r.len_bytes - 1) / ps;
        a..=b
    };
    let mut rd = TraceReader::open(path, opts)?;
    while let Some(r) = rd.next_request()? {
        let bit = match r.op {
            Op::Read => READ_BIT,
            Op::Write => WRITE_BIT,
            Op::Trim => continue,
        };
        for p in pages_of(&r) {
            map.mark(p, bit);
        }
    }
    let c = map.counts();
    let mut acc = [0u64; 4];
    let mut rd = TraceReader::open(path, opts)?;
    while let Some(r) = rd.next_request()? {
        for p in pages_of(&r) {
            acc[map.class(p) as usize] += 1;
        }
    }
    let touched = c[1] + c[2] + c[3];
    let accesses = acc[1] + acc[2] + acc[3];
    let kib = |bytes: u64, n: u64| frac(bytes, n) / 1024.0;
    Ok(TraceStats {
        file: path.display().to_string(),
        format: s.format,
        requests: s.requests,
        reads: s.reads,
        writes: s.writes,
        read_ratio: frac(s.reads, s.requests),
        bytes_read: s.bytes_read,
        bytes_written: s.bytes_written,
        mean_size_kib: kib(s.bytes_read.saturating_add(s.bytes_written), s.requests),
        mean_read_size_kib: kib(s.bytes_read, s.reads),
        mean_write_size_kib: kib(s.bytes_written, s.writes),
        min_offset_bytes: s.min_offset_bytes,
        max_end_bytes: s.max_end_bytes,
        address_space_gib: (s.max_end_bytes - s.min_offset_bytes) as f64 / (1u64 << 30) as f64,
        duration_s: (s.last_arrival_ns - s.first_arrival_ns) as f64 / 1e9,
        page_size_bytes: ps,
        pages_touched: touched,
        read_only_pages: c[READ_BIT as usize],
        write_only_pages: c[WRITE_BIT as usize],
        overlapped_pages: c[3],
        read_only_frac: frac(c[READ_BIT as usize], touched),
        write_only_frac: frac(c[WRITE_BIT as usize], touched),
        overlapped_frac: frac(c[3], touched),
        page_accesses: accesses,
        read_only_access_frac: frac(acc[READ_BIT as usize], accesses),
        write_only_access_frac: frac(acc[WRITE_BIT as usize], accesses),
        overlapped_access_frac: frac(acc[3], accesses),
        dense_page_map: matches!(map, PageMap::Dense { .. }),
        counters: s.counters,
    })
}
