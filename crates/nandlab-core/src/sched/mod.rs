//! Transaction scheduler: per-die queues of flash transactions and the dispatch priority.
//!
//! Each die has three FIFO queues: host reads, host writes (with backend refills and
//! prefetches, which bring data in as host writes do), and background work (GC moves and
//! erases, scheme rewrites, refresh, verification reads). With `priority = "read_first"` a free die takes, in order:
//! a host read; then host writes before background work, unless one of the die's planes is
//! short of free blocks ([`SpaceView::plane_urgent`]), in which case background work goes
//! first. With `priority = "fifo"` it takes the oldest dispatchable transaction of the three
//! queues. A transaction that cannot start now ([`SpaceView::can_start`]: a program whose plane
//! has no free page for it — host writes may not take the GC reserve) waits at the head of its
//! queue; it never blocks the other queues.
//!
//! The scheduler knows nothing of the mapping that produced the transactions: it reaches the
//! front end's space accounting only through [`SpaceView`], so the block FTL and the
//! object-based device share it. Transactions are stored inline in the queues (28-byte
//! records, no slab, no ids), so the head of a queue is contiguous memory and steady-state
//! replay allocates nothing.

use std::collections::VecDeque;

use crate::config::Priority;
use crate::exec::NONE;
pub use crate::exec::{Txn, TxnKind};
use crate::scheme::{Placement, Source};

/// What the scheduler needs to know of the front end's free space (the narrow interface to
/// the FTL or the object device).
pub trait SpaceView {
    /// Whether `t` can start on its plane now (a program or move needs a page to write).
    fn can_start(&self, t: &Txn) -> bool;
    /// Whether `plane` is critically short of free space (background work goes before host
    /// writes on its die).
    fn plane_urgent(&self, plane: u32) -> bool;
    /// Dynamic allocation: a plane that can take host write `t` now, among the `n` planes
    /// `first + (start + k) % n` tried in that order (k = 0, 1, …), preferring planes that
    /// need no GC.
    fn write_plane(&self, t: &Txn, first: u32, n: u32, start: u32) -> Option<u32>;
}

const Q_READ: usize = 0;
const Q_WRITE: usize = 1;
const Q_BG: usize = 2;

/// Wrapping "a was enqueued before b".
#[inline]
fn older(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// A caller's answer about one candidate of [`Sched::take_partners`].
#[derive(Clone, Copy, Debug)]
pub struct Visit {
    /// Take this transaction into the run.
    pub take: bool,
    /// Look at further candidates.
    pub more: bool,
}

/// Per-die queues.
#[derive(Debug)]
pub struct Sched {
    queues: Vec<[VecDeque<Txn>; 3]>,
    /// Dynamic allocation: host writes wait here until some die is free to take one.
    shared_writes: VecDeque<Txn>,
    dynamic: bool,
    die_rr: Vec<u32>,
    planes_per_die: u32,
    ppd_div: crate::flash::DivU32,
    priority: Priority,
    seq: u32,
    queued: usize,
    /// Per die: host writes held back (superpage allocation filling a super-page).
    held: Vec<bool>,
}

impl Sched {
    /// Queues for `dies` dies. With `dynamic`, host writes are not bound to a plane when they
    /// arrive: the next die that is free (and has a plane with space) takes the oldest one, and
    /// picks its plane round-robin, preferring planes that do not need GC.
    pub fn new(dies: u32, planes_per_die: u32, priority: Priority, dynamic: bool) -> Sched {
        Sched {
            queues: (0..dies)
                .map(|_| {
                    [
                        VecDeque::with_capacity(64),
                        VecDeque::with_capacity(64),
                        VecDeque::with_capacity(256),
                    ]
                })
                .collect(),
            shared_writes: VecDeque::with_capacity(256),
            dynamic,
            die_rr: vec![0; dies as usize],
            planes_per_die,
            ppd_div: crate::flash::DivU32::new(planes_per_die),
            priority,
            seq: 0,
            queued: 0,
            held: vec![false; dies as usize],
        }
    }

    /// Queue a transaction on its plane's die. Returns its die, or [`NONE`] for a host write
    /// under dynamic allocation (any die may take it: the caller dispatches every idle die).
    /// `plane` is ignored for those.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn enqueue(
        &mut self,
        kind: TxnKind,
        source: Source,
        lpn: u32,
        ppn: u32,
        plane: u32,
        owner: u32,
        placement: Placement,
    ) -> u32 {
        let t = Txn {
            kind,
            source,
            placement,
            plane,
            ppn,
            lpn,
            owner,
            seq: self.seq,
        };
        self.seq = self.seq.wrapping_add(1);
        self.queued += 1;
        if self.dynamic && source == Source::Host && kind == TxnKind::Program {
            self.shared_writes.push_back(t);
            return NONE;
        }
        let q = match (source, kind) {
            // Translation reads (cached mapping table) wait on a host request's critical path.
            (Source::Host | Source::Mapping, TxnKind::Read) => Q_READ,
            // Backend refills and prefetches bring data in as host writes do, and like them may
            // not take the GC reserve: waiting at the head of the background queue they would
            // block the GC work behind them.
            // So do a cached mapping table's translation-page programs (`Source::Mapping`).
            (Source::Host | Source::Scrub | Source::Mapping, TxnKind::Program) => Q_WRITE,
            _ => Q_BG,
        };
        let die = self.ppd_div.quot(plane);
        self.queues[die as usize][q].push_back(t);
        die
    }

    #[inline]
    fn die_urgent<V: SpaceView>(&self, die: u32, v: &V) -> bool {
        if self.planes_per_die == 1 {
            return v.plane_urgent(die);
        }
        let p0 = die * self.planes_per_die;
        (p0..p0 + self.planes_per_die).any(|p| v.plane_urgent(p))
    }

    /// The head of queue `q` of die `d`, when it can start.
    #[inline]
    fn head<V: SpaceView>(&self, d: usize, q: usize, v: &V) -> Option<&Txn> {
        if q == Q_WRITE && self.held[d] {
            return None;
        }
        let t = self.queues[d][q].front()?;
        v.can_start(t).then_some(t)
    }

    /// Hold (or release) `die`'s host writes: while held, the die takes reads and background
    /// work only (superpage allocation waiting for a full super-page).
    #[inline]
    pub fn set_hold(&mut self, die: u32, hold: bool) {
        self.held[die as usize] = hold;
    }

    /// Host writes queued on `die`.
    #[inline]
    pub fn writes_queued(&self, die: u32) -> usize {
        self.queues[die as usize][Q_WRITE].len()
    }

    /// Take the next transaction for `die` under the priority policy, or `None` when nothing
    /// can start now.
    #[inline]
    pub fn pick<V: SpaceView>(&mut self, die: u32, v: &V) -> Option<Txn> {
        if self.dynamic {
            return self.pick_dynamic(die, v);
        }
        let d = die as usize;
        let chosen = match self.priority {
            Priority::ReadFirst => {
                if !self.queues[d][Q_READ].is_empty() {
                    Q_READ
                } else {
                    let order = if self.die_urgent(die, v) {
                        [Q_BG, Q_WRITE]
                    } else {
                        [Q_WRITE, Q_BG]
                    };
                    order.into_iter().find(|&q| self.head(d, q, v).is_some())?
                }
            }
            Priority::Fifo => {
                let mut best: Option<(u32, usize)> = None;
                for q in [Q_READ, Q_WRITE, Q_BG] {
                    if let Some(t) = self.head(d, q, v) {
                        if best.is_none_or(|(s, _)| older(t.seq, s)) {
                            best = Some((t.seq, q));
                        }
                    }
                }
                best?.1
            }
        };
        self.queued -= 1;
        self.queues[d][chosen].pop_front()
    }

    fn pick_dynamic<V: SpaceView>(&mut self, die: u32, v: &V) -> Option<Txn> {
        let d = die as usize;
        let n = self.planes_per_die;
        let p0 = die * n;
        let start = self.die_rr[d];
        let write = self
            .shared_writes
            .front()
            .and_then(|t| v.write_plane(t, p0, n, start).map(|p| (t.seq, p)));
        let bg = self.head(d, Q_BG, v).map(|t| t.seq);
        let read = self.queues[d][Q_READ].front().map(|t| t.seq);
        let take_write = |s: &mut Sched, p: u32| {
            let mut t = s.shared_writes.pop_front()?;
            t.plane = p;
            s.die_rr[d] = (p - p0 + 1) % n;
            s.queued -= 1;
            Some(t)
        };
        let take = |s: &mut Sched, q: usize| {
            s.queued -= 1;
            s.queues[d][q].pop_front()
        };
        match self.priority {
            Priority::ReadFirst => {
                if read.is_some() {
                    return take(self, Q_READ);
                }
                let urgent = self.die_urgent(die, v);
                match (write, bg) {
                    (Some((_, p)), Some(_)) if !urgent => take_write(self, p),
                    (_, Some(_)) => take(self, Q_BG),
                    (Some((_, p)), None) => take_write(self, p),
                    (None, None) => None,
                }
            }
            Priority::Fifo => {
                let cands = [
                    read.map(|s| (s, 0u8)),
                    write.map(|(s, _)| (s, 1)),
                    bg.map(|s| (s, 2)),
                ];
                let mut best: Option<(u32, u8)> = None;
                for (s, c) in cands.into_iter().flatten() {
                    if best.is_none_or(|(bs, _)| older(s, bs)) {
                        best = Some((s, c));
                    }
                }
                match best?.1 {
                    0 => take(self, Q_READ),
                    1 => take_write(self, write?.1),
                    _ => take(self, Q_BG),
                }
            }
        }
    }

    /// Multi-plane and one-shot runs: take from `die`'s queue of `t` (the one
    /// [`Sched::enqueue`] puts a transaction of `t`'s source and kind in) the transactions of
    /// `t`'s kind and source that `visit` accepts, oldest first, in one pass. `visit` is asked
    /// about each candidate in queue order and answers whether to take it and whether to go
    /// on; it sees the candidates of a window of the first `scan` entries that grows by one
    /// with each entry taken, so the result equals taking, one at a time, the oldest fitting
    /// transaction among the first `scan` of the queue as it stands, as long as `visit`'s
    /// answer for a candidate it refused never turns to "take" later (the callers' fit rules
    /// only tighten as the run grows). Taken transactions go to `out`, oldest first. At most
    /// 64 transactions are looked at. Host writes under dynamic allocation are never taken
    /// (they have no die yet).
    pub fn take_partners(
        &mut self,
        die: u32,
        t: &Txn,
        scan: usize,
        mut visit: impl FnMut(&Txn) -> Visit,
        mut out: impl FnMut(Txn),
    ) {
        let q = match (t.source, t.kind) {
            // Translation reads (cached mapping table) wait on a host request's critical path.
            (Source::Host | Source::Mapping, TxnKind::Read) => Q_READ,
            // Backend refills and prefetches bring data in as host writes do, and like them may
            // not take the GC reserve: waiting at the head of the background queue they would
            // block the GC work behind them.
            // So do a cached mapping table's translation-page programs (`Source::Mapping`).
            (Source::Host | Source::Scrub | Source::Mapping, TxnKind::Program) => Q_WRITE,
            _ => Q_BG,
        };
        let queue = &mut self.queues[die as usize][q];
        let mut taken: u64 = 0;
        let mut window = scan;
        let mut i = 0;
        while i < window.min(queue.len()).min(64) {
            let x = &queue[i];
            if x.kind == t.kind && x.source == t.source {
                let v = visit(x);
                if v.take {
                    out(*x);
                    taken |= 1 << i;
                    window += 1;
                }
                if !v.more {
                    break;
                }
            }
            i += 1;
        }
        // Remove the taken entries, highest index first (each removal shifts the front).
        while taken != 0 {
            let k = 63 - taken.leading_zeros() as usize;
            queue.remove(k);
            self.queued -= 1;
            taken &= !(1 << k);
        }
    }

    /// The heads of `die`'s queues (what it may start next), for prefetching what they will
    /// touch. Also prefetches the queue entries a few places behind each head, so that the
    /// next heads are in cache when they are read.
    #[inline]
    pub fn heads(&self, die: u32) -> impl Iterator<Item = &Txn> {
        let qs = &self.queues[die as usize];
        for q in qs {
            if let Some(t) = q.get(2) {
                crate::prefetch::read(t);
            }
        }
        qs.iter().filter_map(|q| q.front())
    }

    /// Whether a host read is queued on `die`.
    #[inline]
    pub fn has_host_read(&self, die: u32) -> bool {
        !self.queues[die as usize][Q_READ].is_empty()
    }

    /// Transactions still queued (all dies and the shared write queue).
    #[inline]
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Transactions queued on one die.
    pub fn queued_on(&self, die: u32) -> usize {
        self.queues[die as usize].iter().map(|x| x.len()).sum()
    }
}

/// Sentinel re-exported for request slots.
pub const NO_REQ: u32 = NONE;
