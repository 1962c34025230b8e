//! The named request mixes a scenario's `load.workload` chooses (and a sweep varies).

use serde::{Deserialize, Serialize};

/// A named request mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// One small file (`/bytes/1294`), like the usual benchmark.
    #[default]
    Single,
    /// SPECweb96 classes: 35 % 0-1 KB, 50 % 1-10 KB, 14 % 10-100 KB, 1 % 100 KB-1 MB.
    Specweb96,
    /// One SPECweb96 class alone (seed 001 Table 2): 0-1 KB, 1-10 KB, 10-100 KB, 100 KB-1 MB,
    /// so a sweep over them shows how request size moves the CPU split.
    Specweb96Class0,
    Specweb96Class1,
    Specweb96Class2,
    Specweb96Class3,
    /// Only the `[[load.mix]]` entries.
    Custom,
    /// Seed 003's workloads on the built-in server's dynamic endpoints (scenario/workloads.rs):
    /// static pages only (SPECweb96 files),
    Static,
    /// 80 % static, 20 % simple CGI (fork+exec per request),
    LightCgi,
    /// 10 % static, 90 % simple CGI,
    HeavyCgi,
    /// 10 % static, 90 % servlets (the same work inside the server),
    HeavyServlet,
    /// 10 % static, 90 % database queries,
    HeavyDb,
    /// and the mixed e-commerce profile: 55 % static, 7 % CGI, 8 % servlet, 30 % database.
    Ecommerce,
}

impl Workload {
    pub const ALL: [Workload; 13] = [
        Workload::Single,
        Workload::Specweb96,
        Workload::Specweb96Class0,
        Workload::Specweb96Class1,
        Workload::Specweb96Class2,
        Workload::Specweb96Class3,
        Workload::Custom,
        Workload::Static,
        Workload::LightCgi,
        Workload::HeavyCgi,
        Workload::HeavyServlet,
        Workload::HeavyDb,
        Workload::Ecommerce,
    ];

    /// The SPECweb96 class a one-class workload keeps (`class0`..`class3`).
    pub fn specweb96_class(self) -> Option<&'static str> {
        match self {
            Workload::Specweb96Class0 => Some("class0"),
            Workload::Specweb96Class1 => Some("class1"),
            Workload::Specweb96Class2 => Some("class2"),
            Workload::Specweb96Class3 => Some("class3"),
            _ => None,
        }
    }

    /// The name a scenario file uses.
    pub fn name(self) -> String {
        toml::Value::try_from(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}
