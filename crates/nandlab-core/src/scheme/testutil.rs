//! The small device of the schemes' unit tests: the `xia-diffecc` preset's timing (Xia et al.'s
//! program modes and ECCs, `python/nandlab/configs/xia-diffecc.toml`) and a one-plane MLC FTL.

use super::Ctx;
use crate::config::{load, Allocation, VictimPolicy};
use crate::flash::{CellType, Geometry, Timing};
use crate::ftl::Ftl;

/// The timing of the `xia-diffecc` preset.
pub(crate) fn xia_diffecc_timing() -> Timing {
    let text = include_str!("../../../../python/nandlab/configs/xia-diffecc.toml");
    load(text, "xia-diffecc.toml", &[])
        .unwrap()
        .timing()
        .unwrap()
}

/// A one-plane MLC FTL: 8 blocks of 4 pages of 8 KiB, 16 logical pages, 2 streams, static
/// allocation, greedy GC.
pub(crate) fn tiny_ftl() -> Ftl {
    let g = Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 8,
        pages_per_block: 4,
        page_size_bytes: 8192,
        cell: CellType::Mlc,
    };
    Ftl::new(g, 16, 2, Allocation::Static, VictimPolicy::Greedy, 5.0)
}

/// The schemes' view of `ftl` and `timing` at time 0.
pub(crate) fn ctx<'a>(ftl: &'a Ftl, timing: &'a Timing) -> Ctx<'a> {
    Ctx {
        now_ns: 0,
        ftl,
        timing,
    }
}
