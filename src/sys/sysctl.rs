//! Reading and writing /proc/sys keys in the calling thread's network namespace.

use std::io;

fn path(key: &str) -> String {
    let key = key.trim_start_matches('/');
    if key.contains('/') {
        format!("/proc/sys/{key}")
    } else {
        format!("/proc/sys/{}", key.replace('.', "/"))
    }
}

/// Writes `value` to /proc/sys/<key> (`net/core/somaxconn` or `net.core.somaxconn`).
pub fn write(key: &str, value: &str) -> io::Result<()> {
    std::fs::write(path(key), value)
        .map_err(|e| io::Error::new(e.kind(), format!("writing {value:?} to {}: {e}", path(key))))
}

/// Reads /proc/sys/<key>, trimmed; whitespace runs (tabs in port ranges) become one space.
pub fn read(key: &str) -> io::Result<String> {
    let s = std::fs::read_to_string(path(key))?;
    Ok(s.split_whitespace().collect::<Vec<_>>().join(" "))
}
