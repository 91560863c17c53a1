//! Transaction scheduler: flash transactions, per-die queues and the dispatch priority.
//!
//! Each die has three FIFO queues: host reads, host writes, and background work (GC moves and
//! erases, scheme rewrites, refresh). With `priority = "read_first"` a free die takes, in order:
//! a host read; then host writes before background work, unless one of the die's planes is
//! short of free blocks (`Ftl::gc_urgent`), in which case background work goes first. With
//! `priority = "fifo"` it takes the oldest dispatchable transaction of the three queues. A
//! program whose plane has no free page for it (host writes may not take the GC reserve) is not
//! dispatchable and waits for GC; it never blocks the other queues.
//!
//! Transactions live in a slab with a free list, so steady-state replay allocates nothing.

use std::collections::VecDeque;

use crate::config::Priority;
use crate::ftl::{Ftl, NONE};
use crate::scheme::{Placement, Source};

/// What a transaction does on its die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnKind {
    /// Read page `ppn` (sense + transfer out; decode in the controller).
    Read,
    /// Program `lpn` (transfer in + program); the page is allocated at dispatch.
    Program,
    /// GC relocation of `ppn` within its plane (sense, [transfer out, decode, transfer in],
    /// program).
    Move,
    /// Erase block `ppn` (a block id here).
    Erase,
    /// IDA voltage adjustment of the word line holding page `ppn`, in place (data refresh).
    Adjust,
}

/// One flash transaction.
#[derive(Clone, Copy, Debug)]
pub struct Txn {
    /// Kind.
    pub kind: TxnKind,
    /// Why it exists.
    pub source: Source,
    /// Logical page (reads, programs, moves).
    pub lpn: u32,
    /// Source page (read, move), block (erase), or the allocated page (program, after
    /// dispatch).
    pub ppn: u32,
    /// Plane it runs on.
    pub plane: u32,
    /// Host request slot, or [`NONE`].
    pub req: u32,
    /// Placement of programs and moves.
    pub placement: Placement,
    /// Enqueue order (FIFO priority and stable ties).
    pub seq: u64,
    /// Dispatch time, ns.
    pub start_ns: u64,
    /// Controller decode time of a read, set at dispatch, ns.
    pub decode_ns: u64,
}

const Q_READ: usize = 0;
const Q_WRITE: usize = 1;
const Q_BG: usize = 2;

/// Per-die queues and the transaction slab.
#[derive(Debug)]
pub struct Sched {
    txns: Vec<Txn>,
    free_txns: Vec<u32>,
    queues: Vec<[VecDeque<u32>; 3]>,
    /// Dynamic allocation: host writes wait here until some die is free to take one.
    shared_writes: VecDeque<u32>,
    dynamic: bool,
    die_rr: Vec<u32>,
    planes_per_die: u32,
    priority: Priority,
    seq: u64,
}

impl Sched {
    /// Queues for `dies` dies. With `dynamic`, host writes are not bound to a plane when they
    /// arrive: the next die that is free (and has a plane with space) takes the oldest one, and
    /// picks its plane round-robin, preferring planes that do not need GC.
    pub fn new(dies: u32, planes_per_die: u32, priority: Priority, dynamic: bool) -> Sched {
        Sched {
            txns: Vec::with_capacity(1024),
            free_txns: Vec::with_capacity(1024),
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
            priority,
            seq: 0,
        }
    }

    /// The transaction with id `id`.
    #[inline]
    pub fn txn(&self, id: u32) -> &Txn {
        &self.txns[id as usize]
    }

    /// Mutable access to a transaction.
    #[inline]
    pub fn txn_mut(&mut self, id: u32) -> &mut Txn {
        &mut self.txns[id as usize]
    }

    /// Create a transaction and queue it on its plane's die. Returns its id and its die, or
    /// [`NONE`] for a host write under dynamic allocation (any die may take it: the caller
    /// dispatches every idle die). `plane` is ignored for those.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(
        &mut self,
        kind: TxnKind,
        source: Source,
        lpn: u32,
        ppn: u32,
        plane: u32,
        req: u32,
        placement: Placement,
    ) -> (u32, u32) {
        let t = Txn {
            kind,
            source,
            lpn,
            ppn,
            plane,
            req,
            placement,
            seq: self.seq,
            start_ns: 0,
            decode_ns: 0,
        };
        self.seq += 1;
        let id = match self.free_txns.pop() {
            Some(id) => {
                self.txns[id as usize] = t;
                id
            }
            None => {
                self.txns.push(t);
                (self.txns.len() - 1) as u32
            }
        };
        if self.dynamic && source == Source::Host && kind == TxnKind::Program {
            self.shared_writes.push_back(id);
            return (id, NONE);
        }
        let q = match (source, kind) {
            (Source::Host, TxnKind::Read) => Q_READ,
            (Source::Host, TxnKind::Program) => Q_WRITE,
            _ => Q_BG,
        };
        let die = plane / self.planes_per_die;
        self.queues[die as usize][q].push_back(id);
        (id, die)
    }

    /// Return a finished transaction's slot to the free list.
    #[inline]
    pub fn release(&mut self, id: u32) {
        self.free_txns.push(id);
    }

    fn dispatchable(&self, id: u32, ftl: &Ftl) -> bool {
        let t = &self.txns[id as usize];
        match t.kind {
            TxnKind::Program => ftl.can_allocate_in(
                t.plane,
                t.placement.region,
                t.placement.stream,
                t.source == Source::Host || (t.source == Source::Migration && ftl.regions() > 1),
            ),
            TxnKind::Move => {
                ftl.can_allocate_in(t.plane, t.placement.region, t.placement.stream, false)
            }
            TxnKind::Read | TxnKind::Erase | TxnKind::Adjust => true,
        }
    }

    fn die_urgent(&self, die: u32, ftl: &Ftl) -> bool {
        let p0 = die * self.planes_per_die;
        (p0..p0 + self.planes_per_die).any(|p| ftl.plane_gc_urgent(p))
    }

    /// A plane of `die` that can take a host write of `placement` now, round-robin, preferring
    /// planes whose pool for it does not need GC.
    fn dynamic_plane(&self, die: u32, placement: Placement, ftl: &Ftl) -> Option<u32> {
        let p0 = die * self.planes_per_die;
        let start = self.die_rr[die as usize];
        let (region, stream) = (placement.region, placement.stream);
        let order = (0..self.planes_per_die).map(|k| p0 + (start + k) % self.planes_per_die);
        order
            .clone()
            .find(|&p| {
                !ftl.needs_gc(ftl.pool(p, region)) && ftl.can_allocate_in(p, region, stream, true)
            })
            .or_else(|| {
                order
                    .clone()
                    .find(|&p| ftl.can_allocate_in(p, region, stream, true))
            })
    }

    /// Take the next transaction for `die` under the priority policy, or `None` when nothing is
    /// dispatchable now.
    pub fn pick(&mut self, die: u32, ftl: &Ftl) -> Option<u32> {
        if self.dynamic {
            return self.pick_dynamic(die, ftl);
        }
        let qs = &self.queues[die as usize];
        let head_ok = |q: usize| -> Option<u32> {
            let id = *qs[q].front()?;
            self.dispatchable(id, ftl).then_some(id)
        };
        let chosen = match self.priority {
            Priority::ReadFirst => {
                let order = if self.die_urgent(die, ftl) {
                    [Q_READ, Q_BG, Q_WRITE]
                } else {
                    [Q_READ, Q_WRITE, Q_BG]
                };
                order.into_iter().find(|&q| head_ok(q).is_some())
            }
            Priority::Fifo => [Q_READ, Q_WRITE, Q_BG]
                .into_iter()
                .filter_map(|q| head_ok(q).map(|id| (self.txns[id as usize].seq, q)))
                .min()
                .map(|(_, q)| q),
        }?;
        self.queues[die as usize][chosen].pop_front()
    }

    fn pick_dynamic(&mut self, die: u32, ftl: &Ftl) -> Option<u32> {
        let d = die as usize;
        let write = self.shared_writes.front().and_then(|&id| {
            let placement = self.txns[id as usize].placement;
            self.dynamic_plane(die, placement, ftl).map(|p| (id, p))
        });
        let bg = self.queues[d][Q_BG]
            .front()
            .copied()
            .filter(|&id| self.dispatchable(id, ftl));
        let read = self.queues[d][Q_READ].front().copied();
        let take_write = |s: &mut Sched, (id, p): (u32, u32)| {
            s.shared_writes.pop_front();
            s.txns[id as usize].plane = p;
            s.die_rr[d] = (p - die * s.planes_per_die + 1) % s.planes_per_die;
            Some(id)
        };
        match self.priority {
            Priority::ReadFirst => {
                if read.is_some() {
                    return self.queues[d][Q_READ].pop_front();
                }
                let urgent = self.die_urgent(die, ftl);
                match (write, bg) {
                    (Some(w), Some(_)) if !urgent => take_write(self, w),
                    (_, Some(_)) => self.queues[d][Q_BG].pop_front(),
                    (Some(w), None) => take_write(self, w),
                    (None, None) => None,
                }
            }
            Priority::Fifo => {
                let seq = |id: u32| self.txns[id as usize].seq;
                let cands = [
                    read.map(|id| (seq(id), 0)),
                    write.map(|(id, _)| (seq(id), 1)),
                    bg.map(|id| (seq(id), 2)),
                ];
                match cands.into_iter().flatten().min()?.1 {
                    0 => self.queues[d][Q_READ].pop_front(),
                    1 => take_write(self, write?),
                    _ => self.queues[d][Q_BG].pop_front(),
                }
            }
        }
    }

    /// Transactions still queued (all dies and the shared write queue).
    pub fn queued(&self) -> usize {
        self.shared_writes.len()
            + self
                .queues
                .iter()
                .map(|q| q.iter().map(|x| x.len()).sum::<usize>())
                .sum::<usize>()
    }

    /// Transactions queued on one die.
    pub fn queued_on(&self, die: u32) -> usize {
        self.queues[die as usize].iter().map(|x| x.len()).sum()
    }
}

/// Sentinel re-exported for request slots.
pub const NO_REQ: u32 = NONE;
