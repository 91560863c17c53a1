//! blkparse's text output (`blkparse.c` of blktrace 1.3: `dump_trace_fs`, `handle_notify`,
//! `fill_rwbs`): the `maj,min` device token, events and their actions, RWBS, and the text lines
//! blkparse prints around the events (input files, the per-CPU and per-process summary).

use super::fields::*;
use super::record::*;
use crate::trace::{BlkparseEvent, Op};

pub(super) fn blk_action(tok: &[u8]) -> Option<u8> {
    BLK_ACTIONS[..BLK_TEXT as usize]
        .iter()
        .position(|a| a.as_bytes() == tok)
        .map(|i| i as u8)
}

/// `maj,min` device token of blkparse.
pub(crate) fn is_blk_dev(tok: &[u8]) -> bool {
    match memchr::memchr(b',', tok) {
        Some(i) => {
            let (a, b) = (&tok[..i], &tok[i + 1..]);
            !a.is_empty()
                && !b.is_empty()
                && a.iter().all(u8::is_ascii_digit)
                && b.iter().all(u8::is_ascii_digit)
        }
        None => false,
    }
}

/// Does a blkparse text line (not an event) start blkparse's summary: `CPU<n> (maj,min):`,
/// `Total (maj,min):`, or a per-process block `name (pid)` (`blkparse -s`)? The reader skips
/// these and every non-event line after them up to the next event, and `Input file … added`
/// lines ([`blk_text_is_input`]); any other non-event line is an error.
pub(crate) fn blk_text_starts_summary(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    if t.starts_with(b"Input file ") && t.ends_with(b" added") {
        return false;
    }
    let cpu = t.strip_prefix(b"CPU").is_some_and(|r| {
        let d = r.iter().take_while(|c| c.is_ascii_digit()).count();
        d > 0 && r[d..].starts_with(b" (")
    });
    let process = t.ends_with(b")")
        && t[..t.len() - 1]
            .iter()
            .rposition(|&c| c == b'(')
            .is_some_and(|i| {
                i > 1
                    && t[i - 1] == b' '
                    && t[i + 1..t.len() - 1].iter().all(u8::is_ascii_digit)
                    && i + 1 < t.len() - 1
            });
    cpu || process || t.starts_with(b"Total (")
}

/// `Input file NAME added`: what blkparse prints before the events, once per input file.
pub(crate) fn blk_text_is_input(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.starts_with(b"Input file ") && t.ends_with(b" added")
}

/// The 4 header fields after `maj,min` look like an event's (`cpu seq time pid`)?
pub(super) fn blk_event_follows(f: &Fields<'_>) -> bool {
    let mut g = Fields::ws(f.rest);
    let int =
        |v: Option<&[u8]>| v.is_some_and(|v| !v.is_empty() && v.iter().all(u8::is_ascii_digit));
    int(g.next_field())
        && int(g.next_field())
        && g.next_field().is_some_and(|t| decimal(t, 9).is_ok())
        && int(g.next_field())
}

/// RWBS of blkparse (`fill_rwbs`): `F` flush, one of `D` discard (`E` secure erase), `W`,
/// `R`, `N` none, then `F` FUA, `A` ahead, `S` sync, `M` meta.
pub(super) fn blk_op(rwbs: &[u8]) -> Result<Option<Op>, FieldError> {
    let ok = !rwbs.is_empty()
        && rwbs.len() <= 8
        && rwbs.iter().all(|c| b"FDEWRNASM".contains(c))
        && !(rwbs.contains(&b'R') && rwbs.contains(&b'W'));
    if !ok {
        return Err(bad(
            "RWBS",
            rwbs,
            "not an RWBS",
            "blkparse's RWBS: letters of F D E W R N A S M with at most one of R and W \
             (e.g. W, RA, FWS, D, N)",
        ));
    }
    Ok(if rwbs.contains(&b'D') {
        Some(Op::Trim) // discard: skipped by the reader unless discards are asked for
    } else if rwbs.contains(&b'R') {
        Some(Op::Read)
    } else if rwbs.contains(&b'W') {
        Some(Op::Write)
    } else {
        None
    })
}

pub(super) fn parse_blkparse(
    line: &[u8],
    ev: BlkparseEvent,
    last: bool,
) -> Result<Rec, FieldError> {
    let c = BLK_COLS;
    let mut f = Fields::ws(line);
    match f.next_field() {
        Some(d) if is_blk_dev(d) => {}
        // blkparse's own text (Input file … added, the summary), or an error: the reader
        // decides.
        _ => return Ok(Rec::Text),
    }
    let v = f.get("cpu", c)?;
    int_field(v, "cpu", "a non-negative integer (CPU number)")?;
    let v = f.get("seq", c)?;
    int_field(v, "seq", "a non-negative integer (sequence number)")?;
    let t = f.get("time", c)?;
    let time_ns = dec_field(t, 9, "time", "non-negative seconds (e.g. 0.000000000)")?;
    let v = f.get("pid", c)?;
    int_field(v, "pid", "a non-negative integer (process id)")?;
    let a = f.get("action", c)?;
    let Some(action) = blk_action(a) else {
        return Err(bad(
            "action",
            a,
            "unknown blkparse action",
            &format!("one of {}", BLK_ACTIONS[..BLK_TEXT as usize].join(" ")),
        ));
    };
    let rwbs = f.get("RWBS", c)?;
    let op = blk_op(rwbs)?;
    // Another event on the same line (a lost line break): never drop it with this one.
    let mut g = Fields::ws(f.rest);
    while let Some(tok) = g.next_field() {
        if is_blk_dev(tok) && blk_event_follows(&g) {
            let at = line.len() - g.rest.len() - tok.len();
            return Err(extra(&line[at..], false, c));
        }
    }
    let want: &[u8] = match ev {
        BlkparseEvent::Issue => b"D",
        BlkparseEvent::Queue => b"Q",
    };
    if a != want {
        return Ok(Rec::NonRequest(Some(action)));
    }
    let Some(op) = op else {
        // `N`: no data direction (a flush, a SCSI command without data).
        return Ok(Rec::NonRequest(Some(action)));
    };
    let sec = match f.next_field() {
        Some(s) if !s.starts_with(b"[") => s,
        // No sector: a flush / barrier without data.
        _ => return Ok(Rec::ZeroSize),
    };
    let sector = int_field(sec, "sector", "a non-negative integer (512 B sectors)")?;
    let plus = f.get("+", c)?;
    if plus != b"+" {
        return Err(bad(
            "+",
            plus,
            "unexpected token",
            "`+` between sector and nsectors",
        ));
    }
    let n = f.get("nsectors", c)?;
    let nsec = int_field(n, "nsectors", "a non-negative integer (512 B sectors)")?;
    // What may follow: `(elapsed)` (blkparse -t), then `[process]` (at most 16 bytes, the
    // kernel's TASK_COMM_LEN), and nothing else.
    let mut rest = f.rest.trim_ascii();
    if let Some(r) = rest.strip_prefix(b"(") {
        let close = memchr::memchr(b')', r)
            .filter(|&k| r[..k].trim_ascii().iter().all(u8::is_ascii_digit) && k > 0);
        match close {
            Some(k) => rest = r[k + 1..].trim_ascii(),
            None => {
                return Err(bad(
                    "elapsed",
                    rest,
                    "not an elapsed time",
                    "`(ns)` or the process `[name]` after nsectors",
                ))
            }
        }
    }
    let name_ok = match rest {
        [] => true,
        [b'[', inner @ .., b']'] => inner.len() <= 16,
        // The file's last line, cut inside the process name: the request is complete.
        [b'[', inner @ ..] => last && inner.len() <= 16 && !inner.contains(&b']'),
        _ => false,
    };
    if !name_ok {
        return Err(bad(
            "process",
            rest,
            "unexpected text after nsectors",
            "nothing more than `[process name]` (at most 16 characters)",
        ));
    }
    if nsec == 0 {
        return Ok(Rec::ZeroSize);
    }
    let offset = scaled(sector, SECTOR, sec, "sector", "a sector below 2^55")?;
    let len = scaled(nsec, SECTOR, n, "nsectors", "fewer than 2^55 sectors")?;
    request(time_ns, op, offset, len, 0, sec, "sector")
}
