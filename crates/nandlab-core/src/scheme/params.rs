//! Typed access to a scheme's `[scheme.params]` table, with range checks and an error for any
//! key the scheme did not read (no silently ignored parameters).

use std::cell::RefCell;
use std::collections::BTreeSet;

use crate::config::ConfigError;

/// A scheme's parameter table being read.
pub struct Params<'a> {
    scheme: &'static str,
    table: &'a toml::Table,
    used: RefCell<BTreeSet<String>>,
}

impl<'a> Params<'a> {
    /// Start reading `table` for `scheme`.
    pub fn new(scheme: &'static str, table: &'a toml::Table) -> Params<'a> {
        Params {
            scheme,
            table,
            used: RefCell::new(BTreeSet::new()),
        }
    }

    fn err(&self, key: &str, v: &toml::Value, msg: String) -> ConfigError {
        ConfigError::Invalid {
            key: format!("scheme.params.{key}"),
            value: v.to_string(),
            msg,
        }
    }

    fn get(&self, key: &str) -> Option<&'a toml::Value> {
        self.used.borrow_mut().insert(key.to_string());
        self.table.get(key)
    }

    /// An integer in `lo ..= hi`.
    pub fn usize(
        &self,
        key: &str,
        default: usize,
        lo: usize,
        hi: usize,
    ) -> Result<usize, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(toml::Value::Integer(v)) if *v >= lo as i64 && (*v as u64) <= hi as u64 => {
                Ok(*v as usize)
            }
            Some(v) => Err(self.err(key, v, format!("allowed range is {lo} ..= {hi} (integer)"))),
        }
    }

    /// A number (integer or float) in `lo ..= hi`.
    pub fn f64(&self, key: &str, default: f64, lo: f64, hi: f64) -> Result<f64, ConfigError> {
        let x = match self.get(key) {
            None => return Ok(default),
            Some(toml::Value::Integer(v)) => *v as f64,
            Some(toml::Value::Float(v)) => *v,
            Some(v) => return Err(self.err(key, v, "must be a number".into())),
        };
        if !(x.is_finite() && (lo..=hi).contains(&x)) {
            return Err(self.err(
                key,
                &toml::Value::Float(x),
                format!("allowed range is {lo} ..= {hi}"),
            ));
        }
        Ok(x)
    }

    /// A boolean.
    pub fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => Err(self.err(key, v, "must be true or false".into())),
        }
    }

    /// A string, one of `allowed`.
    pub fn choice(
        &self,
        key: &str,
        default: &str,
        allowed: &[&str],
    ) -> Result<String, ConfigError> {
        match self.get(key) {
            None => Ok(default.to_string()),
            Some(toml::Value::String(s)) if allowed.contains(&s.as_str()) => Ok(s.clone()),
            Some(v) => Err(self.err(key, v, format!("allowed values: {}", allowed.join(", ")))),
        }
    }

    /// A list of `len` finite numbers.
    pub fn f64_list(
        &self,
        key: &str,
        default: &[f64],
        len: usize,
    ) -> Result<Vec<f64>, ConfigError> {
        let v = match self.get(key) {
            None => default.to_vec(),
            Some(toml::Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for x in a {
                    match x {
                        toml::Value::Integer(i) => out.push(*i as f64),
                        toml::Value::Float(f) if f.is_finite() => out.push(*f),
                        _ => {
                            return Err(self.err(
                                key,
                                &toml::Value::Array(a.clone()),
                                "must be a list of numbers".into(),
                            ))
                        }
                    }
                }
                out
            }
            Some(v) => return Err(self.err(key, v, "must be a list of numbers".into())),
        };
        if v.len() != len {
            return Err(ConfigError::Invalid {
                key: format!("scheme.params.{key}"),
                value: format!("{v:?}"),
                msg: format!("needs exactly {len} values"),
            });
        }
        Ok(v)
    }

    /// Error for any key that was not read.
    pub fn finish(self) -> Result<(), ConfigError> {
        let used = self.used.borrow();
        if let Some(k) = self.table.keys().find(|k| !used.contains(*k)) {
            return Err(ConfigError::Invalid {
                key: format!("scheme.params.{k}"),
                value: self.table[k].to_string(),
                msg: format!(
                    "unknown parameter of scheme `{}` (known: {})",
                    self.scheme,
                    used.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        Ok(())
    }
}
