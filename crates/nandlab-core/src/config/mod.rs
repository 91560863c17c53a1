//! Configuration: TOML with units in key names, validated into typed structs.
//!
//! Every key carries its unit (`read_us`, `page_size_bytes`, `initial_age_window_s`) and is
//! converted once into the core's units (ns, bytes). Unknown keys are errors, never ignored.
//! `--set dotted.key=value` overrides are applied to the TOML tree before validation, so they
//! are checked exactly like file contents.
//!
//! # Over-provisioning
//!
//! The literature uses two definitions. nandlab accepts either, under a name that says which:
//!
//! * `op_percent_of_logical` = ρ·100 with ρ = (T − U)/U (physical T, logical U): physical =
//!   logical × (1 + ρ). This is the definition of Xia & Xiao, Desnoyers and Agarwal & Marrow.
//! * `op_percent_of_physical` = (T − U)/T·100, MQSim's `Overprovisioning_Ratio`.
//!
//! Conversion: of_physical = of_logical / (1 + of_logical) (as fractions). Giving both is an
//! error. The report echoes both.

pub mod device;
pub mod error;
pub mod ftl;
mod host;
mod load;
mod reliability;
mod sizing;
mod timing;
mod validate;

use serde::{Deserialize, Serialize};

pub use device::*;
pub use error::{human_bytes, ConfigError};
pub use ftl::*;
pub use host::*;
pub use load::*;
pub use reliability::*;

/// The whole configuration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Master seed; every random stream of a run derives from it.
    pub seed: u64,
    /// Device geometry and capacity.
    pub device: DeviceConfig,
    /// Flash operation timing.
    pub timing: TimingConfig,
    /// Flash translation layer.
    pub ftl: FtlConfig,
    /// Transaction scheduler.
    pub sched: SchedConfig,
    /// Host replay.
    pub host: HostConfig,
    /// The host interface link (`[link]`, [`crate::host::link`]): off by default, and then
    /// left out of the serialized config (reports of runs without a link are unchanged).
    #[serde(skip_serializing_if = "crate::host::link::LinkConfig::is_off")]
    pub link: crate::host::link::LinkConfig,
    /// Preconditioning before replay.
    pub precondition: PreconditionConfig,
    /// The object device's host layer (`[objfs]`, [`crate::osd::objfs`]): how a file-level
    /// trace becomes object commands. Left out of the serialized config while at its defaults,
    /// so reports of block-device runs are unchanged.
    #[serde(skip_serializing_if = "crate::osd::objfs::ObjfsConfig::is_default")]
    pub objfs: crate::osd::objfs::ObjfsConfig,
    /// The flash-management scheme and its parameters.
    pub scheme: SchemeConfig,
    /// Statistics options.
    pub stats: StatsConfig,
    /// Reliability model (RBER per page read, ECC costs that follow it).
    pub reliability: ReliabilityConfig,
    /// Periodic data refresh (off by default; left out of the serialized config while off so
    /// reports of runs without refresh are unchanged).
    #[serde(skip_serializing_if = "RefreshConfig::is_off")]
    pub refresh: RefreshConfig,
    /// Physical regions: block pools with their own program mode and read latency (off by
    /// default; left out of the serialized config while off so reports of runs without regions
    /// are unchanged).
    #[serde(skip_serializing_if = "RegionsConfig::is_off")]
    pub regions: RegionsConfig,
    /// DPA (Guo ch. 2) codec and lifetime-model parameters (left out of the serialized config
    /// while at their defaults, so reports of runs without DPA are unchanged).
    #[serde(skip_serializing_if = "crate::dpa::DpaConfig::is_default")]
    pub dpa: crate::dpa::DpaConfig,
    /// Controller DRAM data cache (issue 13; off by default: `capacity_bytes = 0`).
    pub dram: DramConfig,
    /// SSD-as-cache front end (`[cache]`, FlexECC §3.2; [`crate::host::cache`]); off (`None`)
    /// without the section, and then left out of the serialized config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::host::cache::CacheConfig>,
    /// Fault injection (`[faults]`, FlexECC §4.4); off by default and then left out of the
    /// serialized config.
    #[serde(skip_serializing_if = "crate::reliability::faults::FaultsConfig::is_off")]
    pub faults: crate::reliability::faults::FaultsConfig,
    /// Object-based flash device (`[osd]`, Guo ch. 4; [`crate::osd`]); off (`None`) without
    /// the section, and then left out of the serialized config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub osd: Option<crate::osd::config::OsdConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 42,
            device: DeviceConfig::default(),
            timing: TimingConfig::default(),
            ftl: FtlConfig::default(),
            sched: SchedConfig::default(),
            host: HostConfig::default(),
            link: crate::host::link::LinkConfig::default(),
            precondition: PreconditionConfig::default(),
            objfs: crate::osd::objfs::ObjfsConfig::default(),
            scheme: SchemeConfig::default(),
            stats: StatsConfig::default(),
            reliability: ReliabilityConfig::default(),
            refresh: RefreshConfig::default(),
            regions: RegionsConfig::default(),
            dpa: crate::dpa::DpaConfig::default(),
            dram: DramConfig::default(),
            cache: None,
            faults: Default::default(),
            osd: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let c = load("", "<s>", &[]).unwrap();
        assert_eq!(c.device.channels, 8);
        assert!((c.op_fraction_of_logical() - 0.15).abs() < 1e-12);
        let t = c.timing().unwrap();
        assert_eq!(t.read_ns[0], 45_000);
        assert_eq!(t.transfer_ns, 20_480);
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let e = load("[device]\nchanels = 4\n", "x.toml", &[]).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("x.toml") && s.contains("chanels"), "{s}");
    }

    #[test]
    fn out_of_range_names_key_value_range() {
        let e = load("[device]\nchannels = 0\n", "x.toml", &[]).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("device.channels") && s.contains("= 0") && s.contains("1 ..= 1024"),
            "{s}"
        );
        let e = load("", "x", &["ftl.gc_threshold_pct=80".into()]).unwrap_err();
        assert!(e.to_string().contains("ftl.gc_threshold_pct"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let c = load(
            "[device]\nchannels = 4\n",
            "x",
            &[
                "device.channels=2".into(),
                "scheme.name=foo".into(),
                "timing.read_us=[50, 100]".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.device.channels, 2);
        assert_eq!(c.scheme.name, "foo");
        assert_eq!(c.timing().unwrap().read_ns[1], 100_000);
        let e = load("", "x", &["device.channels".into()]).unwrap_err();
        assert!(e.to_string().contains("key=value"), "{e}");
    }

    #[test]
    fn op_definitions_convert() {
        let c = load("[device]\nop_percent_of_physical = 20\n", "x", &[]).unwrap();
        assert!((c.op_fraction_of_logical() - 0.25).abs() < 1e-12);
        let e = load(
            "[device]\nop_percent_of_physical = 20\nop_percent_of_logical = 25\n",
            "x",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
    }

    #[test]
    fn sizing_rounds_to_stripe_and_adds_op() {
        let c = load(
            "[device]\nchannels = 2\npages_per_block = 4\npage_size_bytes = 4096\n",
            "x",
            &[],
        )
        .unwrap();
        // 1000 pages of data -> 125 blocks per plane logical (2 planes × 4 pages per stripe).
        let (g, logical) = c.size_device(1000 * 4096 - 5).unwrap();
        assert_eq!(logical, 125 * 8);
        assert_eq!(g.blocks_per_plane, 144); // ceil(125 × 1.15) = 144
                                             // A tiny device has no room for GC: an error, not a silent enlargement.
        let e = c.size_device(100 * 4096).unwrap_err().to_string();
        assert!(
            e.contains("op_percent_of_logical") && e.contains("at least"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod first_hour_tests {
    //! Issue 19: what a new user trips over.
    use super::*;

    #[test]
    fn an_override_of_one_op_definition_replaces_the_other() {
        let base = "[device]\nop_percent_of_logical = 15.0\n";
        let c = load(base, "d.toml", &["device.op_percent_of_physical=10".into()]).unwrap();
        assert_eq!(c.device.op_percent_of_logical, None);
        assert_eq!(c.device.op_percent_of_physical, Some(10.0));
        let c = load(
            "[device]\nop_percent_of_physical = 10\n",
            "d.toml",
            &["device.op_percent_of_logical=20".into()],
        )
        .unwrap();
        assert_eq!(c.device.op_percent_of_physical, None);
        // both in the file, or both as overrides: still an error
        let both = [
            "device.op_percent_of_physical=10".to_string(),
            "device.op_percent_of_logical=10".to_string(),
        ];
        assert!(load(base, "d.toml", &both)
            .unwrap_err()
            .to_string()
            .contains("not both"));
    }

    #[test]
    fn a_bad_override_is_named_as_the_source_not_the_file() {
        let e = load(
            "[device]\nchannels = 8\n",
            "/pkg/default.toml",
            &["host.time_scale=2".into(), "device.channels=-3".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--set device.channels=-3: "), "{e}");
        assert!(!e.contains("default.toml"), "{e}");
        // an error in the file itself still names the file
        let e = load(
            "[device]\nchannels = -1\n",
            "/pkg/x.toml",
            &["seed=1".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("/pkg/x.toml: "), "{e}");
    }

    #[test]
    fn sizes_with_units_are_accepted_for_every_bytes_key() {
        let c = load(
            "[device]\nlogical_capacity_bytes = \"64GiB\"\npage_size_bytes = \"4 KiB\"\n",
            "x",
            &["timing.channel_width_bytes=1".into()],
        )
        .unwrap();
        assert_eq!(c.device.logical_capacity_bytes, 64 << 30);
        assert_eq!(c.device.page_size_bytes, 4096);
        let c = load("", "x", &["device.logical_capacity_bytes=1.5G".into()]).unwrap();
        assert_eq!(c.device.logical_capacity_bytes, 3 << 29);
        let e = load("", "x", &["device.logical_capacity_bytes=64GB/s".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device.logical_capacity_bytes") && e.contains("64KiB"),
            "{e}"
        );
        assert_eq!(parse_size_bytes("16GiB"), Some(16 << 30));
        assert_eq!(parse_size_bytes("64k"), Some(65536));
        assert_eq!(parse_size_bytes("0.5KiB"), Some(512));
        assert_eq!(parse_size_bytes("0.3B"), None);
        assert_eq!(parse_size_bytes("GiB"), None);
    }

    #[test]
    fn a_toml_syntax_error_keeps_its_line_breaks_and_caret() {
        let e = load("[device\nchannels = 3\n", "bad.toml", &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.toml: TOML parse error at line 1"), "{e}");
        assert!(e.contains('\n') && e.contains('^'), "{e}");
    }

    #[test]
    fn accepted_keys_come_from_the_deserializer() {
        let keys = accepted_keys();
        for k in [
            "seed",
            "device.channels",
            "device.op_percent_of_physical",
            "timing.program_modes[].program_us",
            "timing.ecc[].extra_sense_us",
            "reliability.codes[].code",
            "reliability.codes[].t",
            "reliability.codes[].level_cost",
            "stats.request_log",
            "stats.latency_cdf",
            "refresh.period_s",
            "regions.read_latency",
            "scheme.params",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k} missing from {keys:?}");
        }
        for k in ["device.device", "timing.timing", "reliability.codes[].bch"] {
            assert!(!keys.iter().any(|x| x == k), "{k} in {keys:?}");
        }
        assert!(
            !keys.iter().any(|k| k.contains(PROBE) || k == "device"),
            "{keys:?}"
        );
        // every listed key is accepted by a real load (tables and leaves alike)
        assert!(keys.len() > 60, "{}", keys.len());
    }

    #[test]
    fn a_trace_too_large_for_the_ppn_says_so_and_how_to_shrink_it() {
        let c = load("", "x", &[]).unwrap();
        let e = c.size_device(80 << 40).unwrap_err().to_string();
        assert!(
            e.contains("device.logical_capacity_bytes") && e.contains("32-bit PPN"),
            "{e}"
        );
        assert!(
            e.contains("trace's address space, 80.0 TiB") && e.contains("--device"),
            "{e}"
        );
    }
}
