//! Units shared by every module: durations written with a unit (`"50ms"`, `"2s"`, `"5m"`),
//! byte sizes (`"4MiB"`, `"64KB"`, `1048576`) and wall-clock times (ISO-8601 text read,
//! Unix times turned into UTC calendar dates: [`UtcTime`]). Pure parsing and formatting;
//! knows nothing about plans or HTTP.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod utc;

pub use utc::{civil_from_days, parse_utc_us, UtcTime};

/// A duration as written in a plan or on the command line: a number and a unit
/// (`us`, `ms`, `s`, `m`, `h`), e.g. `"250ms"`, `"1.5s"`, `"5m"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanDuration(pub Duration);

/// Why a duration string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration `{text}`: {reason} (write a number and a unit: \"500us\", \"50ms\", \"2s\", \"5m\", \"1h\")")]
pub struct DurationError {
    pub text: String,
    pub reason: &'static str,
}

/// Parses `"50ms"`, `"2s"`, `"1.5m"`, `"0"`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError {
        text: text.to_string(),
        reason,
    };
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.starts_with('-') {
        return Err(err("a duration cannot be negative"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| err("missing unit"))?;
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err("missing number"));
    }
    let value: f64 = num.parse().map_err(|_| err("not a number"))?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err("unknown unit")),
    };
    let secs = value * scale;
    if !secs.is_finite() || !(0.0..=LONGEST_SECS).contains(&secs) {
        return Err(err("out of range"));
    }
    Ok(duration_from_secs(secs))
}

/// The longest duration perfplan reads or computes, in seconds (about 31 years).
pub const LONGEST_SECS: f64 = 1.0e9;

/// Seconds as a `Duration`, without ever panicking: NaN and negative seconds are zero,
/// more than `LONGEST_SECS` is `LONGEST_SECS`. Every float-to-`Duration` conversion of
/// perfplan goes through it (`Duration::from_secs_f64` panics on such values).
pub fn duration_from_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs.min(LONGEST_SECS)).unwrap_or(Duration::ZERO)
}

/// Formats a duration the way a person would write it in a plan.
pub fn format_duration(d: Duration) -> String {
    let us = d.as_micros();
    if us == 0 {
        "0s".to_string()
    } else if us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else if us % 1000 == 0 {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

impl FromStr for HumanDuration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(HumanDuration)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text)
            .map(HumanDuration)
            .map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for HumanDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^\\s*(0|[0-9]+(\\.[0-9]+)?\\s*(ns|us|µs|ms|s|m|min|h))\\s*$",
            "description": "a duration with a unit: \"500us\", \"50ms\", \"2s\", \"5m\", \"1h\""
        })
    }
}

/// A byte size as written in a plan: a whole number of bytes, or a number and a unit
/// (`B`, `KB`/`MB`/`GB` in powers of 1000, `KiB`/`MiB`/`GiB` in powers of 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanBytes(pub u64);

/// Why a byte size could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid byte size `{text}`: {reason} (write a number and a unit: \"512KiB\", \"4MiB\", \"1GB\", or a number of bytes)")]
pub struct BytesError {
    pub text: String,
    pub reason: &'static str,
}

/// Parses `"4MiB"`, `"1.5KB"`, `"512 B"`, `"4096"`.
pub fn parse_bytes(text: &str) -> Result<u64, BytesError> {
    let err = |reason| BytesError {
        text: text.to_string(),
        reason,
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err("missing number"));
    }
    let value: f64 = num.parse().map_err(|_| err("not a number"))?;
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(err("unknown unit")),
    };
    let bytes = (value * scale).round();
    if !bytes.is_finite() || !(0.0..=1e15).contains(&bytes) {
        return Err(err("out of range"));
    }
    Ok(bytes as u64)
}

/// Formats a byte size the way a person would write it: `4 MiB`, `1536 bytes`.
pub fn format_bytes(n: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size && n % size == 0 {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}

impl fmt::Display for HumanBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format_bytes(usize::try_from(self.0).unwrap_or(usize::MAX));
        f.write_str(&text.replace(' ', "").replace("bytes", "B"))
    }
}

impl Serialize for HumanBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for HumanBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Count(u64),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Count(n) => Ok(HumanBytes(n)),
            Written::Text(t) => parse_bytes(&t)
                .map(HumanBytes)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl schemars::JsonSchema for HumanBytes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                { "type": "integer", "minimum": 0 },
                {
                    "type": "string",
                    "pattern": "^\\s*[0-9]+(\\.[0-9]+)?\\s*(B|KB|kB|MB|GB|KiB|MiB|GiB)?\\s*$"
                }
            ],
            "description": "a byte size: a number of bytes, or a number and a unit: \"512KiB\", \"4MiB\", \"1GB\""
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "ms", "5", "5 parsecs", "-1s", "1e999s", "..s"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn seconds_become_durations_without_panicking() {
        assert_eq!(duration_from_secs(1.5), Duration::from_millis(1500));
        for zero in [f64::NAN, -1.0, f64::NEG_INFINITY, 0.0, -0.0] {
            assert_eq!(duration_from_secs(zero), Duration::ZERO, "{zero}");
        }
        let longest = Duration::from_secs(LONGEST_SECS as u64);
        for huge in [1e30, f64::INFINITY, f64::MAX, 3.0 / 1e-300] {
            assert_eq!(duration_from_secs(huge), longest, "{huge}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for text in ["0s", "50ms", "2s", "250us"] {
            let d = parse_duration(text).unwrap();
            assert_eq!(format_duration(d), text);
        }
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("4MiB"), Ok(4 << 20));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(parse_bytes(" 512 B "), Ok(512));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        for bad in ["", "MiB", "4 parsecs", "-1KB", "1e99GB"] {
            assert!(parse_bytes(bad).is_err(), "{bad} should fail");
        }
        assert_eq!(HumanBytes(4 << 20).to_string(), "4MiB");
        assert_eq!(HumanBytes(1000).to_string(), "1000B");
        assert_eq!(parse_bytes(&HumanBytes(64 << 10).to_string()), Ok(64 << 10));
    }
}
