//! The replay of concurrent flows (`[[host.flows]]`; the model is in [`crate::host::flows`]):
//! each flow's requests are submitted to its own queue (open loop at its trace times plus its
//! start offset, closed loop as its own completions allow), and the controller fetches them
//! into its `host.max_outstanding` command slots by the arbitration policy. Everything after
//! the fetch — a request's pages, the flash, its completion — is the single-trace path
//! ([`Engine::on_arrival`]); each request carries its flow in its host slot, and its
//! statistics go to the run's and to its flow's.
//!
//! One flow replayed with this loop gives the same report as the single-trace loop
//! (`replay.rs`) apart from the `flows` block: the test `one_flow_is_the_single_trace_run`.

use super::replay::{Beat, Feed};
use super::{Engine, MAX_ARRIVAL_NS};
use crate::config::ReplayMode;
use crate::error::{NandlabError, ProgressFn};
use crate::host::cache::CacheOp;
use crate::host::flows::Arbiter;
use crate::host::RequestSource;
use crate::stats::Stats;
use crate::trace::HostRequest;

/// Per-flow state the engine keeps while replaying flows.
#[derive(Debug)]
pub(crate) struct FlowRuntime {
    /// Per flow: the host counters and latency distributions of its requests (the `host`
    /// fields of [`Stats`]; the rest stays empty).
    pub(crate) stats: Vec<Stats>,
    /// Per flow: requests fetched by the controller and not completed.
    pub(crate) outstanding: Vec<u32>,
}

impl FlowRuntime {
    /// A flow's request completed at `done_ns` (response, wait and service in ns).
    #[inline]
    pub(crate) fn completed(
        &mut self,
        flow: u16,
        write: bool,
        done_ns: u64,
        response_ns: u64,
        wait_ns: u64,
        service_ns: u64,
    ) {
        let f = flow as usize;
        let s = &mut self.stats[f];
        s.last_completion_ns = s.last_completion_ns.max(done_ns);
        s.record_host(write, CacheOp::None, response_ns, wait_ns, service_ns);
        self.outstanding[f] -= 1;
    }
}

/// One flow to replay: its request source and how it submits.
pub struct FlowInput<S> {
    /// The flow's requests, in arrival order (offsets already in the flow's logical range).
    pub src: S,
    /// `open` or `closed`.
    pub mode: ReplayMode,
    /// Its submission-queue depth (≥ 1).
    pub queue_depth: u32,
    /// The flow starts this long after the replay, ns.
    pub start_ns: u64,
}

/// A flow's replay state.
struct Flow<'s, S> {
    input: &'s mut FlowInput<S>,
    feed: Feed,
    /// Open loop: the next request (arrival shifted by the start offset); closed loop: unused.
    head: Option<(HostRequest, CacheOp)>,
    /// No request left.
    done: bool,
}

impl<S: RequestSource> Flow<'_, S> {
    /// When the flow's next request is submitted, if it has one and room in its queue:
    /// open loop its arrival, closed loop now (or its start).
    #[inline]
    fn submit_time(&self, now: u64, outstanding: u32) -> Option<u64> {
        if self.done || outstanding >= self.input.queue_depth {
            return None;
        }
        match self.input.mode {
            ReplayMode::Open => self.head.map(|(r, _)| r.arrival_ns),
            ReplayMode::Closed => Some(now.max(self.input.start_ns)),
        }
    }

    /// The feed's next request as the head, its arrival shifted by the flow's start.
    fn take_head(&mut self) -> Result<(), NandlabError> {
        self.head = match self.feed.ahead.front().copied() {
            Some((mut r, tag)) => {
                r.arrival_ns += self.input.start_ns;
                if r.arrival_ns >= MAX_ARRIVAL_NS {
                    return Err(NandlabError::Sim(format!(
                        "a request of a flow arrives at {} ns with the flow's start_offset_s, \
                         beyond the simulated time range of 2^62 ns; lower the offset",
                        r.arrival_ns
                    )));
                }
                Some((r, tag))
            }
            None => None,
        };
        self.done = self.head.is_none() && self.feed.exhausted;
        Ok(())
    }
}

impl Engine {
    /// Replay `flows` concurrently (see the module documentation). `flow_ids[i]` is the index
    /// of `flows[i]` in the report's `flows` (with `host.replay_only_flow` one flow of the set
    /// is replayed); `n_flows` is the size of the set. `total_hint` (0 = unknown) feeds
    /// `progress(Stage::Replay, done, total)`.
    ///
    /// # Errors
    /// As [`Engine::run`].
    pub fn run_flows<S: RequestSource>(
        &mut self,
        flows: &mut [FlowInput<S>],
        flow_ids: &[u16],
        n_flows: usize,
        mut arbiter: Arbiter,
        total_hint: u64,
        progress: &mut ProgressFn<'_>,
    ) -> Result<(), NandlabError> {
        let max = self.max_requests();
        let mut beat = Beat::new(progress, total_hint);
        self.flow_rt = Some(Box::new(FlowRuntime {
            stats: vec![Stats::default(); n_flows],
            outstanding: vec![0; n_flows],
        }));
        self.start_replay();
        let scale = self.cfg.host.time_scale;
        let mut fl: Vec<Flow<'_, S>> = flows
            .iter_mut()
            .map(|input| Flow {
                input,
                feed: Feed::new(max, scale),
                head: None,
                done: false,
            })
            .collect();
        for f in fl.iter_mut() {
            if f.input.mode == ReplayMode::Open {
                f.feed.fill(&mut f.input.src, |r| self.prefetch_request(r));
                f.feed.held_error()?;
                f.take_head()?;
            }
        }
        self.next_arrival_ns = Self::next_open_request(&fl).map(|r| r.arrival_ns);
        let slots = self.cfg.host.max_outstanding as u64;
        loop {
            self.checkpoint(&mut beat)?;
            let ev_t = self.exec.events.next_time();
            // The earliest submission the controller can fetch now or before the next event.
            let mut first: Option<u64> = None;
            if self.in_flight < slots {
                let rt = self.flow_rt.as_ref().expect("flow runtime");
                for (i, f) in fl.iter().enumerate() {
                    if let Some(t) = f.submit_time(self.now, rt.outstanding[flow_ids[i] as usize]) {
                        first = Some(first.map_or(t, |m: u64| m.min(t)));
                    }
                }
            }
            match (first, ev_t) {
                (Some(a), t) if t.is_none_or(|t| a <= t) => {
                    let now = self.now.max(a);
                    let rt = self.flow_rt.as_ref().expect("flow runtime");
                    let pick = arbiter.pick(|i| {
                        fl[i]
                            .submit_time(now, rt.outstanding[flow_ids[i] as usize])
                            .is_some_and(|t| t <= now)
                    });
                    let Some(i) = pick else {
                        self.fail(format!(
                            "internal error: no flow can submit at {now} ns although one \
                             submits then"
                        ));
                        continue;
                    };
                    self.admit_flow(&mut fl[i], flow_ids[i], a)?;
                    // As the single-trace loop: the next arrival, then the end of the input
                    // or the wait for that arrival (the scheme's idle time: only while no
                    // closed-loop flow is issuing).
                    let next = Self::next_open_request(&fl);
                    self.next_arrival_ns = next.map(|r| r.arrival_ns);
                    if fl.iter().all(|f| f.done) {
                        self.input_ended();
                    } else if let Some(r) = next {
                        if fl
                            .iter()
                            .all(|f| f.done || f.input.mode == ReplayMode::Open)
                        {
                            self.await_arrival(&r);
                        } else {
                            self.prefetch_pages(&r);
                        }
                    }
                }
                (_, Some(_)) => {
                    self.next_event();
                }
                _ => break,
            }
        }
        if fl.iter().any(|f| !f.done) && self.error.is_none() {
            return Err(self.stall_error());
        }
        // The run's latency distributions are the union of the flows' (each request was
        // recorded once, under its flow: `finish_host`).
        let rt = self.flow_rt.as_ref().expect("flow runtime");
        for s in &rt.stats {
            self.stats.untagged_read.absorb(&s.untagged_read);
            self.stats.untagged_write.absorb(&s.untagged_write);
        }
        self.end_replay(&mut beat)
    }

    /// The open-loop flows' next request that arrives first.
    fn next_open_request<S>(fl: &[Flow<'_, S>]) -> Option<HostRequest> {
        fl.iter()
            .filter_map(|f| f.head.map(|(r, _)| r))
            .min_by_key(|r| r.arrival_ns)
    }

    /// Fetch flow `f`'s next request (submitted at `at` ns or before): move time to it,
    /// count it as throttled when it waited in the host, and hand it to
    /// [`Engine::on_arrival`]; then read the flow ahead.
    fn admit_flow<S: RequestSource>(
        &mut self,
        f: &mut Flow<'_, S>,
        id: u16,
        at: u64,
    ) -> Result<(), NandlabError> {
        self.now = self.now.max(at);
        self.arriving_flow = id;
        match f.input.mode {
            ReplayMode::Open => {
                let (r, tag) = f.head.expect("an open flow that submits has a head");
                if r.arrival_ns < self.now {
                    self.stats.host_throttled += 1;
                    if let Some(rt) = self.flow_rt.as_mut() {
                        rt.stats[id as usize].host_throttled += 1;
                    }
                }
                self.on_arrival(r, tag)?;
                f.feed.ahead.pop_front();
                f.feed.held_error()?;
                f.feed.fill(&mut f.input.src, |r| self.prefetch_request(r));
                f.take_head()?;
            }
            ReplayMode::Closed => match f.feed.pull(&mut f.input.src)? {
                Some((mut r, tag)) => {
                    r.arrival_ns = self.now;
                    self.on_arrival(r, tag)?;
                }
                None => f.done = true,
            },
        }
        self.arriving_flow = 0;
        Ok(())
    }

    /// Per-flow host blocks of the report (`flows[i].host`, with its latency CDFs when
    /// `stats.latency_cdf`), in flow order, with each flow's throughput over its own span;
    /// `None` for a single-trace run.
    pub(crate) fn flow_host_reports(&self) -> Option<Vec<serde_json::Value>> {
        let rt = self.flow_rt.as_ref()?;
        let cdf = self.config().stats.latency_cdf;
        Some(
            rt.stats
                .iter()
                .map(|s| {
                    let host = crate::stats::host_report(s);
                    let requests = host.requests;
                    let mut host = serde_json::json!(host);
                    if cdf {
                        host["cdf"] = crate::stats::cdf::cdf_report(s);
                    }
                    serde_json::json!({
                        "host": host,
                        "last_completion_s": s.last_completion_ns as f64 / 1e9,
                        "host_throughput_rps": (s.last_completion_ns > 0).then(||
                            requests as f64 / (s.last_completion_ns as f64 / 1e9)),
                    })
                })
                .collect(),
        )
    }
}
