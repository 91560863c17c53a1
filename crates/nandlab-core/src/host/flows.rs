//! Concurrent I/O flows (`[[host.flows]]`, `nandlab run -t A -t B`): several traces replayed
//! at once on one device, each on its own NVMe submission/completion queue pair, the
//! controller fetching commands by an arbitration policy — the multi-queue host of MQSim
//! (Tavakkol et al., FAST'18, §3 "Host interface": one queue pair per flow, flows on separate
//! logical ranges) and of the NVMe specification (rev. 1.4, §4.13 "Command Arbitration").
//!
//! ```text
//!   flow 0 trace ──► SQ 0 (queue_depth₀) ─┐
//!   flow 1 trace ──► SQ 1 (queue_depth₁) ─┼─► arbitration ─► device (host.max_outstanding
//!   flow 2 trace ──► SQ 2 (queue_depth₂) ─┘   (RR / WRR)       commands in flight) ─► CQ of
//!                                                                                   each flow
//! ```
//!
//! The model:
//! * A flow's request is *submitted* at its trace time × `host.time_scale` plus the flow's
//!   `start_offset_s` (open loop), or, closed loop, the moment one of the flow's
//!   `queue_depth` outstanding requests completes (from `start_offset_s` on). An open-loop
//!   flow holds at most `queue_depth` requests submitted and not completed (its SQ depth); a
//!   request arriving at a full SQ waits in the host, its response time still counting from
//!   its trace time (as `host.max_outstanding` does for one trace).
//! * The controller holds at most `host.max_outstanding` commands of all flows (its command
//!   slots). When a slot is free it fetches the oldest command of the SQ the arbitration
//!   picks among the SQs whose head has been submitted. Arbitration only decides anything
//!   while commands wait: on a device with free slots every command is fetched when it is
//!   submitted.
//! * `host.arbitration = "round_robin"` (default): the SQs in turn. `"weighted_round_robin"`:
//!   NVMe's weighted round robin with urgent priority class — SQs of class `urgent` first
//!   (round robin among them), then the classes `high`, `medium` and `low` in a weighted round
//!   robin with `host.wrr_weights` = [high, medium, low] commands per round (default [4, 2, 1],
//!   nandlab's choice: NVMe leaves the weights to host software), round robin within a class.
//!   NVMe's arbitration burst is 1 (one command per SQ per turn).
//! * Logical ranges (`host.flow_space`): `"partitioned"` (default, as MQSim): each flow has
//!   its own range of the logical space, in flow order, so flows share no data (a namespace
//!   per flow); `"shared"`: every flow addresses the whole space as written (flows that
//!   touch the same LBAs overwrite each other's data). With a device sized from the traces,
//!   a partitioned flow's range is its trace's span rounded up to 1 MiB; with a fixed logical
//!   capacity each flow gets an equal share (a request beyond it is an error, or wraps within
//!   the flow's range with `ftl.wrap_offsets`).
//!
//! Each flow's statistics are the `host` block of a single run, per flow, in the report's
//! `flows`. Slowdown (a flow's mean response time shared over alone) and fairness (the least
//! slowdown over the greatest: MQSim's definition, FAST'18 §5) need a run of each flow alone;
//! `host.replay_only_flow` replays one flow of the set on the same device (the same sizing,
//! logical ranges and preconditioning: the other flows' data is on it, they send nothing), and
//! the Python front runs those and adds `slowdown` and `fairness` to the report
//! (`nandlab.flows`).
//!
//! Not modelled: the admin queue, NVMe's arbitration burst above 1, SQ and CQ memory and
//! doorbells per flow (the link model `[link]` books one SQE/CQE per command whatever its
//! flow), interrupt coalescing, per-flow scheduling inside the device (FLIN's fairness-aware
//! scheduler): the flash scheduler sees the commands of all flows alike.

use serde::{Deserialize, Serialize};

use crate::config::error::{check_finite_in, check_range, invalid, ConfigError};
use crate::config::ReplayMode;

/// Most flows in one run.
pub const MAX_FLOWS: usize = 64;

/// NVMe priority class of a flow's submission queue (NVMe 1.4, §4.13.2).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Served before every other class (strict priority).
    Urgent,
    /// Weighted round robin, `host.wrr_weights[0]` commands per round.
    High,
    /// Weighted round robin, `host.wrr_weights[1]` commands per round.
    #[default]
    Medium,
    /// Weighted round robin, `host.wrr_weights[2]` commands per round.
    Low,
}

impl Priority {
    fn is_default(&self) -> bool {
        *self == Priority::Medium
    }
}

/// The controller's command arbitration among the flows' submission queues.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Arbitration {
    /// The SQs in turn, one command each.
    #[default]
    RoundRobin,
    /// NVMe's weighted round robin with urgent priority class.
    WeightedRoundRobin,
}

impl Arbitration {
    /// The default (round robin): left out of the serialized config.
    pub fn is_default(&self) -> bool {
        *self == Arbitration::RoundRobin
    }
}

/// Where the flows' logical ranges lie.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FlowSpace {
    /// Each flow its own range, in flow order (MQSim's).
    #[default]
    Partitioned,
    /// Every flow addresses the whole logical space as written.
    Shared,
}

impl FlowSpace {
    /// The default (partitioned): left out of the serialized config.
    pub fn is_default(&self) -> bool {
        *self == FlowSpace::Partitioned
    }
}

/// The default WRR weights [high, medium, low] (nandlab's choice; NVMe leaves them to the
/// host).
pub const DEFAULT_WRR_WEIGHTS: [u32; 3] = [4, 2, 1];

/// True for the default WRR weights (left out of the serialized config).
pub fn default_wrr_weights(w: &[u32; 3]) -> bool {
    *w == DEFAULT_WRR_WEIGHTS
}

/// One flow (`[[host.flows]]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FlowConfig {
    /// Name in the report (default: the trace file's name; unique).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The trace file (relative paths from the working directory); empty when given on the
    /// command line (`nandlab run -t A -t B`, one per flow in order).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trace: String,
    /// `open` or `closed` (default: `host.mode`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ReplayMode>,
    /// The flow's submission-queue depth: open loop, at most this many of its requests
    /// submitted and not completed; closed loop, this many outstanding at all times. 0 (the
    /// default) = `host.max_outstanding` (open) or `host.queue_depth` (closed).
    #[serde(skip_serializing_if = "is_zero")]
    pub queue_depth: u32,
    /// The flow starts this long after the replay starts, s: its open-loop arrivals are
    /// shifted by it; a closed-loop flow issues its first requests then.
    #[serde(skip_serializing_if = "is_zero_f")]
    pub start_offset_s: f64,
    /// NVMe priority class (only with `host.arbitration = "weighted_round_robin"`).
    #[serde(skip_serializing_if = "Priority::is_default")]
    pub priority: Priority,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn is_zero_f(x: &f64) -> bool {
    *x == 0.0
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            name: String::new(),
            trace: String::new(),
            mode: None,
            queue_depth: 0,
            start_offset_s: 0.0,
            priority: Priority::Medium,
        }
    }
}

/// Validate the flow keys of `[host]` (`flows`, `arbitration`, `wrr_weights`, `flow_space`,
/// `replay_only_flow`); `host_mode` is `host.mode`.
///
/// # Errors
/// [`ConfigError::Invalid`] naming the key, value and allowed range.
pub fn validate(
    flows: &[FlowConfig],
    arbitration: Arbitration,
    wrr_weights: &[u32; 3],
    flow_space: FlowSpace,
    only: &str,
) -> Result<(), ConfigError> {
    if flows.is_empty() {
        if !arbitration.is_default() {
            return Err(invalid(
                "host.arbitration",
                "\"weighted_round_robin\"",
                "arbitrates among flows: add [[host.flows]] (or run -t A -t B)",
            ));
        }
        if !default_wrr_weights(wrr_weights) {
            return Err(invalid(
                "host.wrr_weights",
                format!("{wrr_weights:?}"),
                "weights of weighted round robin among flows: add [[host.flows]]",
            ));
        }
        if !flow_space.is_default() {
            return Err(invalid(
                "host.flow_space",
                "\"shared\"",
                "the logical ranges of flows: add [[host.flows]]",
            ));
        }
        if !only.is_empty() {
            return Err(invalid(
                "host.replay_only_flow",
                format!("{only:?}"),
                "names one of [[host.flows]]: add them",
            ));
        }
        return Ok(());
    }
    if flows.len() > MAX_FLOWS {
        return Err(invalid(
            "host.flows",
            format!("{} flows", flows.len()),
            format!("at most {MAX_FLOWS} flows"),
        ));
    }
    if arbitration != Arbitration::WeightedRoundRobin {
        if !default_wrr_weights(wrr_weights) {
            return Err(invalid(
                "host.wrr_weights",
                format!("{wrr_weights:?}"),
                "applies to host.arbitration = \"weighted_round_robin\" only: set it",
            ));
        }
        if let Some(f) = flows.iter().position(|f| !f.priority.is_default()) {
            return Err(invalid(
                &format!("host.flows[{f}].priority"),
                format!("{:?}", flows[f].priority).to_lowercase(),
                "priority classes apply to host.arbitration = \"weighted_round_robin\" only: \
                 set it, or remove the priority",
            ));
        }
    }
    for (i, w) in wrr_weights.iter().enumerate() {
        let key = ["high", "medium", "low"][i];
        check_range(&format!("host.wrr_weights ({key})"), *w, 1, 256)?;
    }
    for (i, f) in flows.iter().enumerate() {
        check_range(
            &format!("host.flows[{i}].queue_depth"),
            f.queue_depth,
            0,
            1 << 20,
        )?;
        check_finite_in(
            &format!("host.flows[{i}].start_offset_s"),
            f.start_offset_s,
            0.0..=1e9,
            "allowed range is 0 ..= 1e9 s",
        )?;
        if !f.name.is_empty() {
            if let Some(j) = flows[..i].iter().position(|g| g.name == f.name) {
                return Err(invalid(
                    &format!("host.flows[{i}].name"),
                    format!("{:?}", f.name),
                    format!("flow {j} has the same name: names must be unique"),
                ));
            }
        }
    }
    Ok(())
}

/// The controller's arbitration state: which flow's SQ gives the next command.
#[derive(Clone, Debug)]
pub struct Arbiter {
    policy: Arbitration,
    /// Per flow: its class (0 urgent, 1 high, 2 medium, 3 low).
    class: Vec<u8>,
    /// Per class: the flow after the one served last (round robin within the class).
    next: [usize; 4],
    /// WRR credits left this round for high, medium, low.
    credit: [u32; 3],
    weights: [u32; 3],
}

impl Arbiter {
    /// An arbiter over flows of the given classes.
    pub fn new(policy: Arbitration, classes: &[Priority], weights: [u32; 3]) -> Arbiter {
        let class = classes
            .iter()
            .map(|c| match (policy, c) {
                (Arbitration::RoundRobin, _) => 2,
                (_, Priority::Urgent) => 0,
                (_, Priority::High) => 1,
                (_, Priority::Medium) => 2,
                (_, Priority::Low) => 3,
            })
            .collect();
        Arbiter {
            policy,
            class,
            next: [0; 4],
            credit: weights,
            weights,
        }
    }

    /// Pick the next flow among those for which `ready(flow)` is true (their SQ head is
    /// submitted and the controller can take it), or `None`. Advances the round-robin
    /// pointers and WRR credits for the flow picked.
    pub fn pick(&mut self, mut ready: impl FnMut(usize) -> bool) -> Option<usize> {
        let n = self.class.len();
        let mut in_class = |class: usize, next: &mut [usize; 4]| -> Option<usize> {
            for k in 0..n {
                let f = (next[class] + k) % n;
                if self.class[f] as usize == class && ready(f) {
                    next[class] = (f + 1) % n;
                    return Some(f);
                }
            }
            None
        };
        if self.policy == Arbitration::RoundRobin {
            return in_class(2, &mut self.next);
        }
        if let Some(f) = in_class(0, &mut self.next) {
            return Some(f);
        }
        // Weighted round robin among high, medium and low: a class with credit left gives
        // the next command; when no ready class has credit left, a new round starts.
        for _round in 0..2 {
            for c in 0..3 {
                if self.credit[c] == 0 {
                    continue;
                }
                if let Some(f) = in_class(c + 1, &mut self.next) {
                    self.credit[c] -= 1;
                    return Some(f);
                }
            }
            self.credit = self.weights;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_takes_turns_among_ready_flows() {
        let mut a = Arbiter::new(Arbitration::RoundRobin, &[Priority::Medium; 3], [4, 2, 1]);
        let got: Vec<_> = (0..6).map(|_| a.pick(|_| true).unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
        let got: Vec<_> = (0..4).map(|_| a.pick(|f| f != 1).unwrap()).collect();
        assert_eq!(got, [0, 2, 0, 2]);
        assert_eq!(a.pick(|_| false), None);
    }

    #[test]
    fn weighted_round_robin_serves_classes_by_weight_and_urgent_first() {
        use Priority::*;
        let mut a = Arbiter::new(
            Arbitration::WeightedRoundRobin,
            &[High, Low, Urgent],
            [3, 2, 1],
        );
        // Urgent (flow 2) whenever it is ready.
        assert_eq!(a.pick(|_| true), Some(2));
        // Then high 3 : low 1 per round (no medium flow: its credit goes unused).
        let got: Vec<_> = (0..8).map(|_| a.pick(|f| f != 2).unwrap()).collect();
        assert_eq!(got, [0, 0, 0, 1, 0, 0, 0, 1]);
        // A class with nothing ready does not hold the others back.
        let got: Vec<_> = (0..3).map(|_| a.pick(|f| f == 1).unwrap()).collect();
        assert_eq!(got, [1, 1, 1]);
    }
}
