//! Configuration: TOML with units in key names, validated into typed structs.

/// A configuration error names the key, the value and the allowed range.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// TOML syntax error.
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
