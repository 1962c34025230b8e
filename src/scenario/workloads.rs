//! The named request mixes of seed 003 (He & Yang, e-commerce workloads): static pages, light
//! and heavy CGI, heavy servlet, heavy database and the mixed e-commerce profile, built on the
//! built-in server's dynamic endpoints (`/cgi/{us}`, `/inproc/{us}`, `/db/{rows}`).

use super::model::{MixSpec, Workload};
use super::Scenario;
use crate::load::protocol::MixEntry;
use crate::target::{fileset_paths, FileSet, SPECWEB96_CLASS_WEIGHTS};

/// CPU work of one "simple" CGI program or servlet (seed 003: counters, redirections, page
/// generation): 200 us, small next to a fork+exec, so CGI vs servlet shows the process cost.
pub const SIMPLE_WORK_US: u64 = 200;
/// Table sizes the database requests spread over (seed 003: 100 to 20,000 records; the
/// largest tables are left out so one query stays in the milliseconds on a laptop).
pub const DB_QUERY_ROWS: [u32; 5] = [100, 500, 1_000, 2_000, 5_000];

/// Shares of (static, cgi, servlet, db) requests in each named mix, in percent.
pub fn shares(w: Workload) -> Option<[f64; 4]> {
    Some(match w {
        Workload::Static => [100.0, 0.0, 0.0, 0.0],
        Workload::LightCgi => [80.0, 20.0, 0.0, 0.0],
        Workload::HeavyCgi => [10.0, 90.0, 0.0, 0.0],
        Workload::HeavyServlet => [10.0, 0.0, 90.0, 0.0],
        Workload::HeavyDb => [10.0, 0.0, 0.0, 90.0],
        Workload::Ecommerce => [55.0, 7.0, 8.0, 30.0],
        Workload::Single
        | Workload::Specweb96
        | Workload::Specweb96Class0
        | Workload::Specweb96Class1
        | Workload::Specweb96Class2
        | Workload::Specweb96Class3
        | Workload::Custom => return None,
    })
}

/// The request mix of a seed 003 workload (None for the other workloads). Static requests
/// follow SPECweb96's class frequencies; classes are labelled static/cgi/servlet/db.
pub fn preset(w: Workload) -> Option<Vec<MixSpec>> {
    let [st, cgi, servlet, db] = shares(w)?;
    let mut mix = Vec::new();
    let mut add = |class: &str, path: String, weight: f64| {
        if weight > 0.0 {
            mix.push(MixSpec {
                class: class.into(),
                path,
                weight,
            });
        }
    };
    for (class, path, _) in fileset_paths(&FileSet::Specweb96) {
        let f = SPECWEB96_CLASS_WEIGHTS
            .iter()
            .find(|(c, _)| *c == class)
            .map_or(0.0, |(_, f)| *f);
        add("static", path, st * f / 9.0);
    }
    add("cgi", format!("/cgi/{SIMPLE_WORK_US}"), cgi);
    add("servlet", format!("/inproc/{SIMPLE_WORK_US}"), servlet);
    for rows in DB_QUERY_ROWS {
        add("db", format!("/db/{rows}"), db / DB_QUERY_ROWS.len() as f64);
    }
    Some(mix)
}

/// The request mix for a scenario.
pub fn mix_of(sc: &Scenario) -> Vec<MixEntry> {
    mix_for(sc, sc.load.workload)
}

/// The request mix of `workload` against the scenario's target (a sweep over workloads asks
/// for each in turn; the scenario itself stays as it was read).
pub fn mix_for(sc: &Scenario, workload: Workload) -> Vec<MixEntry> {
    let mut mix: Vec<MixEntry> = match workload {
        Workload::Single => vec![MixEntry {
            class: "single".into(),
            path: "/bytes/1294".into(),
            weight: 1.0,
        }],
        Workload::Specweb96
        | Workload::Specweb96Class0
        | Workload::Specweb96Class1
        | Workload::Specweb96Class2
        | Workload::Specweb96Class3 => fileset_paths(&FileSet::Specweb96)
            .into_iter()
            .filter(|(class, _, _)| workload.specweb96_class().is_none_or(|keep| keep == class))
            .map(|(class, path, _)| {
                let w = SPECWEB96_CLASS_WEIGHTS
                    .iter()
                    .find(|(c, _)| *c == class)
                    .map(|(_, w)| *w)
                    .unwrap_or(0.0);
                MixEntry {
                    class,
                    path,
                    weight: w / 9.0,
                }
            })
            .collect(),
        Workload::Custom => Vec::new(),
        w => preset(w)
            .unwrap_or_default()
            .into_iter()
            .map(|m| MixEntry {
                class: m.class,
                path: m.path,
                weight: m.weight,
            })
            .collect(),
    };
    for m in &sc.load.mix {
        mix.push(MixEntry {
            class: if m.class.is_empty() {
                m.path.clone()
            } else {
                m.class.clone()
            },
            path: m.path.clone(),
            weight: m.weight,
        });
    }
    mix
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(mix: &[MixSpec], class: &str) -> f64 {
        let total: f64 = mix.iter().map(|m| m.weight).sum();
        mix.iter()
            .filter(|m| m.class == class)
            .map(|m| m.weight)
            .sum::<f64>()
            / total
    }

    #[test]
    fn ecommerce_mix_is_55_7_8_30() {
        let m = preset(Workload::Ecommerce).unwrap();
        for (class, want) in [
            ("static", 0.55),
            ("cgi", 0.07),
            ("servlet", 0.08),
            ("db", 0.30),
        ] {
            assert!((share(&m, class) - want).abs() < 1e-9, "{class}");
        }
        assert!(m
            .iter()
            .all(|e| crate::target::dynamic::route(&e.path).is_some()
                || e.path.starts_with("/specweb96/")));
    }

    #[test]
    fn heavy_mixes_are_90_percent_dynamic_and_others_have_no_preset() {
        assert!((share(&preset(Workload::HeavyCgi).unwrap(), "cgi") - 0.9).abs() < 1e-9);
        assert!((share(&preset(Workload::HeavyDb).unwrap(), "db") - 0.9).abs() < 1e-9);
        assert_eq!(share(&preset(Workload::Static).unwrap(), "static"), 1.0);
        assert!(preset(Workload::Specweb96).is_none());
    }
}
