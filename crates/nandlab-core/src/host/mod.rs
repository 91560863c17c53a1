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

pub mod cache;
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
    /// Bitmap of touched LPNs (bit `lpn`), when requested.
    pub touched: Vec<u64>,
}

impl Prepass {
    /// Is `lpn` marked touched?
    #[inline]
    pub fn is_touched(&self, lpn: u64) -> bool {
        self.touched
            .get((lpn / 64) as usize)
            .is_some_and(|w| w >> (lpn % 64) & 1 == 1)
    }
}

/// One pass over a source: request count, highest byte, and (when `page_size_bytes` is given)
/// the touched-LPN bitmap; with `wrap_pages = Some(n)` LPNs are taken modulo `n`.
pub fn prepass<S: RequestSource>(
    src: &mut S,
    page_size_bytes: Option<u64>,
    wrap_pages: Option<u64>,
) -> Result<Prepass, TraceError> {
    prepass_with(src, page_size_bytes, wrap_pages, |_| Ok(()))
}

/// [`prepass`], handing each request to `each` as it is read (to keep it for the replay:
/// [`spill`]).
pub fn prepass_with<S: RequestSource>(
    src: &mut S,
    page_size_bytes: Option<u64>,
    wrap_pages: Option<u64>,
    mut each: impl FnMut(&HostRequest) -> Result<(), TraceError>,
) -> Result<Prepass, TraceError> {
    let mut p = Prepass::default();
    while let Some(r) = src.next_request()? {
        each(&r)?;
        p.requests += 1;
        p.max_end_bytes = p.max_end_bytes.max(r.offset_bytes + r.len_bytes);
        if let Some(ps) = page_size_bytes {
            let s = crate::hil::span(r.offset_bytes, r.len_bytes, ps);
            for lpn in s.first_lpn..s.first_lpn + s.pages {
                let lpn = match wrap_pages {
                    Some(n) => lpn % n,
                    None => lpn,
                };
                let w = (lpn / 64) as usize;
                if w >= p.touched.len() {
                    p.touched.resize((w + 1).next_power_of_two(), 0);
                }
                p.touched[w] |= 1 << (lpn % 64);
            }
        }
    }
    Ok(p)
}
