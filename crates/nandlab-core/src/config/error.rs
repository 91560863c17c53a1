//! Configuration errors and the checks every section's validation uses. Kept apart from the
//! sections so that the modules owning a section (the cache layer, the object device, faults)
//! import their error type from here without importing `config` back.

/// A configuration error names the key, the value and the allowed range.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// TOML syntax error or unknown key.
    #[error("{file}: {msg}")]
    Syntax { file: String, msg: String },
    /// A key's value is invalid.
    #[error("config key `{key}` = {value}: {msg}")]
    Invalid {
        key: String,
        value: String,
        msg: String,
    },
}

pub(crate) fn invalid(
    key: &str,
    value: impl std::fmt::Display,
    msg: impl Into<String>,
) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        value: value.to_string(),
        msg: msg.into(),
    }
}

/// `n` bytes in binary units with 3 significant digits (`1.50 GiB`).
pub fn human_bytes(n: u64) -> String {
    let mut x = n as f64;
    for unit in ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] {
        if x < 1024.0 || unit == "PiB" {
            return match unit {
                "B" => format!("{n} B"),
                _ if x >= 100.0 => format!("{x:.0} {unit}"),
                _ if x >= 10.0 => format!("{x:.1} {unit}"),
                _ => format!("{x:.2} {unit}"),
            };
        }
        x /= 1024.0;
    }
    format!("{n} B")
}

pub(crate) fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(invalid(key, v, format!("allowed range is {lo} ..= {hi}")));
    }
    Ok(())
}

/// `Ok` when the float `v` is finite and in `range`, else [`invalid`] with `msg` (which
/// states the range): the check of a float key, as [`check_range`] is of an integer one.
pub(crate) fn check_finite_in(
    key: &str,
    v: f64,
    range: impl std::ops::RangeBounds<f64>,
    msg: &str,
) -> Result<(), ConfigError> {
    if !(v.is_finite() && range.contains(&v)) {
        return Err(invalid(key, v, msg));
    }
    Ok(())
}

pub(crate) fn check_us(key: &str, v: f64) -> Result<(), ConfigError> {
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(invalid(key, v, "must be a finite time in 0 ..= 1e9 µs"));
    }
    Ok(())
}
