//! Every figure README.md quotes from the gallery is the gallery's: each quote below is in the
//! README word for word, and the number in it is what the gallery's summary.csv says (rounded
//! as written). Every number of the README's Gallery section is one of these quotes or one of
//! the settings the scenarios chose (SETTINGS), so a figure cannot be added there unchecked;
//! quotes in "Reproducing the papers" are checked too. docs/gallery/make.sh regenerates the
//! files; update the quotes with them.

use std::collections::BTreeMap;
use synlab::report::read::{parse_summary_csv, Cell, Point};

/// A figure from the gallery's summary files.
enum Fig {
    /// A column of one point: (scenario, point selector `key=value,...`, column).
    Cell(&'static str, &'static str, &'static str),
    /// a / b.
    Ratio(Box<Fig>, Box<Fig>),
    /// 100 x (a - b) / b: a change in %.
    Change(Box<Fig>, Box<Fig>),
    /// a + b + ...
    Sum(Vec<Fig>),
    /// 100 x a / b: a share in %.
    Share(Box<Fig>, Box<Fig>),
}

use Fig::*;

fn cell(s: &'static str, sel: &'static str, col: &'static str) -> Fig {
    Cell(s, sel, col)
}
fn ratio(a: Fig, b: Fig) -> Fig {
    Ratio(Box::new(a), Box::new(b))
}
fn change(a: Fig, b: Fig) -> Fig {
    Change(Box::new(a), Box::new(b))
}
fn share(a: Fig, b: Fig) -> Fig {
    Share(Box::new(a), Box::new(b))
}

/// The gallery's summaries, read once.
struct Gallery(BTreeMap<&'static str, Vec<Point>>);

impl Gallery {
    fn points(&mut self, scenario: &'static str) -> &[Point] {
        self.0.entry(scenario).or_insert_with(|| {
            let path = format!("docs/gallery/{scenario}.summary.csv");
            let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            parse_summary_csv(&src)
        })
    }

    fn eval(&mut self, f: &Fig) -> f64 {
        match f {
            Cell(s, sel, col) => {
                let want: Vec<(&str, &str)> = sel
                    .split(',')
                    .filter(|kv| !kv.is_empty())
                    .map(|kv| kv.split_once('=').expect("key=value"))
                    .collect();
                let text = |p: &Point, k: &str| match p.0.get(k) {
                    Some(Cell::Text(t)) => t.clone(),
                    Some(Cell::Num(v)) => format!("{v}"),
                    Some(Cell::Flag(b)) => b.to_string(),
                    None => String::new(),
                };
                let pts = self.points(s);
                let found: Vec<&Point> = pts
                    .iter()
                    .filter(|p| want.iter().all(|(k, v)| text(p, k) == *v))
                    .collect();
                assert_eq!(found.len(), 1, "{s} [{sel}]: {} points match", found.len());
                match found[0].0.get(*col) {
                    Some(Cell::Num(v)) => *v,
                    Some(Cell::Text(t)) => t.parse().unwrap_or(f64::NAN),
                    other => panic!("{s} [{sel}] {col}: {other:?}"),
                }
            }
            Ratio(a, b) => self.eval(a) / self.eval(b),
            Change(a, b) => {
                let b = self.eval(b);
                100.0 * (self.eval(a) - b) / b
            }
            Sum(v) => v.iter().map(|f| self.eval(f)).sum(),
            Share(a, b) => 100.0 * self.eval(a) / self.eval(b),
        }
    }
}

/// The number a quote states: its first number (thousands commas allowed, a sign), and how
/// many decimals it was written with.
fn stated(quote: &str) -> (f64, usize) {
    let b = quote.as_bytes();
    let start = (0..b.len())
        .find(|&i| b[i].is_ascii_digit())
        .unwrap_or_else(|| panic!("no number in `{quote}`"));
    let neg = start > 0 && (b[start - 1] == b'-' || quote[..start].ends_with('\u{2212}'));
    let mut end = start;
    while end < b.len()
        && (b[end].is_ascii_digit()
            || (b[end] == b',' && end + 1 < b.len() && b[end + 1].is_ascii_digit())
            || (b[end] == b'.' && end + 1 < b.len() && b[end + 1].is_ascii_digit()))
    {
        end += 1;
    }
    let text = quote[start..end].replace(',', "");
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    let v: f64 = text.parse().unwrap();
    (if neg { -v } else { v }, decimals)
}

/// Each quote of the README and the figure its (first) number is.
fn quotes() -> Vec<(&'static str, Fig)> {
    vec![]
}

/// Numbers of the Gallery section that the scenarios set rather than measured (or that name a
/// figure or a seed): each a snippet of the README.
const SETTINGS: &[&str] = &[];

fn readme() -> String {
    std::fs::read_to_string("README.md").unwrap()
}

/// The README's section starting at heading `## {name}`, up to the next `## `.
fn section<'a>(md: &'a str, name: &str) -> &'a str {
    let head = format!("\n## {name}\n");
    let start = md.find(&head).unwrap_or_else(|| panic!("no `## {name}`")) + head.len();
    let end = md[start..].find("\n## ").map_or(md.len(), |e| start + e);
    &md[start..end]
}

#[test]
fn every_figure_the_readme_quotes_is_the_gallerys() {
    let md = readme();
    let mut g = Gallery(BTreeMap::new());
    let mut wrong = Vec::new();
    for (quote, fig) in quotes() {
        if !md.contains(quote) {
            wrong.push(format!("not in README.md: `{quote}`"));
            continue;
        }
        let (said, decimals) = stated(quote);
        let v = g.eval(&fig);
        let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
        if (v - said).abs() > tolerance {
            wrong.push(format!(
                "`{quote}` says {said}, the gallery {v:.prec$}",
                prec = decimals + 1
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_number_in_the_gallery_section_is_checked_or_a_setting() {
    let md = readme();
    let gallery = section(&md, "Gallery");
    // Image links, file names and scenario names carry digits that are not figures.
    let prose: String = gallery
        .lines()
        .filter(|l| !l.starts_with("!["))
        .collect::<Vec<_>>()
        .join("\n");
    let mut covered = vec![false; prose.len()];
    let mut mark = |snippet: &str| {
        for (at, _) in prose.match_indices(snippet) {
            covered[at..at + snippet.len()]
                .iter_mut()
                .for_each(|c| *c = true);
        }
    };
    for (q, _) in quotes() {
        mark(q);
    }
    for s in SETTINGS {
        mark(s);
    }
    let b = prose.as_bytes();
    let mut loose = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // A number starts a word (not `p99`, `class3`, `wan-delay-2`).
        let starts = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b"_-".contains(&b[i - 1]));
        if b[i].is_ascii_digit() && starts {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b',' || b[j] == b'.') {
                j += 1;
            }
            if !covered[i..j].iter().all(|c| *c) {
                let from = prose[..i].rfind(['.', '\n']).map_or(0, |p| p + 1);
                let to = prose[j..].find(['\n']).map_or(prose.len(), |p| j + p);
                loose.push(format!("`{}` in: {}", &prose[i..j], prose[from..to].trim()));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    assert!(
        loose.is_empty(),
        "numbers in the README's Gallery section that no quote checks against the gallery and no setting explains:\n{}",
        loose.join("\n")
    );
}

#[test]
fn the_gallery_rows_cpu_split_adds_up_to_100() {
    for entry in std::fs::read_dir("docs/gallery").unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".summary.csv") {
            continue;
        }
        let pts = parse_summary_csv(&std::fs::read_to_string(&path).unwrap());
        for p in pts {
            let keys = [
                "cpu_user_pct",
                "cpu_nice_pct",
                "cpu_system_pct",
                "cpu_irq_pct",
                "cpu_softirq_pct",
                "cpu_iowait_pct",
                "cpu_idle_pct",
                "cpu_steal_pct",
            ];
            let vals: Vec<f64> = keys
                .iter()
                .map(|k| match p.0.get(*k) {
                    Some(Cell::Num(v)) => *v,
                    other => panic!("{}: {k} is {other:?}", path.display()),
                })
                .collect();
            if vals.iter().all(|v| v.is_nan()) {
                continue; // no probes
            }
            let sum: f64 = vals.iter().sum();
            assert!(
                (sum - 100.0).abs() < 1.0,
                "{} point {}: the CPU split adds up to {sum:.1} %",
                path.display(),
                p.number()
            );
        }
    }
}
