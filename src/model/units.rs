//! Values with units as people write them in scenario files: durations (`500ms`, `2s`), rates and
//! counts (`1.5k`, `20000`), bandwidths (`10mbit`, tc's spelling), byte sizes (`4k`, `1.5MiB`)
//! and percentages (`5%` or `5`). Each parses from a string (and numbers where unambiguous) and
//! serializes back to a canonical string, so a resolved scenario reads like the original.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// Why a value with a unit could not be read: the line a person reads, quoting what they wrote.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnitError {
    #[error("`{0}` is not a duration; write e.g. `500ms` or `2s`")]
    NotADuration(String),
    #[error("`{0}` has no unit; write e.g. `{0}ms` or `{0}s`")]
    NoTimeUnit(String),
    #[error("unknown time unit `{unit}` in `{text}`; use us, ms, s, m or h")]
    UnknownTimeUnit { unit: String, text: String },
    #[error("`{0}` is negative; a duration must be >= 0")]
    NegativeDuration(String),
    /// A bare number where a duration was expected (TOML `d = 5`).
    #[error("{0} has no unit; write \"{0}ms\" or \"{0}s\"")]
    BareDuration(f64),
    #[error("`{0}` is not a number")]
    NotANumber(String),
    #[error("`{0}`: `m` is ambiguous (milli or mega?); write `M` for millions")]
    AmbiguousM(String),
    #[error("unknown suffix `{unit}` in `{text}`; use k, M or G")]
    UnknownSuffix { unit: String, text: String },
    #[error("`{0}` is not a bandwidth; write e.g. `10mbit`")]
    NotABandwidth(String),
    #[error("`{0}` has no unit; write e.g. `{0}mbit`")]
    NoBandwidthUnit(String),
    #[error("unknown bandwidth unit `{unit}` in `{text}`; use bit, kbit, mbit, gbit (or bps, kbps, mbps, gbps for bytes/s)")]
    UnknownBandwidthUnit { unit: String, text: String },
    #[error("`{0}`: a bandwidth must be > 0")]
    BandwidthNotPositive(String),
    /// A bare number where a bandwidth was expected (TOML `bandwidth = 10`).
    #[error("{0} has no unit; write \"{0}mbit\" or \"{0}kbit\"")]
    BareBandwidth(f64),
    #[error("`{0}` is not a size")]
    NotASize(String),
    #[error("unknown size unit `{unit}` in `{text}`; use k, M or G (x1024)")]
    UnknownSizeUnit { unit: String, text: String },
    #[error("`{0}`: a size must be >= 0")]
    NegativeSize(String),
    #[error("`{0}` is not a percentage; write e.g. `5%`")]
    NotAPercentage(String),
    #[error("{0}% is out of range; a percentage is between 0% and 100%")]
    PercentOutOfRange(f64),
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit.trim()))
}

/// A duration: `250us`, `500ms`, `2s`, `1.5m`, `1h`. A bare number is refused (seconds or
/// milliseconds? the file should say).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (v, unit) = split_number(s).ok_or_else(|| UnitError::NotADuration(s.into()))?;
        let secs = match unit.to_ascii_lowercase().as_str() {
            "us" | "µs" => v / 1e6,
            "ms" => v / 1e3,
            "s" | "sec" => v,
            "m" | "min" => v * 60.0,
            "h" => v * 3600.0,
            "" => return Err(UnitError::NoTimeUnit(s.into())),
            u => {
                return Err(UnitError::UnknownTimeUnit {
                    unit: u.into(),
                    text: s.into(),
                })
            }
        };
        if secs < 0.0 {
            return Err(UnitError::NegativeDuration(s.into()));
        }
        Ok(Dur(Duration::from_secs_f64(secs)))
    }
    pub fn secs(&self) -> f64 {
        self.0.as_secs_f64()
    }
    pub fn from_secs(s: f64) -> Self {
        Dur(Duration::from_secs_f64(s.max(0.0)))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0.as_micros();
        if us == 0 {
            write!(f, "0s")
        } else if us.is_multiple_of(1_000_000) {
            write!(f, "{}s", us / 1_000_000)
        } else if us.is_multiple_of(1000) {
            write!(f, "{}ms", us / 1000)
        } else {
            write!(f, "{us}us")
        }
    }
}

/// A plain quantity with an optional SI suffix: `1500`, `1.5k`, `2M`, `1G`. Rates are per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Num(pub f64);

impl Num {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (v, unit) = split_number(s).ok_or_else(|| UnitError::NotANumber(s.into()))?;
        let unit = unit.trim_end_matches("/s");
        let mult = match unit {
            "" => 1.0,
            "k" | "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            "m" => return Err(UnitError::AmbiguousM(s.into())),
            u => {
                return Err(UnitError::UnknownSuffix {
                    unit: u.into(),
                    text: s.into(),
                })
            }
        };
        Ok(Num(v * mult))
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A bandwidth in bits/s, spelled as tc does: `10mbit`, `1gbit`, `500kbit`, `64000bit`; or in
/// bytes/s: `1mbps` = 1 megabyte/s (tc's meaning).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Bandwidth(pub u64);

impl Bandwidth {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (v, unit) = split_number(s).ok_or_else(|| UnitError::NotABandwidth(s.into()))?;
        let bits = match unit.to_ascii_lowercase().as_str() {
            "bit" => v,
            "kbit" => v * 1e3,
            "mbit" => v * 1e6,
            "gbit" => v * 1e9,
            "bps" => v * 8.0,
            "kbps" => v * 8e3,
            "mbps" => v * 8e6,
            "gbps" => v * 8e9,
            "" => return Err(UnitError::NoBandwidthUnit(s.into())),
            u => {
                return Err(UnitError::UnknownBandwidthUnit {
                    unit: u.into(),
                    text: s.into(),
                })
            }
        };
        if bits <= 0.0 {
            return Err(UnitError::BandwidthNotPositive(s.into()));
        }
        Ok(Bandwidth(bits.round() as u64))
    }
    pub fn bits_per_sec(&self) -> u64 {
        self.0
    }

    /// As a person reads it: "100 Mbit/s", "512 kbit/s", "1.5 Gbit/s".
    pub fn human(&self) -> String {
        let b = self.0 as f64;
        let (v, unit) = if b >= 1e9 {
            (b / 1e9, "Gbit/s")
        } else if b >= 1e6 {
            (b / 1e6, "Mbit/s")
        } else if b >= 1e3 {
            (b / 1e3, "kbit/s")
        } else {
            (b, "bit/s")
        };
        let text = format!("{v:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text} {unit}")
    }

    /// The next value of the 1-2-5 ladder (1, 2, 5, 10, 20, 50 ... bit/s) above or below this
    /// one: what a key steps to, so a few presses give round values (100 -> 50 -> 20 Mbit/s).
    pub fn ladder_step(&self, up: bool) -> Bandwidth {
        let ladder = (0..=12u32).flat_map(|e| [1u64, 2, 5].map(|m| m * 10u64.pow(e)));
        let v = if up {
            ladder.into_iter().find(|&v| v > self.0).unwrap_or(u64::MAX)
        } else {
            ladder
                .into_iter()
                .take_while(|&v| v < self.0)
                .last()
                .unwrap_or(0)
        };
        Bandwidth(v)
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b.is_multiple_of(1_000_000_000) {
            write!(f, "{}gbit", b / 1_000_000_000)
        } else if b.is_multiple_of(1_000_000) {
            write!(f, "{}mbit", b / 1_000_000)
        } else if b.is_multiple_of(1000) {
            write!(f, "{}kbit", b / 1000)
        } else {
            write!(f, "{b}bit")
        }
    }
}

/// A size in bytes: `1294`, `4k` / `4KiB` (x1024), `1.5M` / `1.5MiB`, `1G`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (v, unit) = split_number(s).ok_or_else(|| UnitError::NotASize(s.into()))?;
        let mult = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kb" | "kib" => 1024.0,
            "m" | "mb" | "mib" => 1024.0 * 1024.0,
            "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
            u => {
                return Err(UnitError::UnknownSizeUnit {
                    unit: u.into(),
                    text: s.into(),
                })
            }
        };
        if v < 0.0 {
            return Err(UnitError::NegativeSize(s.into()));
        }
        Ok(Bytes((v * mult).round() as u64))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A percentage: `5%`, `0.5%` or a bare number meaning percent (`5` = 5 %). Range 0..=100.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Percent(pub f64);

impl Percent {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let t = s.trim();
        let t = t.strip_suffix('%').unwrap_or(t).trim();
        let v: f64 = t.parse().map_err(|_| UnitError::NotAPercentage(s.into()))?;
        Self::checked(v)
    }
    fn checked(v: f64) -> Result<Self, UnitError> {
        if !(0.0..=100.0).contains(&v) || !v.is_finite() {
            return Err(UnitError::PercentOutOfRange(v));
        }
        Ok(Percent(v))
    }
    /// As a probability 0..=1.
    pub fn fraction(&self) -> f64 {
        self.0 / 100.0
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// A network path's share of the load, as a scenario writes it: a weight (`3`, `0.7`) or a
/// percentage (`"70%"`, read as 0.7). The paths' shares are weights relative to each other.
pub fn deserialize_share<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    struct V;
    impl de::Visitor<'_> for V {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a share such as 0.7 or \"70%\"")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<f64, E> {
            if s.trim().ends_with('%') {
                return Percent::parse(s).map(|p| p.fraction()).map_err(E::custom);
            }
            s.trim()
                .parse()
                .map_err(|_| E::custom(format!("`{s}` is not a share; write e.g. 0.7 or \"70%\"")))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
    }
    d.deserialize_any(V)
}

macro_rules! serde_unit {
    ($t:ty, $what:expr, int = $int:expr) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$t, E> {
                        <$t>::parse(s).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$t, E> {
                        let f: fn(f64) -> Result<$t, UnitError> = $int;
                        f(v as f64).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$t, E> {
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$t, E> {
                        let f: fn(f64) -> Result<$t, UnitError> = $int;
                        f(v).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
    };
}

serde_unit!(
    Dur,
    "a duration such as \"500ms\" or \"2s\"",
    int = |v| {
        if v == 0.0 {
            Ok(Dur::default())
        } else {
            Err(UnitError::BareDuration(v))
        }
    }
);
serde_unit!(
    Num,
    "a number such as 1500 or \"1.5k\"",
    int = |v| Ok(Num(v))
);
serde_unit!(
    Bandwidth,
    "a bandwidth such as \"10mbit\"",
    int = |v| Err(UnitError::BareBandwidth(v))
);
serde_unit!(
    Bytes,
    "a size such as 1294 or \"4k\"",
    int = |v| {
        if v < 0.0 {
            Err(UnitError::NegativeSize(v.to_string()))
        } else {
            Ok(Bytes(v as u64))
        }
    }
);
serde_unit!(
    Percent,
    "a percentage such as \"5%\"",
    int = Percent::checked
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(Dur::parse("500ms").unwrap().secs(), 0.5);
        assert_eq!(Dur::parse("2s").unwrap().secs(), 2.0);
        assert_eq!(Dur::parse("1.5m").unwrap().secs(), 90.0);
        assert_eq!(Dur::parse("250us").unwrap().0.as_micros(), 250);
        assert_eq!(Dur::parse("5"), Err(UnitError::NoTimeUnit("5".into())));
        assert!(matches!(
            Dur::parse("5parsecs"),
            Err(UnitError::UnknownTimeUnit { .. })
        ));
        assert!(matches!(
            Dur::parse("-1s"),
            Err(UnitError::NegativeDuration(_))
        ));
        assert_eq!(Dur::parse("1500ms").unwrap().to_string(), "1500ms");
        assert_eq!(Dur::parse("2s").unwrap().to_string(), "2s");
    }

    #[test]
    fn numbers_with_si_suffixes() {
        assert_eq!(Num::parse("1.5k").unwrap().0, 1500.0);
        assert_eq!(Num::parse("2M").unwrap().0, 2e6);
        assert_eq!(Num::parse("20000").unwrap().0, 20000.0);
        assert_eq!(Num::parse("5k/s").unwrap().0, 5000.0);
        assert!(matches!(Num::parse("2m"), Err(UnitError::AmbiguousM(_))));
    }

    #[test]
    fn bandwidths_follow_tc() {
        assert_eq!(Bandwidth::parse("10mbit").unwrap().0, 10_000_000);
        assert_eq!(Bandwidth::parse("1Gbit").unwrap().0, 1_000_000_000);
        assert_eq!(Bandwidth::parse("1mbps").unwrap().0, 8_000_000);
        assert_eq!(Bandwidth::parse("1.5mbit").unwrap().to_string(), "1500kbit");
        assert!(matches!(
            Bandwidth::parse("10"),
            Err(UnitError::NoBandwidthUnit(_))
        ));
        assert!(Bandwidth::parse("0mbit").is_err());
    }

    #[test]
    fn sizes_and_percentages() {
        assert_eq!(Bytes::parse("4k").unwrap().0, 4096);
        assert_eq!(Bytes::parse("1294").unwrap().0, 1294);
        assert_eq!(Bytes::parse("1.5MiB").unwrap().0, 1_572_864);
        assert_eq!(Percent::parse("5%").unwrap().fraction(), 0.05);
        assert_eq!(Percent::parse("0.5").unwrap().0, 0.5);
        assert_eq!(
            Percent::parse("101%"),
            Err(UnitError::PercentOutOfRange(101.0))
        );
    }

    #[test]
    fn serde_from_toml_values() {
        #[derive(Deserialize)]
        struct T {
            d: Dur,
            n: Num,
            p: Percent,
        }
        let t: T = toml::from_str("d = \"2s\"\nn = 3\np = 5").unwrap();
        assert_eq!((t.d.secs(), t.n.0, t.p.0), (2.0, 3.0, 5.0));
        let e = toml::from_str::<T>("d = 5\nn = 1\np = 1").err().unwrap();
        assert!(e.to_string().contains("has no unit"), "{e}");
    }
}
