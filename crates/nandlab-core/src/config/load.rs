//! Loading: TOML text → overrides applied to the tree → sizes with units → typed [`Config`] →
//! validation; the list of accepted keys.

use std::path::Path;

use super::error::{invalid, ConfigError};
use serde::Deserialize;

use super::Config;

/// Parse TOML text, apply `key=value` overrides, deserialize and validate.
///
/// `origin` names the source in errors (a path or `"<string>"`).
///
/// # Errors
/// [`ConfigError::Syntax`] for TOML errors and unknown keys, [`ConfigError::Invalid`] for
/// out-of-range values.
pub fn load(text: &str, origin: &str, overrides: &[String]) -> Result<Config, ConfigError> {
    load_table(&parse_table(text, origin)?, origin, overrides)
}

/// The TOML table of a configuration's text, before overrides and validation (parse once,
/// [`load_table`] many times: a sweep's grid checks thousands of override sets on one file).
///
/// # Errors
/// [`ConfigError::Syntax`] naming `origin`.
pub fn parse_table(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    // A TOML syntax error keeps its line breaks: the quoted line and the caret under the
    // column are the useful part.
    text.parse()
        .map_err(|e: toml::de::Error| ConfigError::Syntax {
            file: origin.to_string(),
            msg: e.to_string().trim_end().to_string(),
        })
}

/// [`load`] from a table [`parse_table`] returned.
///
/// # Errors
/// As [`load`].
pub fn load_table(
    table: &toml::Table,
    origin: &str,
    overrides: &[String],
) -> Result<Config, ConfigError> {
    let mut table = table.clone();
    drop_replaced_alternatives(&mut table, overrides);
    let base = table.clone();
    for o in overrides {
        apply_override(&mut table, o)?;
    }
    sizes_to_bytes(&mut table, "")?;
    let cfg: Config =
        Config::deserialize(toml::Value::Table(table)).map_err(|e| ConfigError::Syntax {
            file: blame(&base, origin, overrides),
            msg: e.to_string().trim().replace('\n', " "),
        })?;
    cfg.validate()?;
    Ok(cfg)
}

/// Keys that are alternatives to each other: an override of one replaces the other when the
/// file sets it (`--set device.op_percent_of_physical=10` on a file that gives the logical
/// definition). Giving both in the file, or both as overrides, is still an error.
const ALTERNATIVES: &[(&str, &str)] = &[(
    "device.op_percent_of_logical",
    "device.op_percent_of_physical",
)];

fn drop_replaced_alternatives(table: &mut toml::Table, overrides: &[String]) {
    let set: Vec<&str> = overrides
        .iter()
        .filter_map(|o| o.split_once('=').map(|(k, _)| k.trim()))
        .collect();
    for &(a, b) in ALTERNATIVES {
        for (given, other) in [(a, b), (b, a)] {
            if set.contains(&given) && !set.contains(&other) {
                remove_dotted(table, other);
            }
        }
    }
}

fn remove_dotted(table: &mut toml::Table, dotted: &str) {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        match cur.get_mut(*p) {
            Some(toml::Value::Table(t)) => cur = t,
            _ => return,
        }
    }
    cur.remove(parts[parts.len() - 1]);
}

/// The source to name in a deserialization error: the first override that turns a valid
/// base into an invalid one (`--set key=value`), else the file.
fn blame(base: &toml::Table, origin: &str, overrides: &[String]) -> String {
    let ok = |t: &toml::Table| {
        let mut t = t.clone();
        sizes_to_bytes(&mut t, "").is_ok() && Config::deserialize(toml::Value::Table(t)).is_ok()
    };
    if overrides.is_empty() || !ok(base) {
        return origin.to_string();
    }
    let mut t = base.clone();
    for o in overrides {
        if apply_override(&mut t, o).is_err() || !ok(&t) {
            return format!("--set {}", o.trim());
        }
    }
    origin.to_string()
}

/// Parse a byte size: an integer or decimal number with an optional binary suffix (`K`, `KB`,
/// `KiB` = 2^10; `M…`, `G…`, `T…`, `P…` likewise; `B` = 1), case-insensitive, spaces allowed:
/// `4096`, `64KiB`, `16 GiB`, `1.5M`. The result must be a whole number of bytes.
///
/// The same grammar as the command line's size options (`nandlab trace generate --span-bytes`).
pub fn parse_size_bytes(text: &str) -> Option<u64> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let unit = unit.strip_suffix('i').unwrap_or(unit);
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        _ => return None,
    };
    let v = x * mult as f64;
    if !v.is_finite() || v < 0.0 || v.fract() != 0.0 || v >= u64::MAX as f64 {
        return None;
    }
    Some(v as u64)
}

/// Every `*_bytes` key given as a string with a unit (`"64GiB"`) becomes its integer byte
/// count, in tables and arrays of tables alike.
fn sizes_to_bytes(table: &mut toml::Table, prefix: &str) -> Result<(), ConfigError> {
    for (k, v) in table.iter_mut() {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::String(s) if k.ends_with("_bytes") => {
                let n = parse_size_bytes(s).ok_or_else(|| {
                    invalid(
                        &key,
                        format!("{s:?}"),
                        "expected a whole number of bytes, optionally with a binary unit \
                         (4096, \"64KiB\", \"16GiB\")",
                    )
                })?;
                let n = i64::try_from(n)
                    .map_err(|_| invalid(&key, format!("{s:?}"), "too large (at most 2^63 B)"))?;
                *v = toml::Value::Integer(n);
            }
            toml::Value::Table(t) => sizes_to_bytes(t, &key)?,
            toml::Value::Array(a) => {
                for x in a.iter_mut() {
                    if let toml::Value::Table(t) = x {
                        sizes_to_bytes(t, &key)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every key a configuration accepts, as dotted paths in file order of the structs:
/// `device.channels`; entries of arrays of tables as `timing.ecc[].name`; the fields of each
/// variant of a tagged table (`[[reliability.codes]]`) once each; a free-form table (each
/// scheme's `scheme.params`) as its own path. Found by asking the deserializer itself (an
/// unknown probe key makes it list the fields it expects), so a field added to a config struct
/// is listed without editing anything here.
pub fn accepted_keys() -> Vec<String> {
    let mut out = Vec::new();
    probe_struct(&[], &mut out);
    // variants of a tagged table may share fields: keep the first of each
    let mut seen = std::collections::HashSet::new();
    out.retain(|k| seen.insert(k.clone()));
    out
}

pub(crate) const PROBE: &str = "__nandlab_probe__";

/// What a config with `value` at `path` makes the deserializer say (`None`: accepted).
fn probe_error(path: &[PathPart], value: toml::Value) -> Option<String> {
    let mut v = value;
    for part in path.iter().rev() {
        v = match part {
            PathPart::Key(k) => {
                let mut t = toml::Table::new();
                t.insert(k.clone(), v);
                toml::Value::Table(t)
            }
            PathPart::Entry => toml::Value::Array(vec![v]),
            PathPart::Tag(tag, variant) => {
                if let toml::Value::Table(mut t) = v {
                    t.insert(tag.clone(), toml::Value::String(variant.clone()));
                    toml::Value::Table(t)
                } else {
                    v
                }
            }
        };
    }
    Config::deserialize(v).err().map(|e| e.to_string())
}

#[derive(Clone)]
enum PathPart {
    Key(String),
    Entry,
    Tag(String, String),
}

fn backticked_after(msg: &str, marker: &str) -> Vec<String> {
    let Some(i) = msg.find(marker) else {
        return Vec::new();
    };
    let mut rest = &msg[i + marker.len()..];
    // the deserializer ends its message with the path: "… in `device`" (after a space or a
    // line break)
    if let Some(j) = rest.rfind("in `") {
        if rest[..j].ends_with(char::is_whitespace) {
            rest = &rest[..j];
        }
    }
    rest.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn dotted(path: &[PathPart]) -> String {
    let mut s = String::new();
    for p in path {
        match p {
            PathPart::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            PathPart::Entry => s.push_str("[]"),
            PathPart::Tag(..) => {}
        }
    }
    s
}

fn probe_table() -> toml::Value {
    let mut t = toml::Table::new();
    t.insert(PROBE.into(), toml::Value::Integer(0));
    toml::Value::Table(t)
}

/// Collect the keys of the struct at `path` (a table there is known to be a struct).
fn probe_struct(path: &[PathPart], out: &mut Vec<String>) {
    let Some(msg) = probe_error(path, probe_table()) else {
        return;
    };
    let fields = if msg.contains("there are no fields") {
        Vec::new()
    } else {
        backticked_after(&msg, "expected")
    };
    for f in fields {
        let mut p = path.to_vec();
        p.push(PathPart::Key(f.clone()));
        probe_value(&p, out);
    }
}

/// Classify the value at `path`: struct, array of structs, tagged union, free table or leaf.
fn probe_value(path: &[PathPart], out: &mut Vec<String>) {
    let unknown_probe = |m: &str| m.contains(&format!("unknown field `{PROBE}`"));
    match probe_error(path, probe_table()) {
        None => {
            out.push(dotted(path));
            return;
        }
        Some(m) if unknown_probe(&m) => return probe_struct(path, out),
        Some(_) => {}
    }
    let mut entry = path.to_vec();
    entry.push(PathPart::Entry);
    match probe_error(&entry, probe_table()) {
        Some(m) if unknown_probe(&m) => return probe_struct(&entry, out),
        Some(m) if m.contains("missing field `") => {
            let tag = backticked_after(&m, "missing field").into_iter().next();
            if let Some(tag) = tag {
                let mut t = toml::Table::new();
                t.insert(tag.clone(), toml::Value::String(PROBE.into()));
                let variants = probe_error(&entry, toml::Value::Table(t))
                    .map(|m| backticked_after(&m, "expected"))
                    .unwrap_or_default();
                out.push(format!("{}.{tag}", dotted(&entry)));
                for v in variants {
                    let mut p = entry.clone();
                    p.push(PathPart::Tag(tag.clone(), v));
                    probe_struct(&p, out);
                }
                return;
            }
        }
        _ => {}
    }
    out.push(dotted(path));
}

/// Load a config file.
pub fn load_file(path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Syntax {
        file: path.display().to_string(),
        msg: e.to_string(),
    })?;
    load(&text, &path.display().to_string(), overrides)
}

/// Apply one `dotted.key=value` override; `value` is a TOML literal, or a bare string.
pub fn apply_override(table: &mut toml::Table, kv: &str) -> Result<(), ConfigError> {
    let Some((key, value)) = kv.split_once('=') else {
        return Err(invalid(kv, "", "an override must be `key=value`"));
    };
    let key = key.trim();
    let value = value.trim();
    if key.is_empty() || key.split('.').any(|p| p.is_empty()) {
        return Err(invalid(key, value, "empty key segment in override"));
    }
    let parsed: toml::Value = match format!("v = {value}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(value.into())),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => return Err(invalid(key, value, format!("`{p}` is not a table"))),
        };
    }
    cur.insert(parts[parts.len() - 1].to_string(), parsed);
    Ok(())
}
