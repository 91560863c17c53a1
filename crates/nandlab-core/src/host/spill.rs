//! The request stream of the sizing pre-pass, kept for the replay so that a trace is parsed
//! once: the pre-pass writes each request it reads to an anonymous temporary file in a compact
//! binary form (varints: arrival delta, offset, length with the op in its low bit; about
//! 10 bytes a request), and the replay reads them back with a few shifts per request instead
//! of parsing text again. Memory stays flat (one 1 MiB buffer each way); the file is deleted by
//! the OS when it is closed. The requests read back are exactly those written, in order.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::trace::{HostRequest, Op, TraceError};

const BUF: usize = 1 << 20;
/// Longest record: three 10-byte varints.
const MAX_RECORD: usize = 30;

fn io(e: std::io::Error) -> TraceError {
    TraceError::Io {
        file: std::env::temp_dir(),
        msg: format!("request spill file: {e}"),
    }
}

/// Writes requests to the spill file.
pub struct SpillWriter {
    out: BufWriter<File>,
    last_ns: u64,
    count: u64,
}

#[inline(always)]
fn put_varint(buf: &mut [u8; MAX_RECORD], n: &mut usize, mut v: u64) {
    while v >= 0x80 && *n < MAX_RECORD - 1 {
        buf[*n] = (v as u8) | 0x80;
        v >>= 7;
        *n += 1;
    }
    if *n < MAX_RECORD {
        buf[*n] = v as u8;
        *n += 1;
    }
}

impl SpillWriter {
    /// A new anonymous spill file in the system's temporary directory.
    ///
    /// # Errors
    /// [`TraceError::Io`] when no temporary file can be created.
    pub fn new() -> Result<SpillWriter, TraceError> {
        let f = tempfile::tempfile().map_err(io)?;
        Ok(SpillWriter {
            out: BufWriter::with_capacity(BUF, f),
            last_ns: 0,
            count: 0,
        })
    }

    /// Append one request. Arrivals must not decrease (a [`crate::host::RequestSource`]
    /// guarantees it).
    #[inline]
    pub fn push(&mut self, r: &HostRequest) -> Result<(), TraceError> {
        let mut b = [0u8; MAX_RECORD];
        let mut n = 0;
        put_varint(&mut b, &mut n, r.arrival_ns.wrapping_sub(self.last_ns));
        put_varint(&mut b, &mut n, r.offset_bytes);
        // The length of a request is > 0 and < 2^63 (trace readers reject others).
        put_varint(
            &mut b,
            &mut n,
            r.len_bytes << 1 | (r.op == Op::Write) as u64,
        );
        self.last_ns = r.arrival_ns;
        self.count += 1;
        self.out.write_all(&b[..n]).map_err(io)
    }

    /// Finish writing and return a source that replays the requests from the start.
    ///
    /// # Errors
    /// [`TraceError::Io`] on a write or seek error.
    pub fn into_source(self) -> Result<SpillSource, TraceError> {
        let mut f = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        f.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(SpillSource {
            inp: BufReader::with_capacity(BUF, f),
            // Zero slack after the data: a record is decoded from a fixed window.
            buf: vec![0; BUF + MAX_RECORD],
            pos: 0,
            end: 0,
            last_ns: 0,
            left: self.count,
        })
    }
}

/// Replays a spill file (see [`SpillWriter::into_source`]).
pub struct SpillSource {
    inp: BufReader<File>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    last_ns: u64,
    left: u64,
}

impl SpillSource {
    #[cold]
    fn refill(&mut self) -> Result<(), TraceError> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < BUF {
            let n = self.inp.read(&mut self.buf[self.end..BUF]).map_err(io)?;
            if n == 0 {
                break;
            }
            self.end += n;
        }
        self.buf[self.end..].fill(0);
        Ok(())
    }
}

/// Decode a varint at `*i` of a record window.
#[inline(always)]
fn get_varint(w: &[u8; MAX_RECORD], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while *i < MAX_RECORD {
        let b = w[*i];
        *i += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

impl crate::host::RequestSource for SpillSource {
    #[inline]
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        if self.left == 0 {
            return Ok(None);
        }
        if self.end - self.pos < MAX_RECORD {
            self.refill()?;
            if self.pos == self.end {
                return Err(io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "truncated",
                )));
            }
        }
        let w: &[u8; MAX_RECORD] = self.buf[self.pos..self.pos + MAX_RECORD]
            .try_into()
            .expect("window within the buffer's slack");
        let mut i = 0;
        let dt = get_varint(w, &mut i);
        let offset_bytes = get_varint(w, &mut i);
        let lo = get_varint(w, &mut i);
        self.pos += i;
        self.left -= 1;
        self.last_ns = self.last_ns.wrapping_add(dt);
        Ok(Some(HostRequest {
            arrival_ns: self.last_ns,
            op: if lo & 1 == 1 { Op::Write } else { Op::Read },
            offset_bytes,
            len_bytes: lo >> 1,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RequestSource;

    #[test]
    fn round_trip() {
        let reqs: Vec<HostRequest> = (0..100_000u64)
            .map(|i| HostRequest {
                arrival_ns: i * i * 7919,
                op: if i % 3 == 0 { Op::Read } else { Op::Write },
                offset_bytes: i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1,
                len_bytes: 1 + (i * 4096) % (1 << 40),
            })
            .collect();
        let mut w = SpillWriter::new().unwrap();
        for r in &reqs {
            w.push(r).unwrap();
        }
        let mut s = w.into_source().unwrap();
        let mut back = Vec::new();
        while let Some(r) = s.next_request().unwrap() {
            back.push(r);
        }
        assert_eq!(back, reqs);
    }
}
