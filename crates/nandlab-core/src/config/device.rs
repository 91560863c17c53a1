//! `[device]` and `[timing]`: the part — geometry, capacity, over-provisioning, page order,
//! address map — and its operation times (the sources are cited in `configs/default.toml`).

use serde::{Deserialize, Serialize};

use crate::flash::{CellType, PageOrder};

/// Geometry and capacity.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceConfig {
    /// `slc`, `mlc`, `tlc` or `qlc`.
    pub cell: CellType,
    /// Channels (≥ 1).
    pub channels: u32,
    /// Chips (packages) per channel (≥ 1).
    pub chips_per_channel: u32,
    /// Dies per chip (≥ 1).
    pub dies_per_chip: u32,
    /// Planes per die (≥ 1).
    pub planes_per_die: u32,
    /// Pages per block (a multiple of bits per cell).
    pub pages_per_block: u32,
    /// Page size in bytes (512 B … 64 KiB, multiple of 512).
    pub page_size_bytes: u32,
    /// Blocks per plane; 0 = size the device from the trace's address space plus
    /// over-provisioning.
    pub blocks_per_plane: u32,
    /// Logical capacity in bytes; 0 = the trace's address space rounded up to a block stripe.
    /// Ignored when `blocks_per_plane` is set (then logical = physical / (1 + ρ)).
    pub logical_capacity_bytes: u64,
    /// Smallest logical capacity in bytes when it follows the trace's address space
    /// (`blocks_per_plane` and `logical_capacity_bytes` both 0): a trace touching a few pages
    /// still gets a device GC can work on. 0 = no minimum.
    pub min_logical_capacity_bytes: u64,
    /// Over-provisioning ρ = (T − U)/U in percent (see module doc). Default 15.
    pub op_percent_of_logical: Option<f64>,
    /// Over-provisioning (T − U)/T in percent (MQSim's definition). Exclusive with the above.
    pub op_percent_of_physical: Option<f64>,
    /// Page-to-word-line order.
    pub page_order: PageOrder,
    /// How the trace's addresses map onto the modelled logical space
    /// ([`crate::host::address_map`]): `auto` (compact when the span is sparse and a device
    /// sized from it would need more than [`DENSE_MAP_MAX_TABLE_BYTES`] of FTL tables),
    /// `dense` (offsets as they are) or `compact` (only the touched chunks, in order).
    pub address_map: AddressMapMode,
}

/// `device.address_map`: see [`DeviceConfig::address_map`].
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AddressMapMode {
    /// Compact when the trace touches at most half of its span and a device sized from the
    /// span would need more than [`DENSE_MAP_MAX_TABLE_BYTES`] of FTL tables; dense otherwise.
    #[default]
    Auto,
    /// The trace's offsets as they are.
    Dense,
    /// Only the touched chunks, packed in address order.
    Compact,
}

/// With `device.address_map = "auto"`, the FTL table size above which a sparse trace (one
/// touching at most half of its span) is replayed on the compact map: 1 GiB, about a
/// 700 GiB device at 8 KiB pages. Below it a dense device costs little memory and keeps every
/// address as the trace wrote it.
pub const DENSE_MAP_MAX_TABLE_BYTES: u64 = 1 << 30;

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            cell: CellType::Mlc,
            channels: 8,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            pages_per_block: 128,
            page_size_bytes: 8192,
            blocks_per_plane: 0,
            logical_capacity_bytes: 0,
            min_logical_capacity_bytes: 0,
            op_percent_of_logical: None,
            op_percent_of_physical: None,
            page_order: PageOrder::Sequential,
            address_map: AddressMapMode::Auto,
        }
    }
}

/// One program mode (ISPP setting).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProgramModeConfig {
    /// Name in reports.
    pub name: String,
    /// Program latency per page type (LSB, CSB, MSB, TSB), µs; one value applies to all.
    pub program_us: Vec<f64>,
}

/// One ECC kind's fixed timing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EccConfig {
    /// Name in reports.
    pub name: String,
    /// Decode latency, µs.
    #[serde(default)]
    pub decode_us: f64,
    /// Extra array sensing per read, µs (e.g. soft sensing).
    #[serde(default)]
    pub extra_sense_us: f64,
    /// Decode latency of a page with bit errors, µs (FlexECC Table 2: BCH 10); 0 = `decode_us`.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub decode_corrupted_us: f64,
    /// Encode latency before each program, µs (FlexECC Table 2: 0.8); 0 = none.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub encode_us: f64,
    /// Detection only (CRC, FlexECC §2.2): corrupted pages are detected, not corrected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detect_only: bool,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Operation timing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TimingConfig {
    /// Array read latency per page type (LSB, CSB, MSB, TSB), µs; one value applies to all.
    pub read_us: Vec<f64>,
    /// Program latency per page type of the default mode, µs; one value applies to all.
    pub program_us: Vec<f64>,
    /// Block erase latency, µs.
    pub erase_us: f64,
    /// Channel rate, mega-transfers per second.
    pub channel_mt_s: f64,
    /// Channel width, bytes per transfer.
    pub channel_width_bytes: u32,
    /// ECC decode latency of the default ECC (id 0), µs.
    pub ecc_decode_us: f64,
    /// Name of ECC id 0 in reports.
    pub ecc_name: String,
    /// Decode latency of a corrupted page with ECC id 0, µs; 0 = `ecc_decode_us`.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub ecc_decode_corrupted_us: f64,
    /// Encode latency of ECC id 0 before each program, µs; 0 = none.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub ecc_encode_us: f64,
    /// Name of program mode id 0 in reports.
    pub program_mode_name: String,
    /// Additional program modes (ids 1, 2, …; id 0 is `program_us`, named `normal`).
    pub program_modes: Vec<ProgramModeConfig>,
    /// Additional ECC kinds (ids 1, 2, …; id 0 uses `ecc_decode_us`, named `default`).
    pub ecc: Vec<EccConfig>,
    /// One-shot programming (3D TLC/QLC): `program_us` is the time to program a whole word
    /// line — all its bits-per-cell pages in one array operation — and the scheduler programs
    /// the queued pages of a word line together (host programs and GC moves of one open
    /// block; with `sched.multi_plane` also the same word line of the die's other planes).
    /// `false` (every paper preset): each page is its own program operation.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub one_shot_program: bool,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            read_us: vec![45.0],
            program_us: vec![1300.0],
            erase_us: 3800.0,
            channel_mt_s: 400.0,
            channel_width_bytes: 1,
            ecc_decode_us: 0.0,
            ecc_name: "default".into(),
            ecc_decode_corrupted_us: 0.0,
            ecc_encode_us: 0.0,
            program_mode_name: "normal".into(),
            program_modes: Vec::new(),
            ecc: Vec::new(),
            one_shot_program: false,
        }
    }
}
