//! Sizing the device from the trace's address space and over-provisioning, in the FTL's pages.

use super::error::{human_bytes, invalid, ConfigError};
use super::Config;
use crate::flash::Geometry;

impl Config {
    /// Over-provisioning as the fraction ρ = (T − U)/U.
    pub fn op_fraction_of_logical(&self) -> f64 {
        match (
            self.device.op_percent_of_logical,
            self.device.op_percent_of_physical,
        ) {
            (Some(v), _) => v / 100.0,
            (None, Some(p)) => {
                let p = p / 100.0;
                p / (1.0 - p)
            }
            (None, None) => 0.15,
        }
    }

    /// Mapping units per flash page (`ftl.mapping_unit_bytes`; 1 when the FTL maps pages).
    pub fn map_units(&self) -> u32 {
        match self.ftl.mapping_unit_bytes {
            0 => 1,
            u => (self.device.page_size_bytes / u).max(1),
        }
    }

    /// The FTL's page, bytes: the mapping unit, or the flash page when it maps pages. Every
    /// LPN, PPN and page count of the FTL and the engine is in these units.
    pub fn map_page_bytes(&self) -> u32 {
        self.device.page_size_bytes / self.map_units()
    }

    /// Size the geometry. `trace_max_end_bytes` is the end of the highest byte the trace
    /// touches (used when neither `blocks_per_plane` nor `logical_capacity_bytes` is set).
    ///
    /// Returns the FTL's geometry and the logical capacity in its pages (mapping units with
    /// `ftl.mapping_unit_bytes`: page size = the unit, pages per block × units per page; see
    /// [`Config::map_page_bytes`]). Logical capacity is rounded up to a block stripe (one
    /// block in every plane); physical blocks per plane = ⌈logical blocks per plane × (1 + ρ)⌉.
    pub fn size_device(&self, trace_max_end_bytes: u64) -> Result<(Geometry, u64), ConfigError> {
        let d = &self.device;
        let planes = d.channels as u64
            * d.chips_per_channel as u64
            * d.dies_per_chip as u64
            * d.planes_per_die as u64;
        // In the FTL's pages: mapping units when the FTL maps units smaller than a page.
        let ps = self.map_page_bytes() as u64;
        let ppb = d.pages_per_block as u64 * self.map_units() as u64;
        let rho = self.op_fraction_of_logical();
        let stripe_pages = planes * ppb;
        let (bpp, logical_pages) = if d.blocks_per_plane > 0 {
            let bpp = d.blocks_per_plane as u64;
            let logical = ((bpp * stripe_pages) as f64 / (1.0 + rho)).floor() as u64;
            (bpp, logical)
        } else {
            let bytes = if d.logical_capacity_bytes > 0 {
                d.logical_capacity_bytes
            } else {
                trace_max_end_bytes.max(1).max(d.min_logical_capacity_bytes)
            };
            let pages = bytes.div_ceil(ps);
            let lbpp = pages.div_ceil(stripe_pages).max(1);
            let bpp = ((lbpp as f64) * (1.0 + rho)).ceil() as u64;
            (bpp, lbpp * stripe_pages)
        };
        // GC needs spare blocks beyond its free-block reserve and the open blocks.
        let lbpp = logical_pages.div_ceil(stripe_pages);
        let thr = (((bpp as f64) * self.ftl.gc_threshold_pct / 100.0).ceil() as u64).max(2);
        let needed = lbpp + thr + self.ftl.streams as u64;
        if bpp < needed {
            let why = format!(
                "{bpp} blocks per plane for {lbpp} logical blocks leave no room for GC: it keeps \
                 {thr} free blocks and {} open; at least {needed} blocks per plane are needed",
                self.ftl.streams
            );
            // Blame the key the user set: the block count when given, else the
            // over-provisioning in the definition the config uses, as written.
            return Err(if d.blocks_per_plane > 0 {
                invalid(
                    "device.blocks_per_plane",
                    d.blocks_per_plane,
                    format!("{why} (raise device.blocks_per_plane)"),
                )
            } else if let (None, Some(p)) = (d.op_percent_of_logical, d.op_percent_of_physical) {
                invalid(
                    "device.op_percent_of_physical",
                    p,
                    format!("{why} (raise over-provisioning or the device size)"),
                )
            } else {
                invalid(
                    "device.op_percent_of_logical",
                    d.op_percent_of_logical.unwrap_or(15.0),
                    format!("{why} (raise over-provisioning or the device size)"),
                )
            });
        }
        if !self.regions.bits_per_cell.is_empty() {
            // Reduced-state regions hold fewer pages per block: the logical data and every
            // region's GC reserve must still fit what the blocks hold.
            let pages = self.regions.pages_per_block(ppb as u32, d.cell.bits());
            let blocks = self.regions.blocks_per_plane(bpp as u32);
            let usable: u64 = blocks
                .iter()
                .zip(&pages)
                .map(|(&b, &p)| b as u64 * p as u64)
                .sum();
            let reserve: u64 = blocks
                .iter()
                .zip(&pages)
                .map(|(&b, &p)| {
                    let thr =
                        (((b as f64) * self.ftl.gc_threshold_pct / 100.0).ceil() as u64).max(2);
                    (thr + self.ftl.streams as u64 + 1) * p as u64
                })
                .sum();
            let logical_per_plane = logical_pages.div_ceil(planes);
            if usable < logical_per_plane + reserve {
                return Err(invalid(
                    "regions.bits_per_cell",
                    format!("{:?}", self.regions.bits_per_cell),
                    format!(
                        "the reduced-state regions leave {usable} usable pages per plane for \
                         {logical_per_plane} logical pages and a GC reserve of {reserve}: the \
                         data does not fit; raise device.op_percent_of_logical or make the \
                         reduced region smaller (regions.fractions)"
                    ),
                ));
            }
        }
        if !self.regions.is_off() {
            for (r, &b) in self.regions.blocks_per_plane(bpp as u32).iter().enumerate() {
                let thr_r = (((b as f64) * self.ftl.gc_threshold_pct / 100.0).ceil() as u64).max(2);
                let need = thr_r + self.ftl.streams as u64 + 1;
                if (b as u64) < need {
                    return Err(invalid(
                        "regions.fractions",
                        format!("{:?}", self.regions.fractions),
                        format!(
                            "region {} ({}) gets {b} blocks per plane of {bpp}; it needs at \
                             least {need} (GC reserve {thr_r}, {} open blocks, 1 host reserve)",
                            r,
                            self.regions.name(r),
                            self.ftl.streams
                        ),
                    ));
                }
            }
        }
        let total_pages = bpp * stripe_pages;
        if total_pages >= u32::MAX as u64 {
            let max = u32::MAX as u64 - 1;
            let fits = format!(
                "the device would have {total_pages} pages of {ps} B; at most {max} \
                 ({}) fit the 32-bit PPN",
                human_bytes(max * ps)
            );
            return Err(if d.blocks_per_plane > 0 {
                invalid("device.blocks_per_plane", bpp, fits)
            } else if d.logical_capacity_bytes > 0 {
                invalid(
                    "device.logical_capacity_bytes",
                    d.logical_capacity_bytes,
                    fits,
                )
            } else {
                invalid(
                    "device.logical_capacity_bytes",
                    format!(
                        "0 (auto: the trace's address space, {})",
                        human_bytes(trace_max_end_bytes)
                    ),
                    format!(
                        "{fits}. Pack what the trace touches (device.address_map = \"compact\" \
                         or \"auto\"), replay part of the address space (set \
                         device.logical_capacity_bytes and ftl.wrap_offsets = true), use larger \
                         pages (device.page_size_bytes), or for a multi-device trace one device \
                         (--device ID; `nandlab trace stats` lists them)"
                    ),
                )
            });
        }
        if bpp > u32::MAX as u64 / 2 {
            return Err(invalid("device.blocks_per_plane", bpp, "too many blocks"));
        }
        Ok((
            Geometry {
                channels: d.channels,
                chips_per_channel: d.chips_per_channel,
                dies_per_chip: d.dies_per_chip,
                planes_per_die: d.planes_per_die,
                blocks_per_plane: bpp as u32,
                pages_per_block: ppb as u32,
                page_size_bytes: ps as u32,
                cell: d.cell,
            },
            logical_pages,
        ))
    }
}
