//! The request stream of the sizing pre-pass, kept for the replay so that a trace is parsed
//! once: the pre-pass writes each request it reads to an anonymous temporary file in a compact
//! binary form (arrival delta, offset, length with the op in its low bit, each in as many bytes
//! as it needs behind a 2-byte header of lengths; about 12 bytes a request), and the replay
//! reads them back with a few loads and masks per request instead of parsing text again. Memory stays flat (one 1 MiB buffer each way); the file is deleted by
//! the OS when it is closed. The requests read back are exactly those written, in order.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use crate::trace::{HostRequest, Op, TraceError};

const BUF: usize = 1 << 20;
/// Longest record: a 2-byte header and three 8-byte values.
const MAX_RECORD: usize = 26;
/// A record is decoded from a window this long (values are read as whole `u64`s).
const WINDOW: usize = MAX_RECORD + 8;
/// `MASK[n]`: the low `n` bytes of a `u64`.
const MASK: [u64; 9] = [
    0,
    0xff,
    0xffff,
    0xff_ffff,
    0xffff_ffff,
    0xff_ffff_ffff,
    0xffff_ffff_ffff,
    0xff_ffff_ffff_ffff,
    u64::MAX,
];

fn io(e: std::io::Error) -> TraceError {
    TraceError::Io {
        file: std::env::temp_dir(),
        msg: format!("request spill file: {e}"),
    }
}

/// Bytes needed for `v` (0 for 0).
#[inline(always)]
fn byte_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(8)
}

/// Writes requests to the spill file. A record is a 2-byte header holding the byte lengths of
/// three values (4 bits each) and the values' low bytes, little-endian: the arrival delta, the
/// offset, and the length with the op in its low bit.
pub struct SpillWriter {
    file: File,
    buf: Vec<u8>,
    last_ns: u64,
    count: u64,
}

impl SpillWriter {
    /// A new anonymous spill file in the system's temporary directory.
    ///
    /// # Errors
    /// [`TraceError::Io`] when no temporary file can be created.
    pub fn new() -> Result<SpillWriter, TraceError> {
        let file = tempfile::tempfile().map_err(io)?;
        Ok(SpillWriter {
            file,
            buf: Vec::with_capacity(BUF + WINDOW),
            last_ns: 0,
            count: 0,
        })
    }

    /// Append one request. Arrivals must not decrease (a [`crate::host::RequestSource`]
    /// guarantees it).
    #[inline]
    pub fn push(&mut self, r: &HostRequest) -> Result<(), TraceError> {
        // The length of a request is > 0 and < 2^63 (trace readers reject others).
        let v = [
            r.arrival_ns.wrapping_sub(self.last_ns),
            r.offset_bytes,
            r.len_bytes << 2 | r.op as u64,
        ];
        let l = [byte_len(v[0]), byte_len(v[1]), byte_len(v[2])];
        let mut rec = [0u8; WINDOW];
        rec[..2].copy_from_slice(&((l[0] | l[1] << 4 | l[2] << 8) as u16).to_le_bytes());
        let mut n = 2;
        for k in 0..3 {
            rec[n..n + 8].copy_from_slice(&v[k].to_le_bytes());
            n += l[k];
        }
        self.buf.extend_from_slice(&rec[..n]);
        self.last_ns = r.arrival_ns;
        self.count += 1;
        if self.buf.len() >= BUF {
            self.file.write_all(&self.buf).map_err(io)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Finish writing and return a source that replays the requests from the start.
    ///
    /// # Errors
    /// [`TraceError::Io`] on a write or seek error.
    pub fn into_source(mut self) -> Result<SpillSource, TraceError> {
        self.file.write_all(&self.buf).map_err(io)?;
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(SpillSource {
            file: self.file,
            // Zero slack after the data: a record is decoded from a fixed window.
            buf: vec![0; BUF + WINDOW],
            pos: 0,
            end: 0,
            last_ns: 0,
            left: self.count,
        })
    }
}

/// Replays a spill file (see [`SpillWriter::into_source`]).
pub struct SpillSource {
    file: File,
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
            let n = self.file.read(&mut self.buf[self.end..BUF]).map_err(io)?;
            if n == 0 {
                break;
            }
            self.end += n;
        }
        self.buf[self.end..].fill(0);
        Ok(())
    }
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
        let w: &[u8; WINDOW] = self.buf[self.pos..self.pos + WINDOW]
            .try_into()
            .expect("window within the buffer's slack");
        let h = u16::from_le_bytes([w[0], w[1]]) as usize;
        let mut n = 2;
        let mut v = [0u64; 3];
        for (k, x) in v.iter_mut().enumerate() {
            let l = (h >> (4 * k)) & 15;
            let word: [u8; 8] = w[n..n + 8].try_into().expect("in the window");
            *x = u64::from_le_bytes(word) & MASK[l.min(8)];
            n = (n + l).min(MAX_RECORD);
        }
        self.pos += n;
        self.left -= 1;
        self.last_ns = self.last_ns.wrapping_add(v[0]);
        Ok(Some(HostRequest {
            arrival_ns: self.last_ns,
            op: match v[2] & 3 {
                0 => Op::Read,
                1 => Op::Write,
                _ => Op::Trim,
            },
            offset_bytes: v[1],
            len_bytes: v[2] >> 2,
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
