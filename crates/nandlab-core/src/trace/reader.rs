//! [`TraceReader`]: streaming parse, device mapping, bounded reordering and rebasing.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use super::input::LineReader;
use super::parse::{
    blk_text_is_input, blk_text_starts_summary, columns, cut_error, cut_risk, fast_canonical,
    fast_msr, has_fast_path, is_header, parse_line, record_in_comment, FieldError, Raw, Rec,
    BLK_ACTIONS, BLK_TEXT, END_FIELD,
};
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
    /// Lines that are not requests: other blkparse actions, discards, blkparse's own text
    /// (`Input file … added`, the summary); vSCSI opcodes other than READ/WRITE.
    pub non_request_skipped: u64,
    /// blkparse: the lines of `non_request_skipped` per action (`Q`, `C`, … as blkparse
    /// writes them; `D` for discards and `D` events without data direction, when `D` is the
    /// arrival event) and `text` for blkparse's own text lines. Empty (and left out of the
    /// JSON) for other formats.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub non_request_by_action: BTreeMap<&'static str, u64>,
    /// 1 when the file's last line has no line ending (the file may have been cut short; a
    /// last field that may be a cut number is an error unless
    /// [`TraceOptions::allow_unterminated`]), else 0 (and left out of the JSON).
    #[serde(skip_serializing_if = "is_zero")]
    pub unterminated_last_line: u64,
    /// Documented zero-length commands skipped (blkparse flushes, vSCSI transfer length 0).
    pub zero_size_skipped: u64,
    /// Requests emitted after a request that follows them in the file.
    pub requests_reordered: u64,
    /// Requests more than the reorder window late, given the last emitted time.
    pub requests_clamped: u64,
    /// Requests of other devices dropped by [`TraceOptions::device`].
    pub dropped_device_filter: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Line-level reader: yields parsed requests in file order, with their line numbers.
pub(crate) struct RawReader {
    file: PathBuf,
    lines: LineReader,
    format: TraceFormat,
    blk_event: BlkparseEvent,
    discards: bool,
    allow_unterminated: bool,
    seen_data: bool,
    /// 1-based number of the first line read as data (0 before it).
    first_data_line: u64,
    /// blkparse: inside its summary (non-event lines are skipped up to the next event).
    blk_summary: bool,
    /// Past the first data-or-header line of a format with a fast path: try
    /// [`LineReader::parse_fused`] first.
    fused: bool,
    pub(crate) counters: ReaderCounters,
}

impl RawReader {
    pub(crate) fn open(
        path: &Path,
        format: TraceFormat,
        opts: &TraceOptions,
    ) -> Result<RawReader, TraceError> {
        Ok(RawReader {
            file: path.to_path_buf(),
            lines: LineReader::open(path)?,
            format,
            blk_event: opts.blkparse_event,
            discards: opts.discards,
            allow_unterminated: opts.allow_unterminated,
            seen_data: false,
            first_data_line: 0,
            blk_summary: false,
            fused: false,
            counters: ReaderCounters::default(),
        })
    }

    /// A non-request line of blkparse's action `a` (index into [`BLK_ACTIONS`]).
    fn skip_blk(&mut self, a: u8) {
        self.counters.non_request_skipped += 1;
        *self
            .counters
            .non_request_by_action
            .entry(BLK_ACTIONS[a as usize])
            .or_insert(0) += 1;
    }

    /// A parse error of line `line_no`, with a hint when it is the first data line and looks
    /// like a header that is not the format's.
    #[cold]
    fn parse_error(&self, line_no: u64, line: &[u8], fe: FieldError) -> TraceError {
        let mut msg = format!("{} (format {})", fe.msg, self.format);
        let text = line
            .trim_ascii_start()
            .first()
            .is_some_and(|c| !(c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.')));
        if line_no == self.first_data_line && text && self.format != TraceFormat::Blkparse {
            msg.push_str(&format!(
                "; the line is read as data because it is not a header of this format (a \
                 header names the columns `{}`, case-insensitive)",
                columns(self.format)
            ));
        }
        TraceError::Parse {
            file: self.file.clone(),
            line: line_no,
            field: fe.field,
            msg,
        }
    }

    /// Next request in file order with its 1-based line number.
    #[inline(always)]
    pub(crate) fn next_raw(&mut self) -> Result<Option<(Raw, u64)>, TraceError> {
        loop {
            // The common shape, split and parsed in one pass (exactly what the steps below
            // make of such a line: a data line the fast path reads whole).
            if self.fused {
                let fast = match self.format {
                    TraceFormat::Canonical => self.lines.parse_fused(fast_canonical),
                    _ => self.lines.parse_fused(fast_msr),
                };
                if let Some(Rec::Req(r)) = fast {
                    self.counters.lines_read += 1;
                    return Ok(Some((r, self.lines.lines)));
                }
            }
            let Some((s, e)) = self.lines.next_line(&self.file)? else {
                self.counters.unterminated_last_line = u64::from(self.lines.unterminated);
                return Ok(None);
            };
            self.counters.lines_read += 1;
            let line_no = self.lines.lines;
            let line = &self.lines.buf[s..e];
            let Some(first) = line.iter().position(|&c| c != b' ' && c != b'\t') else {
                if self.lines.unterminated && !self.allow_unterminated {
                    // Blanks and no line ending: a file cut right after the indentation of
                    // its last record (blkparse's events start with blanks).
                    return Err(self.parse_error(line_no, line, cut_error(self.format, line)));
                }
                self.counters.blank_lines_skipped += 1;
                continue;
            };
            let c0 = line[first];
            if c0 == b'#' {
                if let Some(j) = record_in_comment(self.format, line, self.blk_event) {
                    return Err(self.glued_to_comment(line_no, line, j));
                }
                self.counters.comment_lines_skipped += 1;
                continue;
            }
            if !self.seen_data {
                self.seen_data = true;
                self.fused = has_fast_path(self.format);
                if is_header(self.format, line) {
                    self.counters.header_lines_skipped += 1;
                    continue;
                }
                self.first_data_line = line_no;
            }
            let last = self.lines.unterminated;
            match parse_line(self.format, line, self.blk_event, last) {
                Ok(Rec::Req(r)) => {
                    if last && !self.allow_unterminated && cut_risk(self.format, line) {
                        let fe = cut_error(self.format, line);
                        return Err(self.parse_error(line_no, line, fe));
                    }
                    if r.op != Op::Trim || self.discards {
                        self.blk_summary = false;
                        return Ok(Some((r, line_no)));
                    }
                    if self.format == TraceFormat::Blkparse {
                        let a = match self.blk_event {
                            BlkparseEvent::Issue => 3, // D
                            BlkparseEvent::Queue => 9, // Q
                        };
                        self.skip_blk(a);
                    } else {
                        self.counters.non_request_skipped += 1;
                    }
                }
                Ok(Rec::ZeroSize) => {
                    self.blk_summary = false;
                    self.counters.zero_size_skipped += 1
                }
                Ok(Rec::NonRequest(None)) => self.counters.non_request_skipped += 1,
                Ok(Rec::NonRequest(Some(a))) => {
                    self.blk_summary = false;
                    self.skip_blk(a)
                }
                Ok(Rec::Text) => {
                    if self.blk_summary || blk_text_starts_summary(line) {
                        self.blk_summary = true;
                    } else if !blk_text_is_input(line) {
                        return Err(self.not_an_event(line_no, line));
                    }
                    self.skip_blk(BLK_TEXT);
                }
                Err(fe) => return Err(self.parse_error(line_no, line, fe)),
            }
        }
    }

    #[cold]
    fn glued_to_comment(&self, line_no: u64, line: &[u8], at: usize) -> TraceError {
        let rec = String::from_utf8_lossy(&line[at..line.len().min(at + 120)]);
        TraceError::Parse {
            file: self.file.clone(),
            line: line_no,
            field: END_FIELD,
            msg: format!(
                "the comment line ends in a request {rec:?} (from byte {}; a lost line break \
                 after the comment?); expected a comment without a record, and records on \
                 lines of their own (format {})",
                at + 1,
                self.format
            ),
        }
    }

    #[cold]
    fn not_an_event(&self, line_no: u64, line: &[u8]) -> TraceError {
        let t = line.trim_ascii();
        let first = String::from_utf8_lossy(&t[..t.len().min(40)]);
        TraceError::Parse {
            file: self.file.clone(),
            line: line_no,
            field: "maj,min",
            msg: format!(
                "{first:?}{}: not a blkparse event (its first token is not `maj,min`), nor \
                 blkparse's own text (`Input file … added`, or the summary after the events, \
                 from `CPU<n> (maj,min):` or `Total (maj,min):`); expected the columns `{}`",
                if t.len() > 40 { "…" } else { "" },
                columns(TraceFormat::Blkparse)
            ),
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
            let mut rr = RawReader::open(path, format, opts)?;
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
        let raw = RawReader::open(path, format, opts)?;
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
