//! File-level traces: a streaming reader of the captured strace-derived JSON-lines files
//! (`shared/traces/captured/*_fs.jsonl.gz`), the input of the object device's host layer
//! ([`crate::osd::objfs`]).
//!
//! # Record format (spec `dmm.md` §5, `CAPTURE.md` "File-level traces")
//!
//! One flat JSON object per line:
//!
//! ```text
//! {"t_ns":7093986000,"op":"read","path":"pgdata/base/5/16396","offset":790274048,"size":8192,"pid":24662,"lat_ns":230000}
//! ```
//!
//! | key | type | required for | meaning |
//! |---|---|---|---|
//! | `t_ns` | integer ≥ 0 | every record | ns since the trace's first record; never decreases |
//! | `op` | string | every record | `create`, `open`, `read`, `write`, `truncate`, `delete`, `fsync`, `rename` |
//! | `path` | non-empty string | every record | file path (relative to the workload's data directory) |
//! | `offset` | integer ≥ 0 or null | `read`, `write` | byte offset |
//! | `size` | integer ≥ 0 or null | `read`, `write`, `truncate` | bytes transferred (0 = EOF read); new length for `truncate` |
//! | `new_path` | non-empty string | `rename` | the target path |
//! | `pid`, `lat_ns` | integer ≥ 0 or null | — | process id, syscall duration (kept, not used by the model) |
//! | `kind` | string or null | — | `fsync` / `fdatasync` for an `fsync` record |
//! | `via` | string or null | — | `link` for a `rename` that was a `link(2)` (+ suppressed unlink) |
//!
//! Keys not in the table are ignored (the converter may add some); a key of the table given
//! twice is an error. Blank lines are skipped. Line endings are `\n`, `\r\n` or `\r`, decided
//! per line; a last line without one is read and counted
//! ([`FsReaderCounters::unterminated_last_line`]): a record cut there has no closing `}`.
//!
//! # Errors
//!
//! A malformed line is one [`TraceError::Parse`] naming the file, the 1-based line and the key
//! (`field`), quoting the value and saying what was expected: not a JSON object, a missing
//! required key, a value of the wrong type (a negative or fractional number, a string where a
//! number belongs, a nested object or array), an unknown `op`, or a `t_ns` earlier than the
//! previous record's (the captured traces are sorted by time; this reader does not re-sort).
//!
//! # Memory
//!
//! One reused line buffer and two reused path buffers: reading allocates nothing per record
//! once the buffers have grown to the longest line. [`fs_stats`] keeps one entry per path (the
//! namespace), nothing per record.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::input::LineReader;
use super::TraceError;

/// The operation of a file-level record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsOp {
    /// A new file (`open` with `O_CREAT` of a path not seen before, or `O_EXCL`).
    Create,
    /// An `open` of an existing file (or directory).
    Open,
    /// `size` bytes read at `offset`.
    Read,
    /// `size` bytes written at `offset`.
    Write,
    /// The file's length becomes `size`.
    Truncate,
    /// `unlink` of a file.
    Delete,
    /// `fsync` or `fdatasync` ([`FsRecord::fdatasync`]).
    Fsync,
    /// `rename(path, new_path)`, or `link(path, new_path)` + `unlink(path)` ([`FsRecord::via_link`]).
    Rename,
}

impl FsOp {
    /// Every op, in the order of [`FsOp::index`].
    pub const ALL: [FsOp; 8] = [
        FsOp::Create,
        FsOp::Open,
        FsOp::Read,
        FsOp::Write,
        FsOp::Truncate,
        FsOp::Delete,
        FsOp::Fsync,
        FsOp::Rename,
    ];

    /// The op's name in the trace.
    pub fn name(self) -> &'static str {
        match self {
            FsOp::Create => "create",
            FsOp::Open => "open",
            FsOp::Read => "read",
            FsOp::Write => "write",
            FsOp::Truncate => "truncate",
            FsOp::Delete => "delete",
            FsOp::Fsync => "fsync",
            FsOp::Rename => "rename",
        }
    }

    /// Position in [`FsOp::ALL`] (for per-op counters).
    pub fn index(self) -> usize {
        self as usize
    }

    fn from_bytes(b: &[u8]) -> Option<FsOp> {
        FsOp::ALL.into_iter().find(|o| o.name().as_bytes() == b)
    }
}

/// One record of a file-level trace. `path` and `new_path` borrow the reader's buffers and are
/// valid until the next call of [`FsJsonlReader::next_record`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsRecord<'a> {
    /// ns since the first record of the trace (as in the file; not rebased).
    pub t_ns: u64,
    pub op: FsOp,
    pub path: &'a str,
    /// Target of a `rename` (`None` for other ops).
    pub new_path: Option<&'a str>,
    /// Byte offset of a `read` / `write` (0 for other ops).
    pub offset_bytes: u64,
    /// Bytes of a `read` / `write`, the new length of a `truncate` (0 for other ops).
    pub size_bytes: u64,
    /// Process id (0 when null).
    pub pid: u64,
    /// Measured syscall duration in ns (0 when null; not used by the model).
    pub lat_ns: u64,
    /// A `rename` that was a `link(2)` + `unlink(2)` (`"via":"link"`).
    pub via_link: bool,
    /// An `fsync` record that was an `fdatasync(2)` (`"kind":"fdatasync"`).
    pub fdatasync: bool,
}

/// Counters of what the reader skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FsReaderCounters {
    /// Records returned.
    pub records: u64,
    /// Blank lines skipped.
    pub blank_lines: u64,
    /// 1 when the file's last line has no line ending (the file may have been cut short; a
    /// record cut inside has no closing `}` and is an error), else 0. Final once
    /// [`FsJsonlReader::next_record`] returned `None`.
    pub unterminated_last_line: u64,
}

/// Streaming reader of a file-level JSON-lines trace (gzip / zstd / plain, detected by
/// content). See the [module documentation](self) for the format and the errors.
pub struct FsJsonlReader {
    file: PathBuf,
    lines: LineReader,
    path_buf: String,
    new_path_buf: String,
    prev_t: u64,
    prev_line: u64,
    counters: FsReaderCounters,
}

impl FsJsonlReader {
    /// Open `path`.
    ///
    /// # Errors
    /// [`TraceError::Io`] when the file cannot be opened.
    pub fn open(path: &Path) -> Result<FsJsonlReader, TraceError> {
        Ok(FsJsonlReader {
            file: path.to_path_buf(),
            lines: LineReader::open(path)?,
            path_buf: String::with_capacity(256),
            new_path_buf: String::with_capacity(256),
            prev_t: 0,
            prev_line: 0,
            counters: FsReaderCounters::default(),
        })
    }

    /// The file being read.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// 1-based number of the last line read.
    pub fn line(&self) -> u64 {
        self.lines.lines
    }

    /// What was read and skipped so far.
    pub fn counters(&self) -> FsReaderCounters {
        self.counters
    }

    /// The next record, or `None` at the end of the file.
    ///
    /// # Errors
    /// [`TraceError::Parse`] for a malformed line (file, line, field), [`TraceError::Io`] for
    /// a read failure or a truncated compressed stream, [`TraceError::NoRequests`] at the end
    /// of a file without a single record (as a block trace: a run that replays nothing is an
    /// error, not an empty result; issue 28).
    pub fn next_record(&mut self) -> Result<Option<FsRecord<'_>>, TraceError> {
        loop {
            let Some((s, e)) = self.lines.next_line(&self.file)? else {
                self.counters.unterminated_last_line = u64::from(self.lines.unterminated);
                if self.counters.records == 0 {
                    return Err(TraceError::NoRequests {
                        file: self.file.clone(),
                        detail: format!(
                            "the file has {} lines, none of them a record (empty or blank only)",
                            self.lines.lines
                        ),
                    });
                }
                return Ok(None);
            };
            let line_no = self.lines.lines;
            if self.lines.buf[s..e].iter().all(u8::is_ascii_whitespace) {
                self.counters.blank_lines += 1;
                continue;
            }
            let raw = parse_line(
                &self.lines.buf[s..e],
                &mut self.path_buf,
                &mut self.new_path_buf,
            )
            .map_err(|(field, msg)| self.err(line_no, field, msg))?;
            let rec = raw.finish().map_err(|(f, m)| self.err(line_no, f, m))?;
            if rec.t_ns < self.prev_t {
                return Err(self.err(
                    line_no,
                    "t_ns",
                    format!(
                        "{} ns is earlier than {} ns of the previous record (line {}); \
                         file-level traces must be sorted by t_ns",
                        rec.t_ns, self.prev_t, self.prev_line
                    ),
                ));
            }
            self.prev_t = rec.t_ns;
            self.prev_line = line_no;
            self.counters.records += 1;
            return Ok(Some(FsRecord {
                t_ns: rec.t_ns,
                op: rec.op,
                path: &self.path_buf,
                new_path: rec.has_new_path.then_some(self.new_path_buf.as_str()),
                offset_bytes: rec.offset,
                size_bytes: rec.size,
                pid: rec.pid,
                lat_ns: rec.lat_ns,
                via_link: rec.via_link,
                fdatasync: rec.fdatasync,
            }));
        }
    }

    fn err(&self, line: u64, field: &'static str, msg: String) -> TraceError {
        TraceError::Parse {
            file: self.file.clone(),
            line,
            field,
            msg,
        }
    }
}

/// The fields of one line before the per-op checks.
#[derive(Default)]
struct Raw {
    t_ns: Option<u64>,
    op: Option<FsOp>,
    op_text: Option<String>,
    has_path: bool,
    has_new_path: bool,
    offset: Option<u64>,
    size: Option<u64>,
    pid: u64,
    lat_ns: u64,
    via_link: bool,
    fdatasync: bool,
}

/// A record's scalar fields, checked.
struct Checked {
    t_ns: u64,
    op: FsOp,
    has_new_path: bool,
    offset: u64,
    size: u64,
    pid: u64,
    lat_ns: u64,
    via_link: bool,
    fdatasync: bool,
}

type FieldErr = (&'static str, String);

impl Raw {
    fn finish(self) -> Result<Checked, FieldErr> {
        let t_ns = self
            .t_ns
            .ok_or_else(|| ("t_ns", "missing (expected an integer ≥ 0)".to_string()))?;
        let op = match (self.op, self.op_text) {
            (Some(op), _) => op,
            (None, Some(t)) => {
                return Err((
                    "op",
                    format!(
                        "unknown op \"{t}\" (expected one of create, open, read, write, \
                         truncate, delete, fsync, rename)"
                    ),
                ))
            }
            (None, None) => return Err(("op", "missing (expected a string)".to_string())),
        };
        if !self.has_path {
            return Err(("path", "missing (expected a non-empty string)".to_string()));
        }
        let need = |v: Option<u64>, key: &'static str| {
            v.ok_or_else(|| {
                (
                    key,
                    format!("missing or null (a `{}` record needs it)", op.name()),
                )
            })
        };
        let (offset, size) = match op {
            FsOp::Read | FsOp::Write => (need(self.offset, "offset")?, need(self.size, "size")?),
            FsOp::Truncate => (0, need(self.size, "size")?),
            _ => (0, 0),
        };
        if op == FsOp::Rename && !self.has_new_path {
            return Err((
                "new_path",
                "missing (a `rename` record needs a non-empty string)".to_string(),
            ));
        }
        if matches!(op, FsOp::Read | FsOp::Write) && offset.checked_add(size).is_none() {
            return Err((
                "size",
                format!("offset {offset} + size {size} overflows 2^64 bytes"),
            ));
        }
        Ok(Checked {
            t_ns,
            op,
            has_new_path: op == FsOp::Rename && self.has_new_path,
            offset,
            size,
            pid: self.pid,
            lat_ns: self.lat_ns,
            via_link: self.via_link,
            fdatasync: self.fdatasync,
        })
    }
}

/// The keys a record may hold once each (a second one is an error: a damaged line, or a
/// record glued inside another).
const KNOWN_KEYS: [&str; 10] = [
    "t_ns", "op", "path", "new_path", "offset", "size", "pid", "lat_ns", "kind", "via",
];

/// Parse one flat JSON object. Strings of `path` / `new_path` go to the buffers.
fn parse_line(b: &[u8], path: &mut String, new_path: &mut String) -> Result<Raw, FieldErr> {
    let mut p = Parser { b, i: 0 };
    let mut raw = Raw::default();
    let mut seen = 0u16;
    p.ws();
    if p.peek() != Some(b'{') {
        return Err((
            "record",
            format!(
                "not a JSON object: {} (expected one {{\"t_ns\":…,\"op\":…,\"path\":…}} per line)",
                quote(b)
            ),
        ));
    }
    p.i += 1;
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            p.ws();
            let key_start = p.i;
            let key = p.key().map_err(|m| ("record", m))?;
            let key_bytes = &b[key.0..key.1];
            p.ws();
            if p.peek() != Some(b':') {
                return Err((
                    "record",
                    format!("expected `:` after key at byte {}", key_start + 1),
                ));
            }
            p.i += 1;
            p.ws();
            let k = match key_bytes {
                b"t_ns" => 0,
                b"op" => 1,
                b"path" => 2,
                b"new_path" => 3,
                b"offset" => 4,
                b"size" => 5,
                b"pid" => 6,
                b"lat_ns" => 7,
                b"kind" => 8,
                b"via" => 9,
                _ => KNOWN_KEYS.len(),
            };
            if k < KNOWN_KEYS.len() {
                if seen & (1 << k) != 0 {
                    return Err((
                        KNOWN_KEYS[k],
                        "the key is in the record twice (a damaged line, or a record glued \
                         inside another?); expected each key once, one record per line"
                            .to_string(),
                    ));
                }
                seen |= 1 << k;
            }
            match key_bytes {
                b"t_ns" => raw.t_ns = Some(p.uint("t_ns")?),
                b"offset" => raw.offset = p.opt_uint("offset")?,
                b"size" => raw.size = p.opt_uint("size")?,
                b"pid" => raw.pid = p.opt_uint("pid")?.unwrap_or(0),
                b"lat_ns" => raw.lat_ns = p.opt_uint("lat_ns")?.unwrap_or(0),
                b"op" => {
                    let (s, e) = p.raw_string("op")?;
                    let v = &b[s..e];
                    raw.op = FsOp::from_bytes(v);
                    if raw.op.is_none() {
                        raw.op_text = Some(String::from_utf8_lossy(&v[..v.len().min(40)]).into());
                    }
                }
                b"path" => {
                    p.string_into("path", path)?;
                    raw.has_path = true;
                }
                b"new_path" => {
                    if p.null() {
                        raw.has_new_path = false;
                    } else {
                        p.string_into("new_path", new_path)?;
                        raw.has_new_path = true;
                    }
                }
                b"kind" => {
                    if !p.null() {
                        let (s, e) = p.raw_string("kind")?;
                        raw.fdatasync = &b[s..e] == b"fdatasync";
                    }
                }
                b"via" => {
                    if !p.null() {
                        let (s, e) = p.raw_string("via")?;
                        raw.via_link = &b[s..e] == b"link";
                    }
                }
                _ => p.skip_scalar().map_err(|m| ("record", m))?,
            }
            p.ws();
            match p.peek() {
                Some(b',') => p.i += 1,
                Some(b'}') => {
                    p.i += 1;
                    break;
                }
                _ => {
                    return Err((
                        "record",
                        format!(
                            "expected `,` or `}}` at byte {} of the line (truncated line?)",
                            p.i + 1
                        ),
                    ))
                }
            }
        }
    }
    p.ws();
    if p.i != b.len() {
        return Err((
            "record",
            format!(
                "text after the JSON object at byte {} (one object per line)",
                p.i + 1
            ),
        ));
    }
    Ok(raw)
}

fn quote(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(40)]);
    let mut q = format!("{:?}", s.as_ref());
    if b.len() > 40 {
        q.push('…');
    }
    q
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn null(&mut self) -> bool {
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    /// The value as it appears (for messages), up to the next `,` or `}`.
    fn value_text(&self) -> String {
        let rest = &self.b[self.i..];
        let end = rest
            .iter()
            .position(|&c| c == b',' || c == b'}')
            .unwrap_or(rest.len());
        quote(&rest[..end])
    }

    /// A key string without escapes: its byte range.
    fn key(&mut self) -> Result<(usize, usize), String> {
        if self.peek() != Some(b'"') {
            return Err(format!(
                "expected a quoted key at byte {}, found {}",
                self.i + 1,
                self.value_text()
            ));
        }
        let s = self.i + 1;
        match memchr::memchr(b'"', &self.b[s..]) {
            Some(k) => {
                self.i = s + k + 1;
                Ok((s, s + k))
            }
            None => Err("unterminated key (truncated line?)".to_string()),
        }
    }

    fn uint(&mut self, field: &'static str) -> Result<u64, FieldErr> {
        let s = self.i;
        let mut v: u64 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
                .ok_or_else(|| {
                    (
                        field,
                        format!("{} is larger than 2^64 − 1", self.value_text()),
                    )
                })?;
            self.i += 1;
        }
        let end_ok = matches!(
            self.peek(),
            None | Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
        );
        if self.i == s || !end_ok {
            self.i = s;
            return Err((
                field,
                format!(
                    "{} is not an integer ≥ 0 (expected an integer ≥ 0)",
                    self.value_text()
                ),
            ));
        }
        Ok(v)
    }

    fn opt_uint(&mut self, field: &'static str) -> Result<Option<u64>, FieldErr> {
        if self.null() {
            Ok(None)
        } else {
            self.uint(field).map(Some)
        }
    }

    /// A string without escapes (op, kind, via): its byte range.
    fn raw_string(&mut self, field: &'static str) -> Result<(usize, usize), FieldErr> {
        if self.peek() != Some(b'"') {
            return Err((
                field,
                format!("{} is not a string (expected a string)", self.value_text()),
            ));
        }
        let s = self.i + 1;
        match memchr::memchr2(b'"', b'\\', &self.b[s..]) {
            Some(k) if self.b[s + k] == b'"' => {
                self.i = s + k + 1;
                Ok((s, s + k))
            }
            Some(_) => Err((field, "escape sequences are not expected here".to_string())),
            None => Err((field, "unterminated string (truncated line?)".to_string())),
        }
    }

    /// A JSON string (with escapes) into `out` (cleared first); must be non-empty.
    fn string_into(&mut self, field: &'static str, out: &mut String) -> Result<(), FieldErr> {
        out.clear();
        if self.peek() != Some(b'"') {
            return Err((
                field,
                format!(
                    "{} is not a string (expected a non-empty string)",
                    self.value_text()
                ),
            ));
        }
        self.i += 1;
        loop {
            let rest = &self.b[self.i..];
            let Some(k) = memchr::memchr2(b'"', b'\\', rest) else {
                return Err((field, "unterminated string (truncated line?)".to_string()));
            };
            let chunk = std::str::from_utf8(&rest[..k])
                .map_err(|_| (field, "not valid UTF-8".to_string()))?;
            out.push_str(chunk);
            self.i += k + 1;
            if rest[k] == b'"' {
                break;
            }
            let esc = self
                .peek()
                .ok_or_else(|| (field, "unterminated escape (truncated line?)".to_string()))?;
            self.i += 1;
            match esc {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let hi = self.hex4(field)?;
                    let c = if (0xD800..0xDC00).contains(&hi) {
                        if !self.b[self.i..].starts_with(b"\\u") {
                            return Err((field, "lone UTF-16 surrogate in \\u escape".to_string()));
                        }
                        self.i += 2;
                        let lo = self.hex4(field)?;
                        if !(0xDC00..0xE000).contains(&lo) {
                            return Err((field, "invalid UTF-16 surrogate pair".to_string()));
                        }
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                    } else {
                        char::from_u32(hi)
                    };
                    out.push(c.ok_or_else(|| (field, "invalid \\u escape".to_string()))?);
                }
                other => {
                    return Err((
                        field,
                        format!("invalid escape `\\{}`", char::from(other).escape_default()),
                    ))
                }
            }
        }
        if out.is_empty() {
            return Err((
                field,
                "empty string (expected a non-empty path)".to_string(),
            ));
        }
        Ok(())
    }

    fn hex4(&mut self, field: &'static str) -> Result<u32, FieldErr> {
        let h = self
            .b
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| (field, "invalid \\u escape".to_string()))?;
        self.i += 4;
        Ok(h)
    }

    /// Skip the value of an unknown key: a string, number, `true`, `false` or `null`.
    fn skip_scalar(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'"') => {
                self.i += 1;
                loop {
                    let Some(k) = memchr::memchr2(b'"', b'\\', &self.b[self.i..]) else {
                        return Err("unterminated string (truncated line?)".to_string());
                    };
                    let c = self.b[self.i + k];
                    self.i += k + 1;
                    if c == b'"' {
                        return Ok(());
                    }
                    self.i += 1; // the escaped character
                }
            }
            Some(b'{' | b'[') => Err(format!(
                "nested value {} (records are flat objects)",
                self.value_text()
            )),
            Some(_) => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
                ) {
                    self.i += 1;
                }
                Ok(())
            }
            None => Err("missing value (truncated line?)".to_string()),
        }
    }
}

/// Table-17-style statistics of a file-level trace (thesis T17; spec `dmm.md` §5 "Trace
/// contents"), plus record counts.
///
/// Definitions (those that reproduce the spec's measured values): only `read` / `write`
/// records with `size > 0` count as requests; `files` = paths with at least one such
/// request; a request is sequential when its offset equals the end of the previous `read` or
/// `write` (of either kind, any size) on the same path.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FsTraceStats {
    /// Records in the file.
    pub records: u64,
    /// Records per op, in [`FsOp::ALL`] order, keyed by op name.
    pub ops: std::collections::BTreeMap<&'static str, u64>,
    /// Distinct values of `path` (a name that is only ever a rename target is not counted).
    pub distinct_paths: u64,
    /// Paths with at least one read or write of > 0 bytes (T17 "files").
    pub files: u64,
    /// Reads / writes of > 0 bytes.
    pub reads: u64,
    pub writes: u64,
    /// Reads of 0 bytes (EOF), not counted as requests.
    pub eof_reads: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Mean request size in KiB (T17 "avg req (KB)").
    pub avg_request_kib: f64,
    /// Writes / (reads + writes), percent (T17 "write %").
    pub write_percent: f64,
    /// Sequential writes / writes, percent (T17 "write seq %").
    pub write_seq_percent: f64,
    /// Sequential reads / reads, percent (T17 "read seq %").
    pub read_seq_percent: f64,
    /// `t_ns` of the last record, in seconds.
    pub duration_s: f64,
    /// Writes smaller than 2 KiB (one page of the T16 device).
    pub writes_under_2kib: u64,
    /// `rename` records that were `link` + `unlink`.
    pub link_renames: u64,
    /// `delete` records of a path no earlier record other than a `delete` named (the `rm -rf`
    /// of a tree that existed before the trace; a path deleted twice counts twice).
    pub deletes_of_unseen_paths: u64,
    /// Paths whose first record is not `create` (they exist before the trace; objfs
    /// preconditions them).
    pub preexisting_paths: u64,
    /// Largest end offset of any read or write.
    pub max_end_bytes: u64,
    /// Sum over paths of their largest read/write end offset: the data the trace's files hold
    /// at most (an upper bound of the live data, since deleted files count too); what
    /// `nandlab reproduce dmm` sizes the device by (spec §5: footprint ≈ 70 % of capacity).
    pub footprint_bytes: u64,
}

/// Read a whole file-level trace and compute [`FsTraceStats`]. Memory: one entry per path.
///
/// # Errors
/// The reader's errors (a malformed line names file, line and field).
pub fn fs_stats(path: &Path) -> Result<FsTraceStats, TraceError> {
    struct PathState {
        prev_end: Option<u64>,
        has_data: bool,
        /// Named by a record other than `delete`.
        named: bool,
        /// Named in a `path` field (not only as a `new_path`).
        as_path: bool,
        /// Largest read/write end offset under this name.
        max_end: u64,
    }
    let mut rd = FsJsonlReader::open(path)?;
    let mut st = FsTraceStats::default();
    let mut per_op = [0u64; 8];
    let mut paths: HashMap<Box<str>, PathState> = HashMap::new();
    let (mut rseq, mut wseq) = (0u64, 0u64);
    let mut last_t = 0;
    let new_state = || PathState {
        prev_end: None,
        has_data: false,
        named: false,
        as_path: false,
        max_end: 0,
    };
    while let Some(r) = rd.next_record()? {
        st.records += 1;
        per_op[r.op.index()] += 1;
        last_t = r.t_ns;
        if !paths.contains_key(r.path) {
            if r.op != FsOp::Create {
                st.preexisting_paths += 1;
            }
            paths.insert(r.path.into(), new_state());
        }
        if let Some(ps) = paths.get_mut(r.path) {
            ps.as_path = true;
            if r.op == FsOp::Delete {
                st.deletes_of_unseen_paths += u64::from(!ps.named);
            } else {
                ps.named = true;
            }
        }
        if let Some(np) = r.new_path {
            match paths.get_mut(np) {
                Some(ps) => ps.named = true,
                None => {
                    let mut ps = new_state();
                    ps.named = true;
                    paths.insert(np.into(), ps);
                }
            }
            if r.via_link {
                st.link_renames += 1;
            }
        }
        if let (FsOp::Read | FsOp::Write, Some(ps)) = (r.op, paths.get_mut(r.path)) {
            let seq = ps.prev_end == Some(r.offset_bytes);
            ps.prev_end = Some(r.offset_bytes + r.size_bytes);
            ps.max_end = ps.max_end.max(r.offset_bytes + r.size_bytes);
            st.max_end_bytes = st.max_end_bytes.max(r.offset_bytes + r.size_bytes);
            if r.size_bytes == 0 {
                if r.op == FsOp::Read {
                    st.eof_reads += 1;
                }
                continue;
            }
            ps.has_data = true;
            if r.op == FsOp::Read {
                st.reads += 1;
                st.read_bytes += r.size_bytes;
                rseq += u64::from(seq);
            } else {
                st.writes += 1;
                st.write_bytes += r.size_bytes;
                wseq += u64::from(seq);
                if r.size_bytes < 2048 {
                    st.writes_under_2kib += 1;
                }
            }
        }
    }
    if st.records == 0 {
        return Err(TraceError::NoRequests {
            file: path.to_path_buf(),
            detail: "no records (empty file or only blank lines)".to_string(),
        });
    }
    for op in FsOp::ALL {
        st.ops.insert(op.name(), per_op[op.index()]);
    }
    st.distinct_paths = paths.values().filter(|p| p.as_path).count() as u64;
    st.footprint_bytes = paths.values().map(|p| p.max_end).sum();
    st.files = paths.values().filter(|p| p.has_data).count() as u64;
    let req = st.reads + st.writes;
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    st.avg_request_kib = if req == 0 {
        0.0
    } else {
        (st.read_bytes + st.write_bytes) as f64 / req as f64 / 1024.0
    };
    st.write_percent = pct(st.writes, req);
    st.write_seq_percent = pct(wseq, st.writes);
    st.read_seq_percent = pct(rseq, st.reads);
    st.duration_s = last_t as f64 / 1e9;
    Ok(st)
}
