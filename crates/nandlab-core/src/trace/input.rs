//! Opening (and transparently decompressing) a trace file, and reading it line by line into
//! one reused buffer.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::TraceError;

/// Size of the read buffers (line buffer and the compressed-input buffer).
pub(crate) const BUF_SIZE: usize = 256 * 1024;
/// Longest line accepted (the line buffer grows up to this).
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// Compression detected from the magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    fn label(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => " (truncated or corrupt gzip stream?)",
            Compression::Zstd => " (truncated or corrupt zstd stream?)",
        }
    }
}

pub(crate) fn io_err(path: &Path, msg: impl Into<String>) -> TraceError {
    TraceError::Io {
        file: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Open `path`, detecting gzip / zstd by magic bytes.
pub(crate) fn open_stream(path: &Path) -> Result<(Box<dyn Read + Send>, Compression), TraceError> {
    let mut f = File::open(path).map_err(|e| io_err(path, format!("cannot open: {e}")))?;
    let mut magic = [0u8; 4];
    let mut n = 0;
    while n < magic.len() {
        match f.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(path, format!("cannot read: {e}"))),
        }
    }
    f.seek(SeekFrom::Start(0))
        .map_err(|e| io_err(path, format!("cannot seek: {e}")))?;
    if n >= 2 && magic[..2] == [0x1f, 0x8b] {
        let dec = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(BUF_SIZE, f));
        Ok((Box::new(dec), Compression::Gzip))
    } else if n == 4 && magic == [0x28, 0xb5, 0x2f, 0xfd] {
        let dec = zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(BUF_SIZE, f))
            .map_err(|e| io_err(path, format!("cannot start zstd decoder: {e}")))?;
        Ok((Box::new(dec), Compression::Zstd))
    } else {
        Ok((Box::new(f), Compression::None))
    }
}

/// Reads lines into one reused buffer; a line is returned as a range into [`LineReader::buf`],
/// without its line ending. Line endings are decided per line, as Python's universal newlines
/// do: `\n`, `\r\n` and a lone `\r` each end a line, in any mix within one file (a file that
/// is LF at the start and CR-only further on loses no line break). A UTF-8 byte-order mark at
/// the start of the file is skipped. A last line without a line ending is returned like any
/// other and flagged in [`LineReader::unterminated`].
pub(crate) struct LineReader {
    src: Box<dyn Read + Send>,
    compression: Compression,
    pub(crate) buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Lines returned so far (= 1-based number of the last line returned).
    pub(crate) lines: u64,
    /// The last line returned is the end of the file and has no line ending.
    pub(crate) unterminated: bool,
    /// A `\r` was read: lines are then split at `\n` or `\r` (two-byte search); until then
    /// at `\n` alone, the faster search (each block read is checked for `\r` once).
    cr_seen: bool,
    /// The start of the file was looked at (BOM).
    started: bool,
}

impl LineReader {
    pub(crate) fn open(path: &Path) -> Result<LineReader, TraceError> {
        let (src, compression) = open_stream(path)?;
        Ok(LineReader {
            src,
            compression,
            buf: vec![0; BUF_SIZE],
            start: 0,
            end: 0,
            eof: false,
            lines: 0,
            unterminated: false,
            cr_seen: false,
            started: false,
        })
    }

    /// Look at the first bytes: skip a UTF-8 BOM.
    #[cold]
    fn start_up(&mut self, path: &Path) -> Result<(), TraceError> {
        self.started = true;
        while !self.eof && self.end < 3 {
            let before = self.end;
            self.fill(path)?;
            if self.end == before && !self.eof {
                break;
            }
        }
        if self.buf[..self.end].starts_with(&[0xEF, 0xBB, 0xBF]) {
            self.start = 3;
        }
        Ok(())
    }

    /// The next line as `start..end` into `self.buf` (without its line ending), or `None` at
    /// end of input.
    // Always inlined: the per-line path of every reader (a call per line costs ~5 % of a
    // parse; the inliner's choice changed with the number of callers).
    #[inline(always)]
    pub(crate) fn next_line(&mut self, path: &Path) -> Result<Option<(usize, usize)>, TraceError> {
        if !self.started {
            self.start_up(path)?;
        }
        loop {
            let hay = &self.buf[self.start..self.end];
            let found = if self.cr_seen {
                memchr::memchr2(b'\n', b'\r', hay)
            } else {
                memchr::memchr(b'\n', hay)
            };
            if let Some(i) = found {
                let s = self.start;
                let mut next = s + i + 1;
                if hay[i] == b'\r' {
                    if next == self.end && !self.eof {
                        // `\r` at the end of the buffer: a `\n` may follow (CRLF).
                        self.fill(path)?;
                        continue;
                    }
                    if next < self.end && self.buf[next] == b'\n' {
                        next += 1;
                    }
                }
                self.start = next;
                self.lines += 1;
                return Ok(Some((s, s + i)));
            }
            if self.eof {
                if self.start < self.end {
                    let s = self.start;
                    self.start = self.end;
                    self.lines += 1;
                    self.unterminated = true;
                    return Ok(Some((s, self.end)));
                }
                return Ok(None);
            }
            self.fill(path)?;
        }
    }

    /// Split and parse the next line in one pass: `parse` reads from the start of the line
    /// in the buffer and returns its record and the index where the record ends, which must be
    /// a `\n`, `\r\n` or `\r` already in the buffer (`parse` never reads past one). `None`
    /// (nothing consumed) otherwise: the caller reads the line with [`LineReader::next_line`].
    /// Only after the first line (the BOM is skipped there).
    #[inline(always)]
    pub(crate) fn parse_fused<T>(
        &mut self,
        parse: impl Fn(&[u8]) -> Option<(T, usize)>,
    ) -> Option<T> {
        let hay = &self.buf[self.start..self.end];
        let (rec, i) = parse(hay)?;
        let next = match *hay.get(i)? {
            b'\n' => i + 1,
            b'\r' => match hay.get(i + 1) {
                Some(b'\n') => i + 2,
                Some(_) => i + 1,
                None if self.eof => i + 1,
                None => return None, // a `\n` may follow: read on in next_line
            },
            _ => return None,
        };
        self.start += next;
        self.lines += 1;
        Some(rec)
    }

    #[cold]
    fn fill(&mut self, path: &Path) -> Result<(), TraceError> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_LINE {
                return Err(io_err(
                    path,
                    format!(
                        "line {}: longer than {} bytes (binary file or wrong format?)",
                        self.lines + 1,
                        MAX_LINE
                    ),
                ));
            }
            let new_len = (self.buf.len() * 2).min(MAX_LINE);
            self.buf.resize(new_len, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    if !self.cr_seen {
                        self.cr_seen =
                            memchr::memchr(b'\r', &self.buf[self.end..self.end + n]).is_some();
                    }
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(io_err(
                        path,
                        format!(
                            "read error after line {}: {e}{}",
                            self.lines,
                            self.compression.label()
                        ),
                    ))
                }
            }
        }
    }
}
