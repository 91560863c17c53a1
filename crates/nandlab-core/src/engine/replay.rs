//! The replay loop: host arrivals against the executor's events (open loop: at their trace
//! times, up to `host.max_outstanding` in flight; closed loop: `host.queue_depth` requests
//! outstanding), the timers the engine sets (host completions, scheme ticks, refresh scans,
//! backend fetches, fault injection, super-page holds), and the end of the run.
//!
//! Each turn of the loop takes the earlier of the next arrival and the next event; an arrival
//! at the same time as an event comes first (booking transfers ahead needs it, see
//! [`Engine::new`]).

use std::collections::VecDeque;

use super::{
    Engine, EV_BACKEND, EV_DISK_READ, EV_FAULT, EV_HOST, EV_LINK, EV_MAP, EV_REFRESH, EV_SP_HOLD,
    EV_TICK, ID_MASK, MAX_ARRIVAL_NS,
};
use crate::config::ReplayMode;
use crate::error::{NandlabError, ProgressFn, Stage};
use crate::exec::Event;
use crate::ftl::NONE;
use crate::host::cache::CacheOp;
use crate::host::RequestSource;
use crate::trace::HostRequest;

/// Completed requests between two progress reports.
pub(super) const PROGRESS_EVERY: u64 = 1 << 16;
/// Requests read ahead of the one arriving next (prefetch distance).
const LOOKAHEAD: usize = 4;

/// The host request stream of a replay: reads ahead of arrival so that what the next requests
/// touch can be prefetched. A trace error met while reading ahead is held until the requests
/// before it have arrived, so a run fails at the same point as without read-ahead.
pub(super) struct Feed {
    pulled: u64,
    max: u64,
    scale: f64,
    pub(super) ahead: VecDeque<(HostRequest, CacheOp)>,
    err: Option<NandlabError>,
    pub(super) exhausted: bool,
}

impl Feed {
    /// An empty feed that reads at most `max` requests and scales their arrivals by `scale`.
    pub(super) fn new(max: u64, scale: f64) -> Feed {
        Feed {
            pulled: 0,
            max,
            scale,
            ahead: VecDeque::with_capacity(LOOKAHEAD),
            err: None,
            exhausted: false,
        }
    }

    /// The error of a request read ahead, once the requests before it have arrived (a tuple
    /// pattern would take it, and drop it, while they are still ahead).
    #[inline]
    pub(super) fn held_error(&mut self) -> Result<(), NandlabError> {
        if self.ahead.is_empty() {
            if let Some(e) = self.err.take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The next request from `src` (at most `max`, arrival scaled by `host.time_scale`).
    #[inline]
    pub(super) fn pull<S: RequestSource>(
        &mut self,
        src: &mut S,
    ) -> Result<Option<(HostRequest, CacheOp)>, NandlabError> {
        if self.pulled >= self.max {
            return Ok(None);
        }
        match src.next_request()? {
            Some(mut r) => {
                self.pulled += 1;
                let t = if self.scale != 1.0 {
                    r.arrival_ns as f64 * self.scale
                } else {
                    r.arrival_ns as f64
                };
                if t >= MAX_ARRIVAL_NS as f64 {
                    return Err(NandlabError::Sim(format!(
                        "host request {} arrives {} ns after the first (× host.time_scale = {}: \
                         {t:.3e} ns), beyond the simulated time range of 2^62 ns (146 years); \
                         check the trace's timestamps (unit, a corrupt line) or the time scale",
                        self.pulled, r.arrival_ns, self.scale
                    )));
                }
                if self.scale != 1.0 {
                    r.arrival_ns = t.round() as u64;
                }
                Ok(Some((r, src.tag())))
            }
            None => Ok(None),
        }
    }

    /// Read ahead up to [`LOOKAHEAD`] requests, calling `on_new` for each new one.
    #[inline]
    pub(super) fn fill<S: RequestSource>(
        &mut self,
        src: &mut S,
        mut on_new: impl FnMut(&HostRequest),
    ) {
        while self.ahead.len() < LOOKAHEAD && !self.exhausted {
            match self.pull(src) {
                Ok(Some(r)) => {
                    on_new(&r.0);
                    self.ahead.push_back(r);
                }
                Ok(None) => self.exhausted = true,
                Err(e) => {
                    self.err = Some(e);
                    self.exhausted = true;
                }
            }
        }
    }
}

/// Progress reporting of a replay: `progress(Stage::Replay, done, total)` every
/// [`PROGRESS_EVERY`] completed requests.
pub(super) struct Beat<'p, 'a> {
    pub(super) progress: &'p mut ProgressFn<'a>,
    pub(super) next: u64,
    pub(super) total: u64,
}

impl<'p, 'a> Beat<'p, 'a> {
    /// Progress reports of a replay of `total` requests (0 = unknown).
    pub(super) fn new(progress: &'p mut ProgressFn<'a>, total: u64) -> Self {
        Beat {
            progress,
            next: PROGRESS_EVERY,
            total,
        }
    }
}

impl Engine {
    /// Requests to read from a source: `host.max_requests`, or all when it is 0.
    pub(super) fn max_requests(&self) -> u64 {
        match self.cfg.host.max_requests {
            0 => u64::MAX,
            n => n,
        }
    }

    /// Replay every request of `src`. `total_hint` (0 = unknown) feeds
    /// `progress(Stage::Replay, done, total)`,
    /// called every 65,536 completed requests and once at the end.
    ///
    /// # Errors
    /// Trace errors from the source; [`NandlabError::Sim`] for a request beyond the logical
    /// capacity (without `wrap_offsets`), a device that cannot reclaim space, or a stall.
    pub fn run<S: RequestSource>(
        &mut self,
        src: &mut S,
        total_hint: u64,
        progress: &mut ProgressFn<'_>,
    ) -> Result<(), NandlabError> {
        let max = self.max_requests();
        let mut beat = Beat::new(progress, total_hint.min(max));
        self.start_replay();
        let mut feed = Feed::new(max, self.cfg.host.time_scale);
        match self.cfg.host.mode {
            ReplayMode::Open => self.run_open(src, &mut feed, &mut beat)?,
            ReplayMode::Closed => self.run_closed(src, &mut feed, &mut beat)?,
        }
        self.end_replay(&mut beat)
    }

    /// The start of the replay: note the wear stage it starts in and set the first timers
    /// (scheme tick, refresh scan, fault injection).
    pub(super) fn start_replay(&mut self) {
        self.note_start_stage();
        if let Some(p) = self.tick_period_ns() {
            self.push(p, EV_TICK);
        }
        if self.rf_on {
            self.push(self.now, EV_REFRESH);
        }
        self.schedule_fault();
    }

    /// Note the wear stage the replay starts in (after preconditioning).
    fn note_start_stage(&mut self) {
        let (stage, pe) = (self.ftl.wear_stage(), self.ftl.mean_pe());
        if let Some(rg) = self.rg.as_mut() {
            rg.stage_at_start = stage;
            rg.mean_pe_at_start = pe;
        }
    }

    /// The open loop: requests arrive at their trace times (while fewer than
    /// `host.max_outstanding` are in flight), each before every event at or after its arrival;
    /// ends when no request is left and no event is pending.
    fn run_open<S: RequestSource>(
        &mut self,
        src: &mut S,
        feed: &mut Feed,
        beat: &mut Beat<'_, '_>,
    ) -> Result<(), NandlabError> {
        feed.fill(src, |r| self.prefetch_request(r));
        feed.held_error()?;
        let mut next = feed.ahead.front().copied();
        self.next_arrival_ns = next.map(|(r, _)| r.arrival_ns);
        loop {
            self.checkpoint(beat)?;
            let ev_t = self.exec.events.next_time();
            let room = self.in_flight < self.cfg.host.max_outstanding as u64;
            match (next, ev_t) {
                (Some((r, tag)), t)
                    if (room || t.is_none()) && t.is_none_or(|t| r.arrival_ns <= t) =>
                {
                    if !room {
                        self.fail(format!(
                            "internal error: {} requests outstanding and no event pending",
                            self.in_flight
                        ));
                        continue;
                    }
                    next = self.admit_arrival(r, tag, src, feed)?;
                }
                (_, Some(_)) => {
                    self.next_event();
                }
                _ => return Ok(()),
            }
        }
    }

    /// The closed loop: `host.queue_depth` requests outstanding, each issued when one
    /// completes (at that time, not its trace time); ends when no event is pending.
    fn run_closed<S: RequestSource>(
        &mut self,
        src: &mut S,
        feed: &mut Feed,
        beat: &mut Beat<'_, '_>,
    ) -> Result<(), NandlabError> {
        self.to_issue = self.cfg.host.queue_depth as u64;
        loop {
            self.checkpoint(beat)?;
            self.issue_closed(src, feed)?;
            if !self.next_event() {
                return Ok(());
            }
        }
    }

    /// The top of each turn of the replay loop: stop at the first error an event handler
    /// set, and report progress every [`PROGRESS_EVERY`] completed requests.
    #[inline]
    pub(super) fn checkpoint(&mut self, beat: &mut Beat<'_, '_>) -> Result<(), NandlabError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.completed >= beat.next {
            (beat.progress)(Stage::Replay, self.completed, beat.total);
            beat.next += PROGRESS_EVERY;
        }
        Ok(())
    }

    /// Admit arrival `r` (open loop): move time to it (a request that arrives while the host
    /// is throttled counts in `host_throttled`), split it into transactions and dispatch them
    /// ([`Engine::on_arrival`]), read ahead, and prepare for the request after it (returned;
    /// `None` once the input ends).
    #[inline]
    fn admit_arrival<S: RequestSource>(
        &mut self,
        r: HostRequest,
        tag: CacheOp,
        src: &mut S,
        feed: &mut Feed,
    ) -> Result<Option<(HostRequest, CacheOp)>, NandlabError> {
        if r.arrival_ns < self.now {
            self.stats.host_throttled += 1;
        }
        self.now = self.now.max(r.arrival_ns);
        self.on_arrival(r, tag)?;
        feed.ahead.pop_front();
        feed.held_error()?;
        feed.fill(src, |r| self.prefetch_request(r));
        let next = feed.ahead.front().copied();
        self.next_arrival_ns = next.map(|(r, _)| r.arrival_ns);
        match &next {
            Some((r, _)) => self.await_arrival(r),
            None => self.input_ended(),
        }
        Ok(next)
    }

    /// Before request `r` arrives (open loop): prefetch the pages it touches, and hand the
    /// scheme the idle time until it when that exceeds the scheme's idle threshold.
    #[inline]
    pub(super) fn await_arrival(&mut self, r: &HostRequest) {
        self.prefetch_pages(r);
        if let Some(th) = self.idle_threshold_ns {
            let gap = r.arrival_ns.saturating_sub(self.now);
            if gap > th {
                self.idle(gap);
            }
        }
    }

    /// Issue requests (closed loop) until `host.queue_depth` are outstanding or the input
    /// ends; each arrives now.
    #[inline]
    fn issue_closed<S: RequestSource>(
        &mut self,
        src: &mut S,
        feed: &mut Feed,
    ) -> Result<(), NandlabError> {
        while self.to_issue > 0 && !self.input_done {
            match feed.pull(src)? {
                Some((mut r, tag)) => {
                    self.to_issue -= 1;
                    r.arrival_ns = self.now;
                    self.on_arrival(r, tag)?;
                }
                None => self.input_ended(),
            }
        }
        Ok(())
    }

    /// Advance to the next event: take the earliest from the executor's queue, move time to
    /// it and handle it; `false` when none is pending.
    #[inline]
    pub(super) fn next_event(&mut self) -> bool {
        match self.exec.events.pop() {
            Some((t, ev)) => {
                self.now = t;
                self.handle(ev);
                true
            }
            None => false,
        }
    }

    /// The end of the run: the last error, the final progress report, a stall (work left
    /// with no event pending), then the busy times into the statistics and the request log
    /// flushed and closed.
    pub(super) fn end_replay(&mut self, beat: &mut Beat<'_, '_>) -> Result<(), NandlabError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        (beat.progress)(Stage::Replay, self.completed, beat.total);
        if self.sched.queued() > 0 || self.in_flight > 0 || self.exec.any_busy() {
            return Err(self.stall_error());
        }
        self.stats.die_busy_ns.clone_from(&self.exec.die_busy_ns);
        self.stats
            .channel_busy_ns
            .clone_from(&self.exec.channel_busy_ns);
        if let Some(w) = self.log.as_mut() {
            w.flush()
                .map_err(|err| NandlabError::Sim(format!("stats.request_log: {err}")))?;
        }
        self.log = None;
        Ok(())
    }

    /// The error of a replay that stalled: flash transactions or host requests left and no
    /// event pending.
    #[cold]
    pub(super) fn stall_error(&self) -> NandlabError {
        NandlabError::Sim(format!(
            "simulation stalled at t = {} ns with {} queued flash transactions and {} host \
             requests in flight (free blocks per plane: {:?})",
            self.now,
            self.sched.queued(),
            self.in_flight,
            (0..self.ftl.geo.planes())
                .map(|p| self.ftl.free_blocks(p))
                .take(16)
                .collect::<Vec<_>>()
        ))
    }

    // ----- events -------------------------------------------------------------------------

    /// Handle event `ev` at `self.now`: the end of a die's phase or run, or one of the
    /// engine's timers.
    fn handle(&mut self, ev: Event) {
        self.stats.events += 1;
        let payload = match ev {
            Event::Die(die) => return self.die_event(die),
            Event::Timer(p) => p,
        };
        let id = (payload & ID_MASK) as u32;
        match payload & !ID_MASK {
            EV_HOST => self.finish_host(id),
            EV_BACKEND => self.fetch_returned(id),
            EV_FAULT => self.inject_fault(),
            EV_DISK_READ => {
                let d = self.disk_ns;
                self.host_page_done(id, self.now, d);
            }
            EV_SP_HOLD => {
                self.sp_armed[id as usize] = false;
                self.dispatch(id);
            }
            EV_TICK => self.scheme_tick(),
            EV_REFRESH => self.refresh_scan(),
            EV_MAP => self.map_load_done(id),
            EV_LINK => self.link_arrived(id),
            _ => self.fail(format!("internal error: unknown event {payload:#x}")),
        }
    }

    /// A phase of `die` ended: advance the executor; when that ends its run, complete the
    /// run's transactions (`complete.rs`, which also dispatches the die's next run) and
    /// settle the die (an idle die keeps no pending event).
    #[inline]
    fn die_event(&mut self, die: u32) {
        if let Some(done) = self.exec.advance(die, self.now) {
            self.complete(die, done);
            self.exec.settle(die);
        }
    }

    /// The scheme's tick timer: its periodic work (actions run in the background), or on an
    /// idle device the ticks up to the next arrival in one call; then the next tick while the
    /// device is busy or requests are still to come.
    fn scheme_tick(&mut self) {
        self.actions.clear();
        let ctx = scheme_ctx!(self);
        // On an idle device, the ticks before the next arrival in one call (issue 20:
        // a year between two requests was 525,600 tick events at a 60 s period).
        let p = self.tick_period_ns().unwrap_or(u64::MAX);
        let idle = self.exec.events.is_empty() && self.in_flight == 0;
        let ahead = match self.next_arrival_ns {
            Some(t) if idle && t > self.now => (t - self.now).div_ceil(p),
            _ => 1,
        };
        let mut ticks = 1;
        if ahead >= 2 {
            ticks = self.scheme.on_idle_ticks(ahead, &ctx);
        }
        if ticks < 2 {
            ticks = 1;
            self.scheme.on_tick(&ctx, &mut self.actions);
            self.run_actions(NONE);
        }
        let busy = !self.exec.events.is_empty() || self.in_flight > 0;
        if self.tick_period_ns().is_some() && (busy || !self.input_done) {
            self.push(self.now + ticks * p, EV_TICK);
        }
    }

    /// The refresh-scan timer: start the refresh of every plane with a block due, then the
    /// next scan (IDA §III-C, see `refresh.rs`).
    fn refresh_scan(&mut self) {
        for plane in 0..self.ftl.geo.planes() {
            self.maybe_refresh(plane);
        }
        // Scan while the host is active: refresh started after the last host request
        // would never end on a device that is always refreshing.
        // An empty heap with requests in flight is a stall: stop so `run` reports it.
        if !self.input_done || (self.in_flight > 0 && !self.exec.events.is_empty()) {
            let dt = self.refresh_check_ns().max(1);
            // On an idle device, skip the scans that cannot find anything: those
            // before both the next arrival and the first block due (issue 20: a year
            // of idle time was 36,500 scans of every block at a 1-day period). The
            // scan grid stays the same.
            let mut k = 1;
            let idle = self.exec.events.is_empty()
                && self.in_flight == 0
                && self.rf_block.iter().all(|&b| b == NONE)
                && !self.rf_deferred.iter().any(|&d| d);
            if let (true, Some(arrival)) = (idle, self.next_arrival_ns) {
                let next = self
                    .refresh_next_due_ns()
                    .map_or(arrival, |due| due.min(arrival));
                if next > self.now {
                    k = (next - self.now).div_ceil(dt).max(1);
                }
            }
            self.push(self.now + k * dt, EV_REFRESH);
        }
    }
}
