//! Limits every layer agrees on.

/// The highest attempt rate synlab accepts (scenario files, keys, steps), attempts/s.
pub const RATE_MAX: f64 = 1_000_000.0;
