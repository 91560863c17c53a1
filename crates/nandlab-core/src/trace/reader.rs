//! [`TraceReader`]: streaming parse, device mapping, bounded reordering and rebasing.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use super::input::LineReader;
use super::parse::{parse_line, Raw, Rec};
use super::{BlkparseEvent, HostRequest, Op, TraceError, TraceFormat, TraceOptions};

const MIB: u64 = 1 << 20;

/// What the reader saw so far. All counts are of lines or requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReaderCounters {
    /// Physical lines read (after decompression), including skipped ones.
    pub lines_read: u64,
    /// Requests returned by [`TraceReader::next_request`].
    pub requests_emitted: u64,
    /// Header lines skipped (at most one per file).
    pub header_lines_skipped: u64,
    /// Lines starting with `#` skipped.
    pub comment_lines_skipped: u64,
    /// Blank lines skipped.
    pub blank_lines_skipped: u64,
    /// Lines that are not requests: other blkparse actions, discards, summary lines; vSCSI
    /// opcodes other than READ/WRITE.
    pub non_request_skipped: u64,
    /// Documented zero-length commands skipped (blkparse flushes, vSCSI transfer length 0).
    pub zero_size_skipped: u64,
    /// Requests emitted after a request that follows them in the file.
    pub requests_reordered: u64,
    /// Requests more than the reorder window late, given the last emitted time.
    pub requests_clamped: u64,
    /// Requests of other devices dropped by [`TraceOptions::device`].
    pub dropped_device_filter: u64,
}

/// Line-level reader: yields parsed requests in file order, with their line numbers.
pub(crate) struct RawReader {
    file: PathBuf,
    lines: LineReader,
    format: TraceFormat,
    blk_event: BlkparseEvent,
    discards: bool,
    seen_data: bool,
    pub(crate) counters: ReaderCounters,
}

impl RawReader {
    pub(crate) fn open(
        path: &Path,
        format: TraceFormat,
        blk_event: BlkparseEvent,
        discards: bool,
    ) -> Result<RawReader, TraceError> {
        Ok(RawReader {
            file: path.to_path_buf(),
            lines: LineReader::open(path)?,
            format,
            blk_event,
            discards,
            seen_data: false,
            counters: ReaderCounters::default(),
        })
    }

    /// Next request in file order with its 1-based line number.
    #[inline(always)]
    pub(crate) fn next_raw(&mut self) -> Result<Option<(Raw, u64)>, TraceError> {
        loop {
            let Some((s, e)) = self.lines.next_line(&self.file)? else {
                return Ok(None);
            };
            self.counters.lines_read += 1;
            let line_no = self.lines.lines;
            let mut line = &self.lines.buf[s..e];
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            let Some(first) = line.iter().position(|&c| c != b' ' && c != b'\t') else {
                self.counters.blank_lines_skipped += 1;
                continue;
            };
            let c0 = line[first];
            if c0 == b'#' {
                self.counters.comment_lines_skipped += 1;
                continue;
            }
            if !self.seen_data {
                self.seen_data = true;
                if self.format != TraceFormat::Blkparse
                    && !(c0.is_ascii_digit() || c0 == b'-' || c0 == b'+' || c0 == b'.')
                {
                    self.counters.header_lines_skipped += 1;
                    continue;
                }
            }
            match parse_line(self.format, line, self.blk_event) {
                Ok(Rec::Req(r)) if r.op == Op::Trim && !self.discards => {
                    self.counters.non_request_skipped += 1
                }
                Ok(Rec::Req(r)) => return Ok(Some((r, line_no))),
                Ok(Rec::ZeroSize) => self.counters.zero_size_skipped += 1,
                Ok(Rec::NonRequest) => self.counters.non_request_skipped += 1,
                Err(fe) => {
                    return Err(TraceError::Parse {
                        file: self.file.clone(),
                        line: line_no,
                        field: fe.field,
                        msg: format!("{} (format {})", fe.msg, self.format),
                    })
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    t: u64,
    line: u64,
    op: Op,
    offset: u64,
    len: u64,
    overtaken: bool,
}

/// Streaming trace reader. See the [module documentation](super) for formats, the
/// out-of-order policy and the multi-device policy.
pub struct TraceReader {
    raw: RawReader,
    filter: Option<u32>,
    bases: Vec<(u32, u64)>,
    window: usize,
    pending: VecDeque<Pending>,
    input_done: bool,
    base_ns: Option<u64>,
    last_t: u64,
    last_line: u64,
}

impl std::fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("file", &self.raw.file)
            .field("format", &self.raw.format)
            .field("counters", &self.raw.counters)
            .finish_non_exhaustive()
    }
}

impl TraceReader {
    /// Open a trace (gzip / zstd decompressed transparently), sniffing the format unless
    /// `opts.format` is set. For merged multi-device formats this reads the file once to find
    /// each device's extent.
    ///
    /// Errors: [`TraceError::Io`] (cannot open/read, truncated compressed stream),
    /// [`TraceError::UnknownFormat`], [`TraceError::NoRequests`] (no request at all, or none
    /// left after the device filter), [`TraceError::InvalidOption`] (`device` on a format
    /// without a device column), and any [`TraceError::Parse`] met while finding the first
    /// request (or, when merging, anywhere in the file).
    pub fn open(path: &Path, opts: &TraceOptions) -> Result<TraceReader, TraceError> {
        let format = match opts.format {
            Some(f) => f,
            None => super::sniff::sniff_format(path)?,
        };
        if let Some(d) = opts.device {
            if !format.has_device_column() {
                return Err(TraceError::InvalidOption {
                    file: path.to_path_buf(),
                    option: "device",
                    msg: format!(
                        "value {d}: format {format} has no device column; expected no device \
                         (formats with devices: spc, disksim, mqsim, tencent, msr, systor)"
                    ),
                });
            }
        }
        let mut bases = Vec::new();
        if format.is_multi_device() && opts.device.is_none() {
            let mut rr = RawReader::open(path, format, opts.blkparse_event, opts.discards)?;
            let mut max_end: BTreeMap<u32, u64> = BTreeMap::new();
            while let Some((r, _)) = rr.next_raw()? {
                let e = max_end.entry(r.device).or_insert(0);
                *e = (*e).max(r.offset + r.len);
            }
            if max_end.len() > 1 {
                let mut acc: u64 = 0;
                for (&d, &end) in &max_end {
                    bases.push((d, acc));
                    let span = end.div_ceil(MIB).saturating_mul(MIB);
                    acc = acc
                        .checked_add(span)
                        .ok_or_else(|| TraceError::InvalidOption {
                            file: path.to_path_buf(),
                            option: "device",
                            msg: "merging the devices overflows a 2^64-byte address space; \
                              expected a device filter (device = n)"
                                .into(),
                        })?;
                }
            }
        }
        let raw = RawReader::open(path, format, opts.blkparse_event, opts.discards)?;
        let mut rd = TraceReader {
            raw,
            filter: opts.device,
            bases,
            window: opts.reorder_window,
            pending: VecDeque::with_capacity(opts.reorder_window.min(1 << 16) + 1),
            input_done: false,
            base_ns: None,
            last_t: 0,
            last_line: 0,
        };
        match rd.read_one()? {
            Some(p) => rd.insert(p)?,
            None => {
                let c = &rd.raw.counters;
                let filt = match opts.device {
                    Some(d) => format!(
                        ", {} dropped by the filter device = {d}",
                        c.dropped_device_filter
                    ),
                    None => String::new(),
                };
                return Err(TraceError::NoRequests {
                    file: path.to_path_buf(),
                    detail: format!(
                        "format {format}: {} lines ({} header, {} comment, {} blank, {} \
                         non-request, {} zero-length{filt})",
                        c.lines_read,
                        c.header_lines_skipped,
                        c.comment_lines_skipped,
                        c.blank_lines_skipped,
                        c.non_request_skipped,
                        c.zero_size_skipped
                    ),
                });
            }
        }
        Ok(rd)
    }

    /// The trace's format (given or sniffed).
    pub fn format(&self) -> TraceFormat {
        self.raw.format
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.raw.file
    }

    /// Counters so far (final once [`TraceReader::next_request`] returned `None`).
    pub fn counters(&self) -> &ReaderCounters {
        &self.raw.counters
    }

    /// For merged multi-device traces: `(device, base offset in bytes)` in ascending device
    /// order; empty when nothing was merged (one device, a device filter, or a single-device
    /// format).
    pub fn device_bases(&self) -> &[(u32, u64)] {
        &self.bases
    }

    /// The next request in non-decreasing `arrival_ns` order, or `None` at the end.
    ///
    /// Errors: [`TraceError::Parse`] for a bad line, [`TraceError::Io`] for a read error,
    /// [`TraceError::OutOfOrder`] with `reorder_window = 0`.
    #[inline]
    pub fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        loop {
            if self.pending.len() > self.window || (self.input_done && !self.pending.is_empty()) {
                if let Some(r) = self.emit() {
                    return Ok(Some(r));
                }
            }
            if self.input_done {
                return Ok(None);
            }
            match self.read_one()? {
                Some(p) => self.insert(p)?,
                None => self.input_done = true,
            }
        }
    }

    #[inline(always)]
    fn read_one(&mut self) -> Result<Option<Pending>, TraceError> {
        loop {
            let Some((r, line)) = self.raw.next_raw()? else {
                return Ok(None);
            };
            let mut offset = r.offset;
            if let Some(d) = self.filter {
                if r.device != d {
                    self.raw.counters.dropped_device_filter += 1;
                    continue;
                }
            } else if !self.bases.is_empty() {
                let base = match self.bases.binary_search_by_key(&r.device, |&(d, _)| d) {
                    Ok(i) => self.bases[i].1,
                    Err(_) => {
                        return Err(TraceError::Io {
                            file: self.raw.file.clone(),
                            msg: format!(
                                "line {line}: device {} was not seen in the first pass (file \
                                 changed while reading?)",
                                r.device
                            ),
                        })
                    }
                };
                offset = match offset
                    .checked_add(base)
                    .filter(|o| o.checked_add(r.len).is_some())
                {
                    Some(o) => o,
                    None => {
                        return Err(TraceError::InvalidOption {
                            file: self.raw.file.clone(),
                            option: "device",
                            msg: format!(
                                "line {line}: merging device {} at base {base} overflows 2^64 \
                                 bytes; expected a device filter (device = n)",
                                r.device
                            ),
                        })
                    }
                };
            }
            return Ok(Some(Pending {
                t: r.time_ns,
                line,
                op: r.op,
                offset,
                len: r.len,
                overtaken: false,
            }));
        }
    }

    #[inline(always)]
    fn insert(&mut self, mut p: Pending) -> Result<(), TraceError> {
        if self.base_ns.is_some() && p.t < self.last_t {
            if self.window == 0 {
                return Err(TraceError::OutOfOrder {
                    file: self.raw.file.clone(),
                    line: p.line,
                    field: time_field(self.raw.format),
                    time_ns: p.t,
                    prev_ns: self.last_t,
                    prev_line: self.last_line,
                });
            }
            p.t = self.last_t;
            self.raw.counters.requests_clamped += 1;
        }
        match self.pending.back() {
            Some(b) if b.t > p.t => {
                let pos = self.pending.partition_point(|x| x.t <= p.t);
                for x in self.pending.range_mut(pos..) {
                    x.overtaken = true;
                }
                self.pending.insert(pos, p);
            }
            _ => self.pending.push_back(p),
        }
        Ok(())
    }

    #[inline]
    fn emit(&mut self) -> Option<HostRequest> {
        let p = self.pending.pop_front()?;
        let base = *self.base_ns.get_or_insert(p.t);
        if p.overtaken {
            self.raw.counters.requests_reordered += 1;
        }
        self.raw.counters.requests_emitted += 1;
        self.last_t = p.t;
        self.last_line = p.line;
        Some(HostRequest {
            arrival_ns: p.t.saturating_sub(base),
            op: p.op,
            offset_bytes: p.offset,
            len_bytes: p.len,
        })
    }
}

fn time_field(f: TraceFormat) -> &'static str {
    match f {
        TraceFormat::Msr | TraceFormat::Spc | TraceFormat::Systor | TraceFormat::Tencent => {
            "Timestamp"
        }
        TraceFormat::Canonical => "time_ns",
        TraceFormat::Vscsi => "time_us",
        TraceFormat::Disksim | TraceFormat::Mqsim | TraceFormat::Blkparse => "time",
    }
}

impl Iterator for TraceReader {
    type Item = Result<HostRequest, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_request().transpose()
    }
}
