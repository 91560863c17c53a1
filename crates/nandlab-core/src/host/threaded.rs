//! A parser thread: [`ThreadedSource`] reads a source (a trace file: decompression and parsing)
//! on its own thread and hands the requests over in batches through a bounded channel, so that
//! parsing overlaps the work of the thread that consumes them (the pre-pass, or a replay without
//! one). The requests, their order and the errors are exactly the wrapped source's; only wall
//! time changes. Memory stays bounded (a few batches in flight).

use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use crate::host::RequestSource;
use crate::trace::{HostRequest, TraceError};

/// Requests per batch.
const BATCH: usize = 4096;
/// Batches in flight between the threads.
const DEPTH: usize = 4;

enum Msg {
    Batch(Vec<HostRequest>),
    /// The source ended (with an error, or cleanly) and described itself.
    End(Option<TraceError>, serde_json::Value),
}

/// A [`RequestSource`] read ahead by a parser thread. See the module documentation.
pub struct ThreadedSource {
    rx: Option<Receiver<Msg>>,
    batch: Vec<HostRequest>,
    pos: usize,
    /// Spent batches go back to the parser thread.
    recycle: std::sync::mpsc::Sender<Vec<HostRequest>>,
    ended: bool,
    describe: serde_json::Value,
    worker: Option<JoinHandle<()>>,
}

impl ThreadedSource {
    /// Start reading `src` on a new thread.
    pub fn spawn<S: RequestSource + Send + 'static>(mut src: S) -> ThreadedSource {
        let (tx, rx) = sync_channel::<Msg>(DEPTH);
        let (recycle, spent) = std::sync::mpsc::channel::<Vec<HostRequest>>();
        let worker = std::thread::Builder::new()
            .name("nandlab-parse".into())
            .spawn(move || loop {
                let (b, more) = fill_batch(&spent, BATCH, || src.next_request());
                let full = matches!(more, Ok(true));
                if !b.is_empty() && tx.send(Msg::Batch(b)).is_err() {
                    return; // the consumer is gone
                }
                if !full {
                    let _ = tx.send(Msg::End(more.err(), src.describe()));
                    return;
                }
            })
            .ok();
        ThreadedSource {
            rx: Some(rx),
            batch: Vec::new(),
            pos: 0,
            recycle,
            ended: worker.is_none(),
            describe: serde_json::Value::Null,
            worker,
        }
    }
}

/// A reader thread's next batch: a spent batch from `spent` (or a new one of capacity `cap`)
/// filled with up to `cap` items of `next`, in order, and how it ended: `Ok(true)` full (more
/// may follow), `Ok(false)` the source ended, `Err` the source's error after the batch's items.
/// Shared with the object device's trace translator ([`crate::api::osd`]).
pub(crate) fn fill_batch<T, E>(
    spent: &Receiver<Vec<T>>,
    cap: usize,
    mut next: impl FnMut() -> Result<Option<T>, E>,
) -> (Vec<T>, Result<bool, E>) {
    let mut b = spent.try_recv().unwrap_or_else(|_| Vec::with_capacity(cap));
    b.clear();
    while b.len() < cap {
        match next() {
            Ok(Some(x)) => b.push(x),
            Ok(None) => return (b, Ok(false)),
            Err(e) => return (b, Err(e)),
        }
    }
    (b, Ok(true))
}

impl RequestSource for ThreadedSource {
    #[inline]
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        if let Some(r) = self.batch.get(self.pos) {
            self.pos += 1;
            return Ok(Some(*r));
        }
        loop {
            if self.ended {
                return Ok(None);
            }
            let msg = self.rx.as_ref().and_then(|rx| rx.recv().ok());
            match msg {
                Some(Msg::Batch(b)) => {
                    let spent = std::mem::replace(&mut self.batch, b);
                    let _ = self.recycle.send(spent);
                    self.pos = 1;
                    return Ok(self.batch.first().copied());
                }
                Some(Msg::End(err, d)) => {
                    self.ended = true;
                    self.describe = d;
                    if let Some(e) = err {
                        return Err(e);
                    }
                }
                None => {
                    self.ended = true;
                    return Err(TraceError::Io {
                        file: std::path::PathBuf::from("<parser thread>"),
                        msg: "the parser thread stopped without a result".into(),
                    });
                }
            }
        }
    }

    fn describe(&self) -> serde_json::Value {
        self.describe.clone()
    }
}

impl Drop for ThreadedSource {
    fn drop(&mut self) {
        // Close the channel first so that a worker blocked on a full channel returns.
        self.rx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::VecSource;
    use crate::trace::Op;

    fn reqs(n: u64) -> Vec<HostRequest> {
        (0..n)
            .map(|i| HostRequest {
                arrival_ns: i,
                op: if i % 2 == 0 { Op::Read } else { Op::Write },
                offset_bytes: i * 4096,
                len_bytes: 4096,
            })
            .collect()
    }

    #[test]
    fn same_requests_in_the_same_order() {
        for n in [0, 1, BATCH as u64, BATCH as u64 + 1, 3 * BATCH as u64 + 17] {
            let want = reqs(n);
            let mut s = ThreadedSource::spawn(VecSource::new(want.clone()));
            let mut got = Vec::new();
            while let Some(r) = s.next_request().unwrap() {
                got.push(r);
            }
            assert_eq!(got, want);
            assert_eq!(s.next_request().unwrap(), None);
        }
    }

    struct Failing(u64);
    impl RequestSource for Failing {
        fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
            if self.0 == 0 {
                return Err(TraceError::Io {
                    file: "x".into(),
                    msg: "boom".into(),
                });
            }
            self.0 -= 1;
            Ok(Some(reqs(1)[0]))
        }
    }

    #[test]
    fn an_error_comes_after_the_requests_before_it() {
        let mut s = ThreadedSource::spawn(Failing(5000));
        for _ in 0..5000 {
            assert!(s.next_request().unwrap().is_some());
        }
        assert!(s.next_request().is_err());
    }

    #[test]
    fn dropping_early_stops_the_thread() {
        let s = ThreadedSource::spawn(VecSource::new(reqs(100 * BATCH as u64)));
        drop(s);
    }
}
