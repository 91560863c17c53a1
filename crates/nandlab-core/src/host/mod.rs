//! Host side: where requests come from, and what the engine needs to know of a trace before
//! replaying it.
//!
//! Replay modes (`[host] mode`):
//! * `open`: each request arrives at its trace timestamp × `time_scale` (FlexECC's "ioscale":
//!   > 1 stretches inter-arrival times), whatever the device's backlog;
//! * `closed`: `queue_depth` requests are outstanding at all times; a request is issued the
//!   moment another completes; timestamps are ignored.
//!
//! Closed loop has no idle time: a request is issued the moment another completes, so
//! [`crate::scheme::Scheme::on_idle`] (e.g. FlexECC's scrubber) never runs there.
//!
//! The optional SSD-as-cache front end ([`cache`], `[cache]`) turns a primary-storage trace
//! into tagged page operations (FlexECC §3.2).
//!
//! Requests are pulled lazily from a [`RequestSource`], so a trace of any length streams in
//! constant memory.

pub mod address_map;
pub mod cache;
pub mod flows;
pub mod link;
pub mod spill;
pub mod threaded;

use crate::trace::{HostRequest, TraceError};

/// A stream of host requests in non-decreasing arrival order.
pub trait RequestSource {
    /// The next request, `Ok(None)` at the end.
    ///
    /// # Errors
    /// A [`TraceError`] naming file, line and field.
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError>;

    /// The cache operation of the request last returned by [`RequestSource::next_request`]
    /// ([`cache::CacheOp::None`] for a plain trace; [`cache::CacheSource`] tags its output).
    fn tag(&self) -> cache::CacheOp {
        cache::CacheOp::None
    }

    /// What the report says about this source after replay (format, counters…).
    fn describe(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

impl<S: RequestSource + ?Sized> RequestSource for Box<S> {
    #[inline]
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        (**self).next_request()
    }

    fn tag(&self) -> cache::CacheOp {
        (**self).tag()
    }

    fn describe(&self) -> serde_json::Value {
        (**self).describe()
    }
}

impl RequestSource for crate::trace::TraceReader {
    #[inline]
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        crate::trace::TraceReader::next_request(self)
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "path": self.path().display().to_string(),
            "format": self.format(),
            "counters": self.counters(),
            "device_bases": self.device_bases(),
        })
    }
}

/// An in-memory source (tests, generated workloads).
#[derive(Clone, Debug)]
pub struct VecSource {
    reqs: Vec<HostRequest>,
    next: usize,
}

impl VecSource {
    /// Replay `reqs` in order.
    pub fn new(reqs: Vec<HostRequest>) -> VecSource {
        VecSource { reqs, next: 0 }
    }
}

impl RequestSource for VecSource {
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        let r = self.reqs.get(self.next).copied();
        self.next += 1;
        Ok(r)
    }
}

/// What one pass over a trace tells the engine before replay.
#[derive(Clone, Debug, Default)]
pub struct Prepass {
    /// Requests.
    pub requests: u64,
    /// End of the highest byte touched.
    pub max_end_bytes: u64,
    /// The touched LPNs, when requested.
    pub touched: TouchedPages,
    /// The touched chunks of [`PrepassOptions::chunk_bytes`] (indices), when requested: what
    /// an [`address_map::AddressMap`] is built from.
    pub touched_chunks: TouchedPages,
    /// Chunks in `touched_chunks`.
    pub chunks: u64,
}

impl Prepass {
    /// Is `lpn` marked touched?
    #[inline]
    pub fn is_touched(&self, lpn: u64) -> bool {
        self.touched.get(lpn)
    }
}

/// The highest LPN count a device model can address: LPNs and PPNs are 32-bit.
pub const MAX_LPNS: u64 = 1 << 32;

/// A set of LPNs as a two-level bitmap: leaves of 32,768 pages (4 KiB of bits) are allocated
/// only where a page is touched, so its memory follows what the trace touches, not its highest
/// address (a trace touching one page at 15 TiB costs one leaf plus 1 MiB of leaf pointers).
#[derive(Clone, Debug, Default)]
pub struct TouchedPages {
    leaves: Vec<Option<Box<[u64; LEAF_WORDS]>>>,
}

const LEAF_WORDS: usize = 512;
const LEAF_PAGES: u64 = LEAF_WORDS as u64 * 64;

impl TouchedPages {
    /// Is `lpn` in the set?
    #[inline]
    pub fn get(&self, lpn: u64) -> bool {
        let (l, w) = ((lpn / LEAF_PAGES) as usize, (lpn % LEAF_PAGES) as usize);
        match self.leaves.get(l) {
            Some(Some(leaf)) => leaf[w / 64] >> (w % 64) & 1 == 1,
            _ => false,
        }
    }
    /// Add `lpn` (< [`MAX_LPNS`]).
    #[inline]
    pub fn set(&mut self, lpn: u64) {
        let (l, w) = ((lpn / LEAF_PAGES) as usize, (lpn % LEAF_PAGES) as usize);
        if l >= self.leaves.len() {
            self.leaves.resize(l + 1, None);
        }
        let leaf = self.leaves[l].get_or_insert_with(|| Box::new([0u64; LEAF_WORDS]));
        leaf[w / 64] |= 1 << (w % 64);
    }
    /// Add `first .. first + count`.
    pub fn set_range(&mut self, first: u64, count: u64) {
        let mut lpn = first;
        let end = first + count;
        while lpn < end {
            if lpn.is_multiple_of(64) && end - lpn >= 64 {
                let (l, w) = ((lpn / LEAF_PAGES) as usize, (lpn % LEAF_PAGES) as usize);
                if l >= self.leaves.len() {
                    self.leaves.resize(l + 1, None);
                }
                let leaf = self.leaves[l].get_or_insert_with(|| Box::new([0u64; LEAF_WORDS]));
                leaf[w / 64] = u64::MAX;
                lpn += 64;
            } else {
                self.set(lpn);
                lpn += 1;
            }
        }
    }
    /// Leaves (allocated or not), 32,768 entries each.
    pub(crate) fn leaf_count(&self) -> usize {
        self.leaves.len()
    }
    /// The leaves in order, `None` where nothing is set.
    pub(crate) fn leaves(&self) -> impl Iterator<Item = Option<&[u64; LEAF_WORDS]>> {
        self.leaves.iter().map(|l| l.as_deref())
    }
    /// Set `i` and say whether it was new.
    #[inline]
    pub fn insert(&mut self, i: u64) -> bool {
        if self.get(i) {
            return false;
        }
        self.set(i);
        true
    }
    /// Add every member of `other` moved up by `shift` (a flow's logical range,
    /// [`flows`]).
    pub fn or_shifted(&mut self, other: &TouchedPages, shift: u64) {
        for (l, leaf) in other.leaves.iter().enumerate() {
            let Some(leaf) = leaf else { continue };
            for (w, &word) in leaf.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let b = bits.trailing_zeros() as u64;
                    bits &= bits - 1;
                    self.set(shift + l as u64 * LEAF_PAGES + w as u64 * 64 + b);
                }
            }
        }
    }
    /// Members.
    pub fn count(&self) -> u64 {
        self.leaves
            .iter()
            .flatten()
            .map(|l| l.iter().map(|w| w.count_ones() as u64).sum::<u64>())
            .sum()
    }
    /// Bytes held (leaves and pointers).
    pub fn heap_bytes(&self) -> usize {
        self.leaves.len() * std::mem::size_of::<Option<Box<[u64; LEAF_WORDS]>>>()
            + self.leaves.iter().flatten().count() * LEAF_WORDS * 8
    }
}

/// What a pre-pass collects besides the request count and the highest byte.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrepassOptions {
    /// Collect the touched LPNs of pages of this size ([`Prepass::touched`]).
    pub page_size_bytes: Option<u64>,
    /// With `page_size_bytes`: LPNs taken modulo this many pages (`ftl.wrap_offsets`).
    pub wrap_pages: Option<u64>,
    /// Collect the touched chunks of this many bytes ([`Prepass::touched_chunks`]).
    pub chunk_bytes: Option<u64>,
}

/// One pass over a source: request count, highest byte, and what `opts` asks for.
pub fn prepass<S: RequestSource>(src: &mut S, opts: PrepassOptions) -> Result<Prepass, TraceError> {
    prepass_with(src, opts, |_| Ok(()))
}

/// [`prepass`], handing each request to `each` as it is read (to keep it for the replay:
/// [`spill`]).
pub fn prepass_with<S: RequestSource>(
    src: &mut S,
    opts: PrepassOptions,
    mut each: impl FnMut(&HostRequest) -> Result<(), TraceError>,
) -> Result<Prepass, TraceError> {
    let mut p = Prepass::default();
    while let Some(r) = src.next_request()? {
        each(&r)?;
        p.requests += 1;
        p.max_end_bytes = p.max_end_bytes.max(r.offset_bytes + r.len_bytes);
        if let Some(cb) = opts.chunk_bytes {
            let first = r.offset_bytes / cb;
            let last = (r.offset_bytes + r.len_bytes.max(1) - 1) / cb;
            for c in first..=last {
                p.chunks += u64::from(p.touched_chunks.insert(c));
            }
        }
        if let Some(ps) = opts.page_size_bytes {
            let s = crate::hil::span(r.offset_bytes, r.len_bytes, ps);
            match opts.wrap_pages {
                // Every page of the folded space: no need to walk the request.
                Some(n) if s.pages >= n => p.touched.set_range(0, n),
                Some(n) => {
                    let first = s.first_lpn % n;
                    let head = s.pages.min(n - first);
                    p.touched.set_range(first, head);
                    p.touched.set_range(0, s.pages - head);
                }
                None => p.touched.set_range(s.first_lpn, s.pages),
            }
        }
    }
    Ok(p)
}
