//! The host interface link (`[link]`, issue 35): the PCIe link between the host and the SSD,
//! so that a fast device is not reported faster than its link allows (MQSim's end-to-end
//! latency, Tavakkol et al., FAST'18 §4: the host interface and PCIe link are part of every
//! request's response time).
//!
//! ```text
//!   host                    downstream (host → device)                      device
//!   submit ──► doorbell 4 B + SQE 64 B (+ write data) ──────────────────►  arrival: FTL, flash …
//!   complete ◄── (read data +) CQE 16 B + MSI-X 4 B ◄── upstream (device → host) ◄── done
//! ```
//!
//! Each direction is one first-come-first-served server: a request's downstream transfer
//! starts when it arrives and the link is free; the device sees the request when the transfer
//! ends. When the device is done with it, its upstream transfer starts as soon as the link is
//! free, and the host sees the completion when that transfer ends. A message of `P` payload
//! bytes goes as `⌈P / max_payload_bytes⌉` TLPs (at least one), each carrying
//! `tlp_overhead_bytes` on the wire, at `lanes ×` the lane rate of the PCIe generation:
//!
//! | generation | transfer rate | encoding | bytes per ns and lane |
//! |---|---|---|---|
//! | 1 | 2.5 GT/s | 8b/10b | 0.25 |
//! | 2 | 5 GT/s | 8b/10b | 0.5 |
//! | 3 | 8 GT/s | 128b/130b | 0.9846 |
//! | 4 | 16 GT/s | 128b/130b | 1.9692 |
//! | 5 | 32 GT/s | 128b/130b | 3.9385 |
//!
//! (PCI Express Base Specification, the electrical sub-block's data rates and encodings.) The
//! per-TLP overhead's default, 28 B, is MQSim's: a 20 B header (64-bit addressing), 6 B of data
//! link layer (sequence number, LCRC) and 2 B of physical-layer framing. The NVMe messages per
//! command (NVM Express Base Specification 2.0: a submission queue entry is 64 B, a completion
//! queue entry 16 B; the SQ tail doorbell and an MSI-X interrupt are 4 B memory writes) are the
//! protocol's per-command cost on the link; `command_overhead_ns` adds a fixed time per
//! command on the downstream path (e.g. the host driver's or the controller's command
//! handling; 0 by default).
//!
//! Readings of ours (the model is simple on purpose, and says so in the report's `link`
//! block): a command is stored and forwarded whole (a read's data starts upstream when its
//! last page is read, not page by page); the downstream transfer of a write carries its data
//! before the device sees the command (the device fetches it at once); link transfer time
//! counts as the request's service, waiting for the link as queue wait.
//!
//! Not modelled: the device's memory-read request TLPs (header only) for the SQE and the write
//! data and their round trip, flow-control credits, ACK/NAK DLLPs and replays, interrupt
//! coalescing, the CQ head doorbell (after the host has seen the completion), trims (served
//! at arrival without a link transfer, as without a link), the cache layer (`[cache]`) and
//! the object device (`[osd]`), which refuse a `[link]`.

use serde::{Deserialize, Serialize};

use crate::config::error::{invalid, ConfigError};
use crate::trace::Op;

/// Which host interface carries the requests (`link.interface`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Interface {
    /// No link: a request reaches the device at its arrival and completes when the device is
    /// done (every paper preset and the default drive).
    #[default]
    None,
    /// A PCIe link with NVMe's messages (this module).
    Pcie,
}

/// `[link]`: the host interface (off by default; left out of the serialized config while off,
/// so reports of runs without a link are unchanged).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// `none` (default) or `pcie`.
    pub interface: Interface,
    /// PCIe generation, 1 to 5 (the lane rate: table in [`crate::host::link`]).
    pub pcie_generation: u32,
    /// Lanes: 1, 2, 4, 8 or 16.
    pub lanes: u32,
    /// Maximum TLP payload, bytes (a power of two from 128 to 4096; 256 is common on hosts,
    /// MQSim's default is 128).
    pub max_payload_bytes: u32,
    /// Bytes each TLP adds on the wire (header, data link layer, framing), 0 to 64.
    pub tlp_overhead_bytes: u32,
    /// Fixed time added to every command's downstream path, ns (0 to 10^9).
    pub command_overhead_ns: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            interface: Interface::None,
            pcie_generation: 3,
            lanes: 4,
            max_payload_bytes: 256,
            tlp_overhead_bytes: 28,
            command_overhead_ns: 0,
        }
    }
}

/// Bytes of an NVMe submission queue entry.
pub const SQE_BYTES: u64 = 64;
/// Bytes of an NVMe completion queue entry.
pub const CQE_BYTES: u64 = 16;
/// Bytes of a doorbell write.
pub const DOORBELL_BYTES: u64 = 4;
/// Bytes of an MSI-X interrupt message.
pub const MSIX_BYTES: u64 = 4;

impl LinkConfig {
    /// Whether no link is configured (the serialized config then leaves the section out).
    pub fn is_off(&self) -> bool {
        self.interface == Interface::None
    }

    /// Check the keys (each error names the key, the value and the allowed values).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a value out of range, or a key set without
    /// `interface = "pcie"`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.is_off() {
            if *self != LinkConfig::default() {
                return Err(invalid(
                    "link.interface",
                    "\"none\"",
                    "link keys are set but no interface is: add interface = \"pcie\" to [link] \
                     (or remove the section)",
                ));
            }
            return Ok(());
        }
        if !(1..=5).contains(&self.pcie_generation) {
            return Err(invalid(
                "link.pcie_generation",
                self.pcie_generation,
                "expected 1 to 5",
            ));
        }
        if ![1, 2, 4, 8, 16].contains(&self.lanes) {
            return Err(invalid(
                "link.lanes",
                self.lanes,
                "expected 1, 2, 4, 8 or 16",
            ));
        }
        if !self.max_payload_bytes.is_power_of_two()
            || !(128..=4096).contains(&self.max_payload_bytes)
        {
            return Err(invalid(
                "link.max_payload_bytes",
                self.max_payload_bytes,
                "expected a power of two from 128 to 4096",
            ));
        }
        if self.tlp_overhead_bytes > 64 {
            return Err(invalid(
                "link.tlp_overhead_bytes",
                self.tlp_overhead_bytes,
                "expected 0 to 64",
            ));
        }
        if self.command_overhead_ns > 1_000_000_000 {
            return Err(invalid(
                "link.command_overhead_ns",
                self.command_overhead_ns,
                "expected 0 to 1e9 ns",
            ));
        }
        Ok(())
    }

    /// Payload bytes per ns of the whole link, one direction.
    pub fn bytes_per_ns(&self) -> f64 {
        let per_lane = match self.pcie_generation {
            1 => 2.5 * 8.0 / 10.0,
            2 => 5.0 * 8.0 / 10.0,
            3 => 8.0 * 128.0 / 130.0,
            4 => 16.0 * 128.0 / 130.0,
            _ => 32.0 * 128.0 / 130.0,
        } / 8.0;
        per_lane * self.lanes as f64
    }
}

/// One direction of the link: a first-come-first-served server.
#[derive(Clone, Debug, Default)]
struct Direction {
    /// When the last transfer booked ends, ns.
    free_ns: u64,
    /// Time spent transferring, ns.
    busy_ns: u64,
    /// Bytes on the wire (payload and TLP overhead).
    wire_bytes: u64,
    /// Payload bytes (NVMe messages and data).
    payload_bytes: u64,
    /// Transfers (one per command and direction).
    transfers: u64,
    /// Time transfers waited for the link, ns.
    wait_ns: u64,
}

/// The link of one run: both directions' state and counters.
#[derive(Clone, Debug)]
pub struct Link {
    cfg: LinkConfig,
    bytes_per_ns: f64,
    down: Direction,
    up: Direction,
}

/// The report's `link` block (see `docs/report.md`).
#[derive(Clone, Debug, Serialize)]
pub struct LinkReport {
    /// `pcie`.
    pub interface: &'static str,
    pub pcie_generation: u32,
    pub lanes: u32,
    /// Payload bandwidth per direction before TLP overhead, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    pub max_payload_bytes: u32,
    pub tlp_overhead_bytes: u32,
    pub command_overhead_ns: u64,
    /// Host → device (doorbells, SQEs, write data).
    pub downstream: DirectionReport,
    /// Device → host (read data, CQEs, interrupts).
    pub upstream: DirectionReport,
    /// What the model leaves out (the module doc of `host::link`).
    pub not_modelled: &'static str,
}

/// One direction in the report.
#[derive(Clone, Debug, Serialize)]
pub struct DirectionReport {
    pub transfers: u64,
    pub payload_bytes: u64,
    /// Payload and TLP overhead.
    pub wire_bytes: u64,
    /// Busy time over the run's simulated span (0 to 1).
    pub utilization: f64,
    /// Mean time a transfer waited for the link, µs.
    pub wait_mean_us: f64,
}

impl Link {
    /// The link `cfg` describes, or `None` without one.
    pub fn new(cfg: &LinkConfig) -> Option<Link> {
        (!cfg.is_off()).then(|| Link {
            cfg: cfg.clone(),
            bytes_per_ns: cfg.bytes_per_ns(),
            down: Direction::default(),
            up: Direction::default(),
        })
    }

    /// Wire time of a message of `payload` bytes, ns (rounded up).
    #[inline]
    fn wire(&self, payload: u64) -> (u64, u64) {
        let mps = self.cfg.max_payload_bytes as u64;
        let tlps = payload.div_ceil(mps).max(1);
        let bytes = payload + tlps * self.cfg.tlp_overhead_bytes as u64;
        (bytes, (bytes as f64 / self.bytes_per_ns).ceil() as u64)
    }

    /// Book a transfer of `messages` (payload bytes of each message, each in its own TLPs) on
    /// `dir` at `now`; returns (end time, transfer time) in ns.
    #[inline]
    fn book(&mut self, down: bool, now: u64, messages: &[u64], extra_ns: u64) -> (u64, u64) {
        let mut t = extra_ns;
        let mut wire = 0;
        let mut payload = 0;
        for &m in messages {
            let (b, ns) = self.wire(m);
            wire += b;
            payload += m;
            t += ns;
        }
        let d = if down { &mut self.down } else { &mut self.up };
        let start = now.max(d.free_ns);
        d.wait_ns += start - now;
        d.free_ns = start + t;
        d.busy_ns += t;
        d.wire_bytes += wire;
        d.payload_bytes += payload;
        d.transfers += 1;
        (d.free_ns, t)
    }

    /// A command submitted at `now`: the doorbell, its SQE and (a write) its data go
    /// downstream. Returns (when the device sees it, the transfer time) in ns.
    #[inline]
    pub fn submit(&mut self, now: u64, op: Op, len_bytes: u64) -> (u64, u64) {
        let data = if op == Op::Write { len_bytes } else { 0 };
        let extra = self.cfg.command_overhead_ns;
        if data > 0 {
            self.book(true, now, &[DOORBELL_BYTES, SQE_BYTES, data], extra)
        } else {
            self.book(true, now, &[DOORBELL_BYTES, SQE_BYTES], extra)
        }
    }

    /// A command the device is done with at `now`: (a read) its data, the CQE and the
    /// interrupt go upstream. Returns (when the host sees the completion, the transfer time).
    #[inline]
    pub fn complete(&mut self, now: u64, op: Op, len_bytes: u64) -> (u64, u64) {
        if op == Op::Read {
            self.book(false, now, &[len_bytes, CQE_BYTES, MSIX_BYTES], 0)
        } else {
            self.book(false, now, &[CQE_BYTES, MSIX_BYTES], 0)
        }
    }

    /// The report block, utilisation over `span_ns`.
    pub fn report(&self, span_ns: u64) -> LinkReport {
        let dir = |d: &Direction| DirectionReport {
            transfers: d.transfers,
            payload_bytes: d.payload_bytes,
            wire_bytes: d.wire_bytes,
            utilization: if span_ns > 0 {
                (d.busy_ns as f64 / span_ns as f64).min(1.0)
            } else {
                0.0
            },
            wait_mean_us: if d.transfers > 0 {
                d.wait_ns as f64 / d.transfers as f64 / 1e3
            } else {
                0.0
            },
        };
        LinkReport {
            interface: "pcie",
            pcie_generation: self.cfg.pcie_generation,
            lanes: self.cfg.lanes,
            bandwidth_bytes_per_s: self.bytes_per_ns * 1e9,
            max_payload_bytes: self.cfg.max_payload_bytes,
            tlp_overhead_bytes: self.cfg.tlp_overhead_bytes,
            command_overhead_ns: self.cfg.command_overhead_ns,
            downstream: dir(&self.down),
            upstream: dir(&self.up),
            not_modelled: "memory-read request TLPs and their round trip, flow-control \
                           credits, ACK/NAK DLLPs, interrupt coalescing, the CQ head doorbell; \
                           data moves per command, not per page; trims cross no link",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcie(generation: u32, lanes: u32) -> Link {
        Link::new(&LinkConfig {
            interface: Interface::Pcie,
            pcie_generation: generation,
            lanes,
            ..LinkConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn wire_time_counts_tlps_and_their_overhead() {
        // Gen1 x1: 0.25 B/ns. 4 KiB at 256 B payload = 16 TLPs of 28 B overhead.
        let l = pcie(1, 1);
        assert_eq!(l.wire(4096), (4096 + 16 * 28, (4544.0f64 / 0.25) as u64));
        // an empty message is one header-only TLP
        assert_eq!(l.wire(0), (28, 112));
        // 257 B needs two TLPs
        assert_eq!(l.wire(257).0, 257 + 2 * 28);
    }

    #[test]
    fn directions_queue_first_come_first_served() {
        let mut l = pcie(1, 1);
        let (t1, x1) = l.submit(0, Op::Write, 4096);
        assert_eq!(x1, l.wire(4).1 + l.wire(64).1 + l.wire(4096).1);
        assert_eq!(t1, x1);
        // a second command at time 0 waits for the first
        let (t2, x2) = l.submit(0, Op::Read, 4096);
        assert_eq!(x2, l.wire(4).1 + l.wire(64).1);
        assert_eq!(t2, t1 + x2);
        assert_eq!(l.down.wait_ns, t1);
        // upstream is independent of downstream
        let (c, y) = l.complete(10, Op::Read, 4096);
        assert_eq!(c, 10 + y);
        assert_eq!(l.up.wait_ns, 0);
        let r = l.report(c);
        assert_eq!(r.downstream.transfers, 2);
        assert_eq!(r.upstream.payload_bytes, 4096 + 16 + 4);
    }

    #[test]
    fn bandwidth_by_generation_and_lanes() {
        assert!((pcie(3, 4).cfg.bytes_per_ns() - 4.0 * 8.0 * 128.0 / 130.0 / 8.0).abs() < 1e-12);
        assert!((pcie(5, 16).cfg.bytes_per_ns() - 16.0 * 4.0 * 128.0 / 130.0).abs() < 1e-9);
    }

    #[test]
    fn keys_are_checked() {
        let on = LinkConfig {
            interface: Interface::Pcie,
            ..LinkConfig::default()
        };
        assert!(on.validate().is_ok());
        for (c, key) in [
            (
                LinkConfig {
                    pcie_generation: 6,
                    ..on.clone()
                },
                "link.pcie_generation",
            ),
            (
                LinkConfig {
                    lanes: 3,
                    ..on.clone()
                },
                "link.lanes",
            ),
            (
                LinkConfig {
                    max_payload_bytes: 300,
                    ..on.clone()
                },
                "link.max_payload_bytes",
            ),
            (
                LinkConfig {
                    tlp_overhead_bytes: 65,
                    ..on.clone()
                },
                "link.tlp_overhead_bytes",
            ),
            (
                LinkConfig {
                    lanes: 8,
                    ..LinkConfig::default()
                },
                "link.interface",
            ),
        ] {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
