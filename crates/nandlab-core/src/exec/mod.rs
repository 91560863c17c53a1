//! The flash executor: dies, channels and the event queue. It runs flash transactions as short
//! lists of phases and knows nothing of what the transactions mean — no LPN, no mapping, no GC —
//! so the block FTL (`engine`) and the object-based device (`osd`) drive the same executor and
//! the same per-die scheduler ([`crate::sched`]).
//!
//! ```text
//!  front end ── Txn (kind, plane, PPN, source, owner token, …) ──► sched: per-die queues
//!      ▲                                                               │ pick (priority, SpaceView)
//!      │ completion: the finished Txn(s), start time, controller tail   ▼
//!      └──────────────────────────────── Executor: die runs of phases ─ Array │ Bus(channel) │ Ctrl
//!                                          EventQueue: one slot per die + timers
//! ```
//!
//! # Phases
//!
//! A die executes one *run* at a time: the transactions it serves together (one; a multi-plane
//! operation will start several at once, up to `planes_per_die`) and a list of phases.
//! `Array` holds the die alone (sense, program, erase), `Bus` holds the die and its channel
//! (page transfer), `Ctrl` holds the die while the controller works (ECC decode of a GC move
//! before it is written back). The executor advances a run as far as it can without a later
//! decision: array and controller phases just advance the die's clock; a bus phase requested
//! *now* reserves the channel at `max(now, channel free)`. The channel is a timeline served in
//! request order — requests are made in simulated-time order, so this is exactly a FIFO
//! channel queue. A bus phase needed later (after a sense) waits for an event at that time, so
//! that requests other dies make in between are served first — unless the channel has only
//! this die, where nothing can come in between and the whole run is one event.
//!
//! *Booking ahead* (opt-in, [`Executor::set_book_ahead`]): a transfer needed later on a shared
//! channel is booked when its run starts, with no event at its request time, when it is the
//! run's last use of the channel and the run does not end in an array phase (a read: sense,
//! transfer, maybe decode). It was booked exactly as its own request would book it *unless*
//! another die asks for the channel before that request: every request first settles the
//! channel's booking ahead — it stands when its request time comes first in event order, and
//! is undone (the channel's timeline restored, the die's event put back at its request time)
//! when the new request comes first. Event order is (time, slot), the order in which
//! [`EventQueue`] hands events out; the executor follows it from [`Executor::advance`] (the last
//! die event at the current time) so that a front end must only process an input that arrives
//! at time t before every event at t, and anything else in event order (both front ends do).
//! Timing is identical with it on or off; only the number of events falls (one per read whose
//! transfer no other die's request overtakes).
//!
//! A run may end with a controller *tail* (`tail_ns`): time the transaction still needs after
//! the die and channel are released (a host read's ECC decode); the front end adds it to the
//! completion time.
//!
//! # Events
//!
//! [`EventQueue`]: one pending event per die (the end of its current phase or run), plus the
//! front end's timers; simultaneous events fire timers first, then dies by index.
//!
//! # Extension points
//!
//! * Program/erase suspension: a die in an `Array` phase is at a known phase with a known end
//!   ([`Executor::phase_at`], [`EventQueue::die_time`]); suspending it means splitting that
//!   phase (remaining time, plus suspend/resume latencies) and moving the die's single event
//!   ([`EventQueue::set_die`]) — no stale event can fire.
//! * Multi-plane operations: a run serves up to `planes_per_die` staged transactions
//!   ([`Executor::stage`]) sharing one list of phases; completion hands all of them back.
//!
//! # Driving it
//!
//! A front end owns a [`crate::sched::Sched`] and an [`Executor`], answers the scheduler's
//! [`crate::sched::SpaceView`] questions from its own space accounting, and runs this loop (the
//! block device's is `engine::dispatch`; the object device's works the same way):
//!
//! ```
//! use nandlab_core::config::Priority;
//! use nandlab_core::exec::{Event, Executor, Phase, Txn, TxnKind};
//! use nandlab_core::sched::{Sched, SpaceView};
//! use nandlab_core::scheme::{Placement, Source};
//!
//! /// A device with room everywhere.
//! struct Roomy;
//! impl SpaceView for Roomy {
//!     fn can_start(&self, _: &Txn) -> bool { true }
//!     fn plane_urgent(&self, _: u32) -> bool { false }
//!     fn write_plane(&self, _: &Txn, first: u32, _: u32, _: u32) -> Option<u32> { Some(first) }
//! }
//!
//! // Two dies on one channel, one plane each.
//! let (mut sched, mut exec) = (Sched::new(2, 1, Priority::ReadFirst, false), Executor::new(2, 1, 1));
//! let dispatch = |sched: &mut Sched, exec: &mut Executor, die: u32, now: u64| {
//!     if exec.busy(die) { return; }
//!     if let Some(t) = sched.pick(die, &Roomy) {
//!         exec.stage(die, 0, t); // the front end may edit it: exec.stage_mut(die, 0)
//!         match t.kind {
//!             TxnKind::Read => { exec.push_phase(die, Phase::Array(50_000)); exec.push_phase(die, Phase::Bus(20_000)); }
//!             _ => { exec.push_phase(die, Phase::Bus(20_000)); exec.push_phase(die, Phase::Array(1_300_000)); }
//!         }
//!         exec.start(die, 1, 0, now);
//!     }
//! };
//! // Owner tokens (here: 7 and 8) come back with the finished transactions.
//! for (plane, owner) in [(0, 7), (1, 8)] {
//!     let die = sched.enqueue(TxnKind::Read, Source::Host, 0, 42, plane, owner, Placement::NONE);
//!     dispatch(&mut sched, &mut exec, die, 0);
//! }
//! let mut done = Vec::new();
//! while let Some((now, ev)) = exec.events.pop() {
//!     if let Event::Die(die) = ev {
//!         if exec.advance(die, now).is_some() {
//!             done.push((now, exec.done_txn(die, 0).owner));
//!             dispatch(&mut sched, &mut exec, die, now);
//!             exec.settle(die);
//!         }
//!     }
//! }
//! // Both sense at once; the second transfer waits for the first on the shared channel.
//! assert_eq!(done, vec![(70_000, 7), (90_000, 8)]);
//! ```
//!
//! # What it does not model
//!
//! Command/address cycles on the bus, cache-register pipelining, and the controller's own
//! concurrency limits (decode engines, DMA): controller phases take their time but never queue.

pub mod events;

pub use events::{Event, EventQueue};

use crate::scheme::{Placement, Source};

/// Sentinel for "no plane / no page / no owner".
pub const NONE: u32 = u32::MAX;

/// Most phases in one run (sense, transfer out, decode, transfer in, program).
pub const MAX_PHASES: usize = 6;

/// What a transaction does on its die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TxnKind {
    /// Read page `ppn` (sense + transfer out; decode in the controller).
    Read,
    /// Program a page (transfer in + program); the front end allocates the page at dispatch.
    Program,
    /// Relocation of page `ppn` within its plane (sense, [transfer out, decode, transfer in],
    /// program).
    Move,
    /// Erase block `ppn` (a block id here).
    Erase,
    /// Voltage adjustment of the word line holding page `ppn`, in place (IDA data refresh).
    Adjust,
}

/// One flash transaction: what the scheduler queues and the executor runs. 28 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Txn {
    /// Kind.
    pub kind: TxnKind,
    /// Why it exists (host, GC, refresh, …); host transactions have their own queues.
    pub source: Source,
    /// Placement of programs and moves (stream, mode, ECC, region).
    pub placement: Placement,
    /// Plane it runs on (the die is `plane / planes_per_die`); [`NONE`] for a host write under
    /// dynamic allocation until a die takes it.
    pub plane: u32,
    /// Source page (read, move), block (erase), or the allocated page (program, after
    /// dispatch).
    pub ppn: u32,
    /// The owner's logical page (block FTL: the LPN; other front ends: their own id).
    pub lpn: u32,
    /// Owner token (block FTL: the host request slot, or [`NONE`]).
    pub owner: u32,
    /// Enqueue order (FIFO priority; compared with wrapping arithmetic).
    pub seq: u32,
}

/// One phase of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The die alone for `ns` (sense, program, erase).
    Array(u64),
    /// The die and its channel for `ns` (page transfer).
    Bus(u64),
    /// The die waits for the controller for `ns` (decode of a relocated page).
    Ctrl(u64),
}

#[derive(Clone, Copy, Debug)]
struct DieRun {
    phases: [Phase; MAX_PHASES],
    n: u8,
    i: u8,
    /// Transactions served by the run (0: idle).
    ops: u8,
    start_ns: u64,
    tail_ns: u64,
    /// Sum of all phases, and of the bus phases, ns.
    total_ns: u64,
    bus_ns: u64,
    /// The segment of phases run by the last `run_phases` (phases `seg_first .. i`): when it
    /// started and how long its first phase waited for the channel.
    seg_first: u8,
    seg_start_ns: u64,
    seg_wait_ns: u64,
    /// Times this run was suspended ([`Executor::suspend`]).
    suspends: u8,
    /// Start of the die's current busy stretch (`start_ns`, or the resume time).
    busy_from_ns: u64,
    /// The phase booked ahead ([`NO_AHEAD`]: none) and how long it waited for the channel.
    ahead_i: u8,
    ahead_wait_ns: u64,
}

/// No phase booked ahead.
const NO_AHEAD: u8 = u8::MAX;

/// A transfer booked ahead on a channel (module documentation, "Booking ahead"): the die, its
/// request time, and what undoing it restores. `die` = [`NONE`]: none.
#[derive(Clone, Copy, Debug)]
struct Ahead {
    die: u32,
    t_ns: u64,
    free_before_ns: u64,
    bus_ns: u64,
}

const NO_BOOKING: Ahead = Ahead {
    die: NONE,
    t_ns: 0,
    free_before_ns: 0,
    bus_ns: 0,
};

impl DieRun {
    const IDLE: DieRun = DieRun {
        phases: [Phase::Array(0); MAX_PHASES],
        n: 0,
        i: 0,
        ops: 0,
        start_ns: 0,
        tail_ns: 0,
        total_ns: 0,
        bus_ns: 0,
        seg_first: 0,
        seg_start_ns: 0,
        seg_wait_ns: 0,
        suspends: 0,
        busy_from_ns: 0,
        ahead_i: NO_AHEAD,
        ahead_wait_ns: 0,
    };
}

/// A finished run, as [`Executor::advance`] hands it back.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    /// Time the run started (dispatch), ns.
    pub start_ns: u64,
    /// Controller time still due after the die was released, ns.
    pub tail_ns: u64,
    /// Number of transactions (read them with [`Executor::done_txn`]).
    pub ops: u8,
}

/// Dies, channels and the event queue. See the module documentation.
#[derive(Clone, Debug)]
pub struct Executor {
    runs: Vec<DieRun>,
    /// Running transactions, `ops_per_die` per die.
    txns: Vec<Txn>,
    ops_per_die: usize,
    chan_of_die: Vec<u32>,
    /// Time each channel is free from (a FIFO timeline).
    chan_free_at: Vec<u64>,
    /// Whether more than one die shares the channel.
    chan_shared: Vec<bool>,
    /// Pending events.
    pub events: EventQueue,
    /// Busy time of each die (dispatch to release), ns.
    pub die_busy_ns: Vec<u64>,
    /// Busy time of each channel (transfers), ns.
    pub channel_busy_ns: Vec<u64>,
    /// Per die: the program/erase run suspended for host reads, if any.
    suspended: Vec<Option<DieRun>>,
    /// Its transactions, `ops_per_die` per die (allocated once).
    suspended_txns: Vec<Txn>,
    /// Booking ahead on, and each channel's transfer booked ahead.
    book_ahead: bool,
    ahead: Vec<Ahead>,
    /// Event order of what the front end does now: (time, slot) of the last die event
    /// advanced (slot = die + 1), or (time, 0) before any die event at that time.
    key: (u64, u32),
}

const NO_TXN: Txn = Txn {
    kind: TxnKind::Read,
    source: Source::Host,
    placement: Placement::NONE,
    plane: NONE,
    ppn: NONE,
    lpn: NONE,
    owner: NONE,
    seq: 0,
};

impl Executor {
    /// An executor for `dies` dies on `channels` channels; die `d` is on channel
    /// `d / dies_per_channel`. A run serves at most `ops_per_die` transactions.
    pub fn new(dies: u32, channels: u32, ops_per_die: u32) -> Executor {
        let per = (dies / channels.max(1)).max(1);
        let chan_of_die: Vec<u32> = (0..dies).map(|d| d / per).collect();
        let ops = ops_per_die.max(1) as usize;
        Executor {
            runs: vec![DieRun::IDLE; dies as usize],
            txns: vec![NO_TXN; dies as usize * ops],
            ops_per_die: ops,
            chan_of_die,
            chan_free_at: vec![0; channels as usize],
            chan_shared: vec![per > 1; channels as usize],
            events: EventQueue::new(dies),
            die_busy_ns: vec![0; dies as usize],
            channel_busy_ns: vec![0; channels as usize],
            suspended: vec![None; dies as usize],
            suspended_txns: vec![NO_TXN; dies as usize * ops],
            book_ahead: false,
            ahead: vec![NO_BOOKING; channels as usize],
            key: (0, 0),
        }
    }

    /// Book transfers ahead (module documentation, "Booking ahead"): fewer events, same
    /// timing. The front end must process an input arriving at time t before every event at t.
    pub fn set_book_ahead(&mut self, on: bool) {
        self.book_ahead = on;
    }

    /// Number of dies.
    #[inline]
    pub fn dies(&self) -> u32 {
        self.runs.len() as u32
    }

    /// Whether die `die` is running something.
    #[inline]
    pub fn busy(&self, die: u32) -> bool {
        self.runs[die as usize].ops != 0
    }

    /// Whether any die is running something (or holds a suspended run).
    pub fn any_busy(&self) -> bool {
        self.runs.iter().any(|r| r.ops != 0) || self.suspended.iter().any(Option::is_some)
    }

    /// Whether die `die` holds a suspended run (to resume with [`Executor::resume`]).
    #[inline]
    pub fn has_suspended(&self, die: u32) -> bool {
        self.suspended[die as usize].is_some()
    }

    /// Times the run on die `die` has been suspended so far.
    #[inline]
    pub fn suspends(&self, die: u32) -> u8 {
        self.runs[die as usize].suspends
    }

    /// Program/erase suspension: suspend the run on die `die` at `now_ns`, when it is in an
    /// `Array` phase that ends after `now_ns` and that phase is its last (the program or erase
    /// itself; a sense before a transfer is not suspended). The rest of that phase, plus
    /// `resume_ns`, runs when [`Executor::resume`] is called; meanwhile the die is idle for
    /// other runs (the host reads that suspended it). Returns whether it suspended. The
    /// run's transactions and start time are kept (its completion reports the original
    /// start, so its service time includes the suspension).
    pub fn suspend(&mut self, die: u32, now_ns: u64, resume_ns: u64) -> bool {
        let d = die as usize;
        if self.suspended[d].is_some() {
            return false;
        }
        let Some((Phase::Array(_), end)) = self.phase_at(die, now_ns) else {
            return false;
        };
        let r = self.runs[d];
        if r.i != r.n || end <= now_ns || !matches!(r.phases[r.n as usize - 1], Phase::Array(_)) {
            return false;
        }
        // The last phase is the one running: every earlier phase ended by now.
        let mut run = r;
        run.phases[0] = Phase::Array(end - now_ns + resume_ns);
        run.n = 1;
        run.i = 0;
        run.suspends = r.suspends.saturating_add(1);
        let base = d * self.ops_per_die;
        let n = r.ops as usize;
        self.suspended_txns[base..base + n].copy_from_slice(&self.txns[base..base + n]);
        self.die_busy_ns[d] += now_ns - r.busy_from_ns;
        self.suspended[d] = Some(run);
        self.runs[d].ops = 0;
        self.events.clear_die(die);
        true
    }

    /// Resume the suspended run of idle die `die` at `now_ns` (see [`Executor::suspend`]).
    pub fn resume(&mut self, die: u32, now_ns: u64) {
        let d = die as usize;
        debug_assert!(!self.busy(die));
        let Some(mut run) = self.suspended[d].take() else {
            return;
        };
        let base = d * self.ops_per_die;
        let n = run.ops as usize;
        self.txns[base..base + n].copy_from_slice(&self.suspended_txns[base..base + n]);
        run.total_ns = match run.phases[0] {
            Phase::Array(x) => x,
            _ => 0,
        };
        run.bus_ns = 0;
        run.busy_from_ns = now_ns;
        self.runs[d] = run;
        self.run_phases(die, now_ns);
    }

    /// The phase die `die` is in at `t_ns` (between the start of its current segment of
    /// phases and its pending event) and when that phase ends; `None` when the die is idle or
    /// `t_ns` is outside the segment. A transfer waiting for a busy channel counts as its bus
    /// phase. What program/erase suspension needs: whether a read arriving at `t_ns` finds the
    /// die in an `Array` phase, and how much of it is left.
    pub fn phase_at(&self, die: u32, t_ns: u64) -> Option<(Phase, u64)> {
        let r = &self.runs[die as usize];
        if r.ops == 0 || t_ns < r.seg_start_ns {
            return None;
        }
        let mut t = r.seg_start_ns;
        for k in r.seg_first..r.i {
            let p = r.phases[k as usize];
            let d = match p {
                Phase::Array(d) | Phase::Ctrl(d) => d,
                Phase::Bus(d) if k == r.seg_first => d + r.seg_wait_ns,
                Phase::Bus(d) if k == r.ahead_i => d + r.ahead_wait_ns,
                Phase::Bus(d) => d,
            };
            if t_ns < t + d {
                return Some((p, t + d));
            }
            t += d;
        }
        None
    }

    /// Put `t` as transaction `k` of the next run of idle die `die`, and return it for the
    /// front end to fill in at dispatch (the page a program gets, …). Staging the picked
    /// transaction first and editing it in place keeps the copy out of the dispatch path.
    /// Staging transaction 0 also clears the run's phases ([`Executor::push_phase`]).
    #[inline]
    pub fn stage(&mut self, die: u32, k: usize, t: Txn) -> &mut Txn {
        debug_assert!(!self.busy(die) && k < self.ops_per_die);
        if k == 0 {
            self.runs[die as usize].n = 0;
        }
        let slot = &mut self.txns[die as usize * self.ops_per_die + k];
        *slot = t;
        slot
    }

    /// Staged transaction `k` of idle die `die`, to edit before [`Executor::start`].
    #[inline]
    pub fn stage_mut(&mut self, die: u32, k: usize) -> &mut Txn {
        &mut self.txns[die as usize * self.ops_per_die + k]
    }

    /// Append a phase to the staged run of idle die `die` (at most [`MAX_PHASES`]). Phases are
    /// written in place, not built elsewhere and copied. The run's totals are summed at
    /// [`Executor::start`], not here: the compiler merged the two running sums into one 16-byte
    /// load after an 8-byte store, which cannot be store-forwarded and waited for the store
    /// buffer to drain behind the FTL's random L2P stores (12 % of the default drive's replay
    /// time).
    #[inline(always)]
    pub fn push_phase(&mut self, die: u32, p: Phase) {
        let r = &mut self.runs[die as usize];
        debug_assert!(r.ops == 0 && (r.n as usize) < MAX_PHASES);
        r.phases[r.n as usize] = p;
        r.n += 1;
    }

    /// Start a run on idle die `die` at `now_ns`: its first `ops` staged transactions
    /// (1 ..= `ops_per_die`, see [`Executor::stage`]) through the pushed phases (at least one),
    /// then `tail_ns` of controller time after the die is released.
    #[inline]
    pub fn start(&mut self, die: u32, ops: usize, tail_ns: u64, now_ns: u64) {
        debug_assert!(!self.busy(die));
        debug_assert!(ops >= 1 && ops <= self.ops_per_die);
        let r = &mut self.runs[die as usize];
        debug_assert!(r.n >= 1);
        r.i = 0;
        r.ops = ops as u8;
        r.start_ns = now_ns;
        r.busy_from_ns = now_ns;
        r.suspends = 0;
        r.tail_ns = tail_ns;
        r.ahead_i = NO_AHEAD;
        let (mut total, mut bus) = (0u64, 0u64);
        for p in &r.phases[..r.n as usize] {
            match *p {
                Phase::Array(d) | Phase::Ctrl(d) => total += d,
                Phase::Bus(d) => {
                    total += d;
                    bus += d;
                }
            }
        }
        r.total_ns = total;
        r.bus_ns = bus;
        self.run_phases(die, now_ns);
    }

    /// Run die `die`'s phases from the current one as far as possible without an event, and
    /// set the die's event at the end of what was run.
    #[inline]
    fn run_phases(&mut self, die: u32, now_ns: u64) {
        let ch = self.chan_of_die[die as usize] as usize;
        let shared = self.chan_shared[ch];
        let r = &mut self.runs[die as usize];
        r.seg_first = r.i;
        r.seg_start_ns = now_ns;
        r.seg_wait_ns = 0;
        if !shared && r.i == 0 {
            // Only this die uses the channel, and it is free whenever the die asks: every
            // transfer starts when its turn comes, so the run ends after the sum of its phases.
            // (`chan_free_at` only matters for shared channels.)
            r.i = r.n;
            self.channel_busy_ns[ch] += r.bus_ns;
            self.events.set_die(die, now_ns + r.total_ns);
            return;
        }
        let mut t = now_ns;
        loop {
            // The phases up to a transfer requested later, or one requested now while a
            // transfer is booked ahead on the channel (settled first).
            let r = &mut self.runs[die as usize];
            let mut stop = None;
            while r.i < r.n {
                match r.phases[r.i as usize] {
                    Phase::Array(d) | Phase::Ctrl(d) => t += d,
                    Phase::Bus(d) => {
                        if (t > now_ns && shared) || self.ahead[ch].die != NONE {
                            stop = Some(d);
                            break;
                        }
                        let s = t.max(self.chan_free_at[ch]);
                        if r.i == r.seg_first {
                            r.seg_wait_ns = s - t;
                        }
                        self.chan_free_at[ch] = s + d;
                        self.channel_busy_ns[ch] += d;
                        t = s + d;
                    }
                }
                r.i += 1;
            }
            let Some(d) = stop else {
                break;
            };
            // Event order of the requests made now.
            let cur = self.key.max((now_ns, 0));
            if t == now_ns || !shared {
                self.settle_ahead(ch, cur);
                continue;
            }
            match self.try_book_ahead(die, ch, t, d, cur) {
                Some(end) => {
                    t = end;
                    self.runs[die as usize].i += 1;
                }
                None => break,
            }
        }
        self.events.set_die(die, t);
    }

    /// Book the transfer of `d` ns that die `die` (on shared channel `ch`) requests at
    /// `t_ns` > now, ahead, when it may be (module documentation): it is the run's last
    /// transfer, the run does not end in an array phase, and no earlier booking ahead on the
    /// channel is still to come in event order (`cur`: now). Returns the end of the transfer.
    #[inline]
    fn try_book_ahead(
        &mut self,
        die: u32,
        ch: usize,
        t_ns: u64,
        d: u64,
        cur: (u64, u32),
    ) -> Option<u64> {
        if !self.book_ahead {
            return None;
        }
        let r = &self.runs[die as usize];
        let (i, n) = (r.i as usize, r.n as usize);
        if matches!(r.phases[n - 1], Phase::Array(_))
            || r.phases[i + 1..n]
                .iter()
                .any(|p| matches!(p, Phase::Bus(_)))
        {
            return None;
        }
        let p = self.ahead[ch];
        if p.die != NONE {
            if (p.t_ns, p.die + 1) > cur {
                // Its request is still to come: this booking would rest on it.
                return None;
            }
            // Its request came: it stands.
            self.ahead[ch] = NO_BOOKING;
        }
        let free = self.chan_free_at[ch];
        let s = t_ns.max(free);
        self.ahead[ch] = Ahead {
            die,
            t_ns,
            free_before_ns: free,
            bus_ns: d,
        };
        self.chan_free_at[ch] = s + d;
        self.channel_busy_ns[ch] += d;
        let r = &mut self.runs[die as usize];
        r.ahead_i = r.i;
        r.ahead_wait_ns = s - t_ns;
        Some(s + d)
    }

    /// A transfer is requested now (event order `cur`) on channel `ch`, which has a booking
    /// ahead: it stands when its request came first; otherwise it is undone — the channel's
    /// timeline as before it, its die back at the transfer with its event at the request time.
    fn settle_ahead(&mut self, ch: usize, cur: (u64, u32)) {
        let p = self.ahead[ch];
        self.ahead[ch] = NO_BOOKING;
        if (p.t_ns, p.die + 1) < cur {
            return;
        }
        self.chan_free_at[ch] = p.free_before_ns;
        self.channel_busy_ns[ch] -= p.bus_ns;
        let r = &mut self.runs[p.die as usize];
        r.i = r.ahead_i;
        r.ahead_i = NO_AHEAD;
        self.events.set_die(p.die, p.t_ns);
    }

    /// Die `die`'s event fired at `now_ns`: continue its run, or finish it (the die is idle
    /// again) and return what finished; its transactions are [`Executor::done_txn`] until the
    /// next [`Executor::start`] on the die. After a finish the caller either starts the die
    /// again or calls [`Executor::settle`] before the next event is taken.
    #[inline]
    pub fn advance(&mut self, die: u32, now_ns: u64) -> Option<Done> {
        self.key = self.key.max((now_ns, die + 1));
        let r = &self.runs[die as usize];
        if r.i < r.n {
            self.run_phases(die, now_ns);
            return None;
        }
        let done = Done {
            start_ns: r.start_ns,
            tail_ns: r.tail_ns,
            ops: r.ops,
        };
        self.die_busy_ns[die as usize] += now_ns - r.busy_from_ns;
        self.runs[die as usize].ops = 0;
        Some(done)
    }

    /// After a finished run was handled: an idle die has no pending event.
    #[inline]
    pub fn settle(&mut self, die: u32) {
        if !self.busy(die) {
            self.events.clear_die(die);
        }
    }

    /// Transaction `k` of the run die `die` finished last.
    #[inline]
    pub fn done_txn(&self, die: u32, k: usize) -> Txn {
        self.txns[die as usize * self.ops_per_die + k]
    }

    /// Transaction `k` of the run on die `die` (staged, running or last finished).
    #[inline]
    pub fn txn(&self, die: u32, k: usize) -> &Txn {
        &self.txns[die as usize * self.ops_per_die + k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn() -> Txn {
        NO_TXN
    }

    /// Stage one transaction of `phases` on idle `die` and start it at `now_ns` (`tail_ns`
    /// after its last phase).
    fn run(x: &mut Executor, die: u32, phases: &[Phase], tail_ns: u64, now_ns: u64) {
        x.stage(die, 0, txn());
        for &p in phases {
            x.push_phase(die, p);
        }
        x.start(die, 1, tail_ns, now_ns);
    }

    fn drain(x: &mut Executor) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        while let Some((t, ev)) = x.events.pop() {
            if let Event::Die(d) = ev {
                if x.advance(d, t).is_some() {
                    out.push((t, d));
                    x.settle(d);
                }
            }
        }
        out
    }

    #[test]
    fn shared_channel_serves_transfers_in_request_order() {
        // Two dies on one channel: both sense 10, then transfer 5. The second transfer waits.
        let mut x = Executor::new(2, 1, 1);
        run(&mut x, 0, &[Phase::Array(10), Phase::Bus(5)], 0, 0);
        run(&mut x, 1, &[Phase::Array(10), Phase::Bus(5)], 0, 0);
        assert_eq!(drain(&mut x), vec![(15, 0), (20, 1)]);
        assert_eq!(x.channel_busy_ns, vec![10]);
        assert_eq!(x.die_busy_ns, vec![15, 20]);
    }

    #[test]
    fn own_channel_runs_a_whole_read_as_one_event() {
        let mut x = Executor::new(2, 2, 1);
        run(&mut x, 1, &[Phase::Array(10), Phase::Bus(5)], 3, 0);
        assert_eq!(x.events.die_time(1), Some(15));
        let (t, ev) = x.events.pop().unwrap();
        assert_eq!((t, ev), (15, Event::Die(1)));
        let d = x.advance(1, t).unwrap();
        x.settle(1);
        assert!(x.events.is_empty());
        assert_eq!((d.start_ns, d.tail_ns, d.ops), (0, 3, 1));
        assert!(!x.busy(1));
    }

    #[test]
    fn phase_at_follows_the_run() {
        // Own channel: a move (sense 10, out 5, decode 2, in 5, program 100) is one segment.
        let mut x = Executor::new(2, 2, 1);
        let mv = [
            Phase::Array(10),
            Phase::Bus(5),
            Phase::Ctrl(2),
            Phase::Bus(5),
            Phase::Array(100),
        ];
        run(&mut x, 0, &mv, 0, 1000);
        assert_eq!(x.phase_at(0, 999), None);
        assert_eq!(x.phase_at(0, 1000), Some((Phase::Array(10), 1010)));
        assert_eq!(x.phase_at(0, 1012), Some((Phase::Bus(5), 1015)));
        assert_eq!(x.phase_at(0, 1016), Some((Phase::Ctrl(2), 1017)));
        assert_eq!(x.phase_at(0, 1021), Some((Phase::Bus(5), 1022)));
        assert_eq!(x.phase_at(0, 1050), Some((Phase::Array(100), 1122)));
        assert_eq!(x.phase_at(0, 1122), None);
        // Shared channel: die 1 waits for die 0's transfer; its segment starts with the wait.
        let mut x = Executor::new(2, 1, 1);
        for d in 0..2 {
            run(&mut x, d, &[Phase::Bus(8), Phase::Array(100)], 0, 0);
        }
        assert_eq!(x.phase_at(1, 3), Some((Phase::Bus(8), 16)));
        assert_eq!(x.phase_at(1, 16), Some((Phase::Array(100), 116)));
        assert_eq!(x.events.die_time(1), Some(116));
    }

    /// Drive `x` with a random stream of runs (reads, reads with a decode, programs, moves,
    /// erases; arrival times and phase lengths on a coarse grid, so that ties are common) the
    /// way a front end does: an arrival at time t before every event at t, one FIFO of runs per
    /// die. Returns what finished (time, die, run id), each die's phase at each arrival, the
    /// busy times, and the events taken.
    #[allow(clippy::type_complexity)]
    fn random_replay(
        x: &mut Executor,
        seed: u64,
        runs: usize,
    ) -> (
        Vec<(u64, u32, usize)>,
        Vec<Option<(Phase, u64)>>,
        Vec<u64>,
        Vec<u64>,
        usize,
    ) {
        let mut st = seed;
        let mut rnd = |n: u64| {
            st = st
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (st >> 33) % n
        };
        let dies = x.dies();
        let mut arrivals = Vec::new();
        let mut t = 0;
        for id in 0..runs {
            t += rnd(4) * 5;
            let die = rnd(dies as u64) as u32;
            let g = |k: u64| k * 5;
            let phases: Vec<Phase> = match rnd(6) {
                0 | 1 => vec![Phase::Array(g(1 + rnd(4))), Phase::Bus(g(1 + rnd(3)))],
                2 => vec![
                    Phase::Array(g(rnd(4))),
                    Phase::Bus(g(1 + rnd(3))),
                    Phase::Ctrl(g(1 + rnd(2))),
                ],
                3 => vec![Phase::Bus(g(1 + rnd(3))), Phase::Array(g(2 + rnd(6)))],
                4 => vec![
                    Phase::Array(g(1 + rnd(3))),
                    Phase::Bus(g(1 + rnd(2))),
                    Phase::Ctrl(g(rnd(2))),
                    Phase::Bus(g(1 + rnd(2))),
                    Phase::Array(g(2 + rnd(6))),
                ],
                _ => vec![Phase::Array(g(1 + rnd(8)))],
            };
            arrivals.push((t, die, id, phases));
        }
        let mut queues: Vec<std::collections::VecDeque<(usize, Vec<Phase>)>> =
            vec![Default::default(); dies as usize];
        let mut running = vec![usize::MAX; dies as usize];
        let start = |x: &mut Executor,
                     q: &mut std::collections::VecDeque<(usize, Vec<Phase>)>,
                     running: &mut usize,
                     die: u32,
                     now: u64| {
            if let Some((id, ph)) = q.pop_front() {
                run(x, die, &ph, 0, now);
                *running = id;
            }
        };
        let (mut done, mut phases, mut events) = (Vec::new(), Vec::new(), 0);
        let mut next = 0;
        loop {
            let ev_t = x.events.next_time();
            if next < arrivals.len() && ev_t.is_none_or(|e| arrivals[next].0 <= e) {
                let (now, die, id, ph) = arrivals[next].clone();
                next += 1;
                queues[die as usize].push_back((id, ph));
                if !x.busy(die) {
                    start(
                        x,
                        &mut queues[die as usize],
                        &mut running[die as usize],
                        die,
                        now,
                    );
                }
                phases.extend((0..dies).map(|d| x.phase_at(d, now)));
                continue;
            }
            let Some((now, Event::Die(die))) = x.events.pop() else {
                break;
            };
            events += 1;
            if x.advance(die, now).is_some() {
                done.push((now, die, running[die as usize]));
                start(
                    x,
                    &mut queues[die as usize],
                    &mut running[die as usize],
                    die,
                    now,
                );
                x.settle(die);
            }
        }
        (
            done,
            phases,
            x.die_busy_ns.clone(),
            x.channel_busy_ns.clone(),
            events,
        )
    }

    #[test]
    fn booking_ahead_changes_no_timing_only_the_events() {
        let (mut fewer, mut total) = (0, 0);
        for seed in 0..200u64 {
            // 2 channels of 3 dies, and 1 channel of 4.
            let (dies, channels) = if seed % 2 == 0 { (6, 2) } else { (4, 1) };
            let mut off = Executor::new(dies, channels, 1);
            let mut on = Executor::new(dies, channels, 1);
            on.set_book_ahead(true);
            let a = random_replay(&mut off, seed, 300);
            let b = random_replay(&mut on, seed, 300);
            assert_eq!(a.0, b.0, "seed {seed}: completions");
            // The phase of every die at every arrival: the same where the run without booking
            // ahead knows it (its segment ends at the event that booking ahead saves, so it
            // knows less).
            for (k, (x, y)) in a.1.iter().zip(&b.1).enumerate() {
                assert!(
                    x.is_none() || x == y,
                    "seed {seed}, step {k}: {x:?} vs {y:?}"
                );
            }
            assert_eq!((&a.2, &a.3), (&b.2, &b.3), "seed {seed}: busy times");
            assert_eq!(a.0.len(), 300);
            assert!(
                b.4 <= a.4,
                "seed {seed}: {} events booking ahead, {} without",
                b.4,
                a.4
            );
            fewer += a.4 - b.4;
            total += a.4;
        }
        // Booking ahead happens (and is undone: the ties and the busy channels see to that).
        assert!(fewer * 20 > total, "{fewer} of {total} events saved");
    }

    #[test]
    fn a_transfer_booked_ahead_yields_to_an_earlier_request() {
        // Die 0 senses 10 then transfers 5: booked ahead at [10, 15], no event at 10. Die 1
        // asks for the channel at 5 (a program: transfer 8, then 100): it comes first, so die
        // 0's booking is undone and its transfer waits until 13.
        let mut x = Executor::new(2, 1, 1);
        x.set_book_ahead(true);
        run(&mut x, 0, &[Phase::Array(10), Phase::Bus(5)], 0, 0);
        assert_eq!(x.events.die_time(0), Some(15));
        run(&mut x, 1, &[Phase::Bus(8), Phase::Array(100)], 0, 5);
        assert_eq!(x.events.die_time(0), Some(10));
        assert_eq!(drain(&mut x), vec![(18, 0), (113, 1)]);
        assert_eq!(x.channel_busy_ns, vec![13]);
    }

    #[test]
    fn a_transfer_requested_now_queues_behind_the_channel() {
        let mut x = Executor::new(2, 1, 1);
        run(&mut x, 0, &[Phase::Bus(8), Phase::Array(100)], 0, 0);
        run(&mut x, 1, &[Phase::Bus(8), Phase::Array(100)], 0, 2);
        assert_eq!(drain(&mut x), vec![(108, 0), (116, 1)]);
    }
}
