//! Writing canonical CSV (`time_ns,op,offset_bytes,size_bytes`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::input::{io_err, BUF_SIZE};
use super::{HostRequest, Op, TraceError, TraceOptions, TraceReader};

/// Header line of canonical CSV.
pub(crate) const CANONICAL_HEADER: &str = "time_ns,op,offset_bytes,size_bytes\n";

#[inline]
fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Canonical CSV writer over any `Write`; formats into a reused buffer.
pub(crate) struct CanonicalWriter<W: Write> {
    out: W,
    name: PathBuf,
    line: Vec<u8>,
    pub(crate) written: u64,
}

impl<W: Write> CanonicalWriter<W> {
    pub(crate) fn new(mut out: W, name: &Path) -> Result<Self, TraceError> {
        out.write_all(CANONICAL_HEADER.as_bytes())
            .map_err(|e| io_err(name, format!("write error: {e}")))?;
        Ok(CanonicalWriter {
            out,
            name: name.to_path_buf(),
            line: Vec::with_capacity(96),
            written: 0,
        })
    }

    #[inline]
    pub(crate) fn write(&mut self, r: &HostRequest) -> Result<(), TraceError> {
        let l = &mut self.line;
        l.clear();
        push_u64(l, r.arrival_ns);
        l.extend_from_slice(match r.op {
            Op::Read => b",R,",
            Op::Write => b",W,",
            Op::Trim => b",D,",
        });
        push_u64(l, r.offset_bytes);
        l.push(b',');
        push_u64(l, r.len_bytes);
        l.push(b'\n');
        self.out
            .write_all(l)
            .map_err(|e| io_err(&self.name, format!("write error: {e}")))?;
        self.written += 1;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<W, TraceError> {
        self.out
            .flush()
            .map_err(|e| io_err(&self.name, format!("write error: {e}")))?;
        Ok(self.out)
    }
}

/// Write every remaining request of `reader` to `out` as canonical CSV with a header line.
/// Returns the number of requests written. Errors: the reader's errors; write failures as
/// [`TraceError::Io`] with file `<output>`.
pub fn write_canonical(reader: &mut TraceReader, out: impl Write) -> Result<u64, TraceError> {
    let mut w = CanonicalWriter::new(out, Path::new("<output>"))?;
    while let Some(r) = reader.next_request()? {
        w.write(&r)?;
    }
    let n = w.written;
    w.finish()?;
    Ok(n)
}

/// Sink that writes a file, gzip-compressed if its name ends in `.gz`.
pub(crate) enum FileSink {
    Plain(BufWriter<File>),
    Gz(flate2::write::GzEncoder<BufWriter<File>>),
}

impl FileSink {
    pub(crate) fn create(path: &Path) -> Result<FileSink, TraceError> {
        let f = File::create(path).map_err(|e| io_err(path, format!("cannot create: {e}")))?;
        let bw = BufWriter::with_capacity(BUF_SIZE, f);
        let gz = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".gz"));
        Ok(if gz {
            FileSink::Gz(flate2::write::GzEncoder::new(
                bw,
                flate2::Compression::default(),
            ))
        } else {
            FileSink::Plain(bw)
        })
    }

    /// Flush and close (writing the gzip trailer).
    pub(crate) fn close(self, path: &Path) -> Result<(), TraceError> {
        let res = match self {
            FileSink::Plain(mut b) => b.flush(),
            FileSink::Gz(g) => g.finish().and_then(|mut b| b.flush()),
        };
        res.map_err(|e| io_err(path, format!("write error: {e}")))
    }
}

impl Write for FileSink {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            FileSink::Plain(b) => b.write(buf),
            FileSink::Gz(g) => g.write(buf),
        }
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            FileSink::Plain(b) => b.write_all(buf),
            FileSink::Gz(g) => g.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            FileSink::Plain(b) => b.flush(),
            FileSink::Gz(g) => g.flush(),
        }
    }
}

/// Convert the trace at `input` (read with `opts`) to canonical CSV at `output` (gzip if the
/// name ends in `.gz`). Returns the number of requests written.
/// Errors: the reader's; [`TraceError::Io`] naming `output` for write failures.
pub fn convert(input: &Path, opts: &TraceOptions, output: &Path) -> Result<u64, TraceError> {
    let mut rd = TraceReader::open(input, opts)?;
    let sink = FileSink::create(output)?;
    let mut w = CanonicalWriter::new(sink, output)?;
    while let Some(r) = rd.next_request()? {
        w.write(&r)?;
    }
    let n = w.written;
    w.finish()?.close(output)?;
    Ok(n)
}
