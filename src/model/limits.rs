//! Limits every layer agrees on.

/// The highest attempt rate synlab accepts (scenario files, keys, steps), attempts/s.
pub const RATE_MAX: f64 = 1_000_000.0;

/// The most sockets synlab keeps at once for one kind of use (D, a pool's connections).
pub const SOCKETS_MAX: u32 = 200_000;
