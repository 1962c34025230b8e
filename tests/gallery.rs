//! Every figure docs/12-experiments.md quotes from the gallery is the gallery's: each quote below
//! is in that page word for word, and the number in it is what the gallery's summary.csv says
//! (rounded as written). Every number of its Gallery section is one of these quotes or one of
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
    /// A constant (a unit, a scenario's setting).
    Const(f64),
    /// [y0, y1, x0, x1, x]: y at x on the line through (x0, y0) and (x1, y1), as a person
    /// interpolates by hand.
    Interp(Box<[Fig; 5]>),
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
            Const(v) => *v,
            Interp(v) => {
                let [y0, y1, x0, x1, x] = v.each_ref().map(|f| self.eval(f));
                y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            }
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
    vec![
        (
            "from 445/s with one client",
            cell(
                "simple-vs-sclient",
                "mode=closed,value=1",
                "throughput_per_s",
            ),
        ),
        (
            "483/s with 512",
            cell(
                "simple-vs-sclient",
                "mode=closed,value=512",
                "throughput_per_s",
            ),
        ),
        (
            "156/s at D = 4",
            cell(
                "simple-vs-sclient",
                "mode=sclient,value=4",
                "attempts_per_s",
            ),
        ),
        (
            "1,502/s at D = 512",
            cell(
                "simple-vs-sclient",
                "mode=sclient,value=512",
                "attempts_per_s",
            ),
        ),
        (
            "478/s at D = 512",
            cell(
                "simple-vs-sclient",
                "mode=sclient,value=512",
                "throughput_per_s",
            ),
        ),
        (
            "serves 73 responses/s on",
            cell(
                "simple-vs-sclient",
                "mode=sclient,value=1",
                "throughput_per_s",
            ),
        ),
        (
            "75 attempts/s",
            cell(
                "simple-vs-sclient",
                "mode=sclient,value=1",
                "attempts_per_s",
            ),
        ),
        (
            "steered: 231/s at 1x capacity (250/s offered)",
            cell("overload", "value=250,steer=server", "throughput_per_s"),
        ),
        (
            "219/s at 20x (5,000/s)",
            cell("overload", "value=5000,steer=server", "throughput_per_s"),
        ),
        (
            "grew from 4.3 %",
            cell(
                "overload",
                "value=250,steer=server",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "to 10.0 %",
            cell(
                "overload",
                "value=5000,steer=server",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "from 4,327 us",
            cell(
                "overload",
                "value=250,steer=server",
                "server_cpu_us_per_response",
            ),
        ),
        (
            "to 4,547 us",
            cell(
                "overload",
                "value=5000,steer=server",
                "server_cpu_us_per_response",
            ),
        ),
        (
            "sender: 239/s at 1x",
            cell("overload", "value=250,steer=sender", "throughput_per_s"),
        ),
        (
            "and 239/s at 20x",
            cell("overload", "value=5000,steer=sender", "throughput_per_s"),
        ),
        (
            "softirq at 0.7 %",
            cell(
                "overload",
                "value=5000,steer=sender",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "87 % busy or more from 800/s on",
            cell("overload-nginx", "value=800,steer=server", "load_cpu_pct"),
        ),
        (
            "(system 46.0 %",
            cell(
                "overload-nginx",
                "value=100,steer=server",
                "server_cores_system_pct",
            ),
        ),
        (
            "user\n4.3 % at the lowest rate",
            cell(
                "overload-nginx",
                "value=100,steer=server",
                "server_cores_user_pct",
            ),
        ),
        (
            "Steered: 96/s at 100/s offered",
            cell(
                "overload-nginx",
                "value=100,steer=server",
                "throughput_per_s",
            ),
        ),
        (
            "116/s at 4,000/s",
            cell(
                "overload-nginx",
                "value=4000,steer=server",
                "throughput_per_s",
            ),
        ),
        (
            "softirq 29.8 %",
            cell(
                "overload-nginx",
                "value=100,steer=server",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "to 34.9 %;",
            cell(
                "overload-nginx",
                "value=4000,steer=server",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "sender: 101/s",
            cell(
                "overload-nginx",
                "value=100,steer=sender",
                "throughput_per_s",
            ),
        ),
        (
            "and 203/s",
            cell(
                "overload-nginx",
                "value=4000,steer=sender",
                "throughput_per_s",
            ),
        ),
        (
            "from 735/s (smooth)",
            cell("bursty", "value=1x@100%", "throughput_per_s"),
        ),
        (
            "682 (2,10)",
            cell("bursty", "value=2x@10%", "throughput_per_s"),
        ),
        (
            "562 (4,10)",
            cell("bursty", "value=4x@10%", "throughput_per_s"),
        ),
        (
            "604 (6,5)",
            cell("bursty", "value=6x@5%", "throughput_per_s"),
        ),
        (
            "387/s (6,10)",
            cell("bursty", "value=6x@10%", "throughput_per_s"),
        ),
        (
            "(401/s)",
            cell(
                "bursty-rates",
                "value=400,curve_value=1x@100%",
                "throughput_per_s",
            ),
        ),
        (
            "-45 % (222/s)",
            change(
                cell(
                    "bursty-rates",
                    "value=400,curve_value=6x@10%",
                    "throughput_per_s",
                ),
                cell(
                    "bursty-rates",
                    "value=400,curve_value=1x@100%",
                    "throughput_per_s",
                ),
            ),
        ),
        (
            "(222/s)",
            cell(
                "bursty-rates",
                "value=400,curve_value=6x@10%",
                "throughput_per_s",
            ),
        ),
        (
            "-21 %;",
            change(
                cell(
                    "bursty-rates",
                    "value=400,curve_value=6x@5%",
                    "throughput_per_s",
                ),
                cell(
                    "bursty-rates",
                    "value=400,curve_value=1x@100%",
                    "throughput_per_s",
                ),
            ),
        ),
        (
            "(582/s)",
            cell(
                "bursty-rates",
                "value=800,curve_value=1x@100%",
                "throughput_per_s",
            ),
        ),
        (
            "-38 % (report.md",
            change(
                cell(
                    "bursty-rates",
                    "value=800,curve_value=6x@10%",
                    "throughput_per_s",
                ),
                cell(
                    "bursty-rates",
                    "value=800,curve_value=1x@100%",
                    "throughput_per_s",
                ),
            ),
        ),
        ("from 209 ms", cell("wan-loss", "value=0%", "total_p99_ms")),
        (
            "1,218 ms at 1 %",
            cell("wan-loss", "value=1%", "total_p99_ms"),
        ),
        (
            "1,620\nms at 5 %",
            cell("wan-loss", "value=5%", "total_p99_ms"),
        ),
        (
            "(59 at 0 %",
            cell("wan-loss", "value=0%", "client_open_mean"),
        ),
        (
            "110 at 5 %)",
            cell("wan-loss", "value=5%", "client_open_mean"),
        ),
        (
            "1,111/s at 0 %",
            cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
        ),
        (
            "987/s at 1 %",
            cell("wan-loss-capacity", "value=1%", "throughput_per_s"),
        ),
        (
            "(-11 %)",
            change(
                cell("wan-loss-capacity", "value=1%", "throughput_per_s"),
                cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
            ),
        ),
        (
            "739/s at 2 %",
            cell("wan-loss-capacity", "value=2%", "throughput_per_s"),
        ),
        (
            "(-33 %)",
            change(
                cell("wan-loss-capacity", "value=2%", "throughput_per_s"),
                cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
            ),
        ),
        (
            "455/s at 5 %",
            cell("wan-loss-capacity", "value=5%", "throughput_per_s"),
        ),
        (
            "(-59 %)",
            change(
                cell("wan-loss-capacity", "value=5%", "throughput_per_s"),
                cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
            ),
        ),
        (
            "takes 3.1 ms",
            cell("mixed-clients", "value=200", "total_p50_ms"),
        ),
        (
            "is 936 ms at 200/s",
            cell("mixed-clients", "value=200", "total_p99_ms"),
        ),
        ("5,995 / ", cell("time-wait", "value=100", "time_wait_mean")),
        (
            "11,600 / ",
            cell("time-wait", "value=200", "time_wait_mean"),
        ),
        (
            "22,304 / ",
            cell("time-wait", "value=400", "time_wait_mean"),
        ),
        (
            "41,737 at",
            cell("time-wait", "value=800", "time_wait_mean"),
        ),
        (
            "1.00x / 0.94x",
            ratio(
                cell("time-wait", "value=100", "time_wait_mean"),
                ratio(
                    cell("time-wait", "value=100", "throughput_per_s"),
                    Const(1.0 / 60.0),
                ),
            ),
        ),
        (
            "0.94x / 0.92x",
            ratio(
                cell("time-wait", "value=200", "time_wait_mean"),
                ratio(
                    cell("time-wait", "value=200", "throughput_per_s"),
                    Const(1.0 / 60.0),
                ),
            ),
        ),
        (
            "0.92x / 0.86x",
            ratio(
                cell("time-wait", "value=400", "time_wait_mean"),
                ratio(
                    cell("time-wait", "value=400", "throughput_per_s"),
                    Const(1.0 / 60.0),
                ),
            ),
        ),
        (
            "0.86x of",
            ratio(
                cell("time-wait", "value=800", "time_wait_mean"),
                ratio(
                    cell("time-wait", "value=800", "throughput_per_s"),
                    Const(1.0 / 60.0),
                ),
            ),
        ),
        (
            "moves 250 MB/s",
            ratio(
                cell("specweb96", "value=specweb96_class3", "bytes_in_per_s"),
                Const(1e6),
            ),
        ),
        (
            "816x the bytes",
            ratio(
                cell("specweb96", "value=specweb96_class3", "bytes_in_per_s"),
                cell("specweb96", "value=specweb96_class0", "bytes_in_per_s"),
            ),
        ),
        (
            "same 487 requests/s",
            cell("specweb96", "value=specweb96_class3", "throughput_per_s"),
        ),
        (
            "serves 239/s",
            cell("ecommerce", "value=heavy_cgi", "throughput_per_s"),
        ),
        (
            "serves 717/s",
            cell("ecommerce", "value=heavy_servlet", "throughput_per_s"),
        ),
        (
            "(3.0x, the paper",
            ratio(
                cell("ecommerce", "value=heavy_servlet", "throughput_per_s"),
                cell("ecommerce", "value=heavy_cgi", "throughput_per_s"),
            ),
        ),
        (
            "static pages 831/s",
            cell("ecommerce", "value=static", "throughput_per_s"),
        ),
        (
            "limit (129) as soon",
            cell("lesson-overload", "", "accept_queue_max"),
        ),
        (
            "(148/s at D = 4)",
            cell(
                "simple-vs-sclient",
                "mode=sclient,value=4",
                "throughput_per_s",
            ),
        ),
        (
            "bursts are -18 %",
            change(
                cell("bursty", "value=6x@5%", "throughput_per_s"),
                cell("bursty", "value=1x@100%", "throughput_per_s"),
            ),
        ),
        (
            "-47 %; at",
            change(
                cell("bursty", "value=6x@10%", "throughput_per_s"),
                cell("bursty", "value=1x@100%", "throughput_per_s"),
            ),
        ),
        (
            "-45 % (bursty-rates)",
            change(
                cell(
                    "bursty-rates",
                    "value=400,curve_value=6x@10%",
                    "throughput_per_s",
                ),
                cell(
                    "bursty-rates",
                    "value=400,curve_value=1x@100%",
                    "throughput_per_s",
                ),
            ),
        ),
        (
            "from 209 ms to 1,218",
            cell("wan-loss", "value=0%", "total_p99_ms"),
        ),
        (
            "1,218 ms at 1 % loss",
            cell("wan-loss", "value=1%", "total_p99_ms"),
        ),
        (
            "1,620 ms at 5 %,",
            cell("wan-loss", "value=5%", "total_p99_ms"),
        ),
        (
            "-11 % at 1 %",
            change(
                cell("wan-loss-capacity", "value=1%", "throughput_per_s"),
                cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
            ),
        ),
        (
            "-33 % at 2 %",
            change(
                cell("wan-loss-capacity", "value=2%", "throughput_per_s"),
                cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
            ),
        ),
        (
            "-59 % at 5 %",
            change(
                cell("wan-loss-capacity", "value=5%", "throughput_per_s"),
                cell("wan-loss-capacity", "value=0%", "throughput_per_s"),
            ),
        ),
        (
            "41,737 at 800 connections/s",
            cell("time-wait", "value=800", "time_wait_mean"),
        ),
        (
            "(0.86x-1.00x",
            ratio(
                cell("time-wait", "value=800", "time_wait_mean"),
                ratio(
                    cell("time-wait", "value=800", "throughput_per_s"),
                    Const(1.0 / 60.0),
                ),
            ),
        ),
        (
            "reads\n  softirq 7.4 %",
            cell(
                "specweb96",
                "value=specweb96_class0",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "Heavy CGI's server CPU is 49.4 % system",
            cell("ecommerce", "value=heavy_cgi", "server_cores_system_pct"),
        ),
        (
            "the servlet's 4.4 %",
            cell(
                "ecommerce",
                "value=heavy_servlet",
                "server_cores_system_pct",
            ),
        ),
        (
            "moves 250 MB/s at the same",
            ratio(
                cell("specweb96", "value=specweb96_class3", "bytes_in_per_s"),
                Const(1e6),
            ),
        ),
        (
            "serves 3.0x as many",
            ratio(
                cell("ecommerce", "value=heavy_servlet", "throughput_per_s"),
                cell("ecommerce", "value=heavy_cgi", "throughput_per_s"),
            ),
        ),
        (
            "light CGI (537/s)",
            cell("ecommerce", "value=light_cgi", "throughput_per_s"),
        ),
        (
            "static pages (831/s)",
            cell("ecommerce", "value=static", "throughput_per_s"),
        ),
        (
            "where 104 and",
            cell("wan-delay", "value=100ms", "server_busy_mean"),
        ),
        (
            "107 of their processes",
            cell("wan-delay-apache", "value=100ms", "server_busy_mean"),
        ),
        (
            "23 and\n22 at 20 ms",
            cell("wan-delay", "value=20ms", "server_busy_mean"),
        ),
        (
            "22 at 20 ms)",
            cell("wan-delay-apache", "value=20ms", "server_busy_mean"),
        ),
        (
            "all 150 are",
            cell("wan-delay", "value=200ms", "server_busy_mean"),
        ),
        (
            "552 and 568/s",
            cell("wan-delay", "value=200ms", "throughput_per_s"),
        ),
        (
            "568/s at 200 ms",
            cell("wan-delay-apache", "value=200ms", "throughput_per_s"),
        ),
        (
            "(0.68x and 0.70x",
            ratio(
                cell("wan-delay", "value=200ms", "throughput_per_s"),
                cell("wan-delay", "value=0s", "throughput_per_s"),
            ),
        ),
        (
            "0.70x of 0 ms)",
            ratio(
                cell("wan-delay-apache", "value=200ms", "throughput_per_s"),
                cell("wan-delay-apache", "value=0s", "throughput_per_s"),
            ),
        ),
        (
            "limit (512). The event",
            cell("wan-delay", "value=200ms", "accept_queue_max"),
        ),
        (
            "(807/s at\n200 ms",
            cell("wan-delay-event", "value=200ms", "throughput_per_s"),
        ),
        (
            "1.00x) while",
            ratio(
                cell("wan-delay-nginx", "value=200ms", "throughput_per_s"),
                cell("wan-delay-nginx", "value=0s", "throughput_per_s"),
            ),
        ),
        (
            "374 at 200 ms",
            cell("wan-delay-nginx", "value=200ms", "client_open_mean"),
        ),
        (
            "748 and 752/s",
            cell("wan-delay-apache", "value=150ms", "throughput_per_s"),
        ),
        (
            "752/s at 150 ms",
            cell("wan-delay", "value=150ms", "throughput_per_s"),
        ),
        (
            "568 and 552/s at 200 ms",
            cell("wan-delay-apache", "value=200ms", "throughput_per_s"),
        ),
        (
            "552/s at 200 ms\n  (0.70x",
            cell("wan-delay", "value=200ms", "throughput_per_s"),
        ),
        (
            "(0.70x and 0.68x;",
            ratio(
                cell("wan-delay-apache", "value=200ms", "throughput_per_s"),
                cell("wan-delay-apache", "value=0s", "throughput_per_s"),
            ),
        ),
        (
            "0.68x; the paper",
            ratio(
                cell("wan-delay", "value=200ms", "throughput_per_s"),
                cell("wan-delay", "value=0s", "throughput_per_s"),
            ),
        ),
        (
            "stay at 807/s (1.00x)",
            cell("wan-delay-event", "value=200ms", "throughput_per_s"),
        ),
        (
            "(1.00x) at 200 ms",
            ratio(
                cell("wan-delay-event", "value=200ms", "throughput_per_s"),
                cell("wan-delay-event", "value=0s", "throughput_per_s"),
            ),
        ),
        (
            "its limit (129). 800/s",
            cell("lesson-bursts", "", "accept_queue_max"),
        ),
        ("reaches 512.", cell("lesson-wan", "", "accept_queue_max")),
        (
            "to 539/s at 32",
            cell("capacity", "value=32", "throughput_per_s"),
        ),
        ("(56 ms)", cell("capacity", "value=32", "total_p98_ms")),
        (
            "214 ms and Little",
            cell("capacity", "value=48", "total_p98_ms"),
        ),
        (
            "from 5.0 to 26.8",
            cell("capacity", "value=32", "little_load_factor"),
        ),
        (
            "26.8, then",
            cell("capacity", "value=48", "little_load_factor"),
        ),
        (
            "(177 at 192)",
            cell("capacity", "value=192", "little_load_factor"),
        ),
        (
            "(428 to 774/s)",
            cell("capacity", "value=48", "throughput_per_s"),
        ),
        ("774/s)", cell("capacity", "value=128", "throughput_per_s")),
        (
            "is 508 requests/s",
            Interp(Box::new([
                cell("capacity", "value=32", "throughput_per_s"),
                cell("capacity", "value=48", "throughput_per_s"),
                cell("capacity", "value=32", "total_p98_ms"),
                cell("capacity", "value=48", "total_p98_ms"),
                Const(100.0),
            ])),
        ),
        (
            "made\n7,987/s",
            cell("client-check", "value=1", "attempts_per_s"),
        ),
        (
            "(7,244/s)",
            cell("client-check", "value=2", "attempts_per_s"),
        ),
        (
            "(7,970/s)",
            cell("client-check", "value=4", "attempts_per_s"),
        ),
        (
            "leave 0 TIME_WAIT",
            cell("time-wait-cost", "value=1.1", "time_wait_mean"),
        ),
        (
            "holds 97,045",
            cell("time-wait-cost", "value=1.0", "time_wait_mean"),
        ),
        (
            "(0.81x of throughput x 60 s) at",
            ratio(
                cell("time-wait-cost", "value=1.0", "time_wait_mean"),
                ratio(
                    cell("time-wait-cost", "value=1.0", "throughput_per_s"),
                    Const(1.0 / 60.0),
                ),
            ),
        ),
        (
            "(2,008\nand",
            cell("time-wait-cost", "value=1.1", "throughput_per_s"),
        ),
        (
            "2,007/s)",
            cell("time-wait-cost", "value=1.0", "throughput_per_s"),
        ),
        (
            "grow: 307 us",
            cell("time-wait-cost", "value=1.1", "server_cpu_us_per_response"),
        ),
        (
            "then 303 us",
            cell("time-wait-cost", "value=1.0", "server_cpu_us_per_response"),
        ),
        (
            "system share 5.8 %",
            cell("time-wait-cost", "value=1.1", "server_cores_system_pct"),
        ),
        (
            "and then 5.5 %",
            cell("time-wait-cost", "value=1.0", "server_cores_system_pct"),
        ),
        (
            "leaves it 90.2 % idle",
            cell(
                "specweb96",
                "value=specweb96_class0",
                "server_cores_idle_pct",
            ),
        ),
        (
            "softirq takes 7.4 %",
            cell(
                "specweb96",
                "value=specweb96_class0",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "system 2.0 % and",
            cell(
                "specweb96",
                "value=specweb96_class0",
                "server_cores_system_pct",
            ),
        ),
        (
            "user\n0.5 %",
            cell(
                "specweb96",
                "value=specweb96_class0",
                "server_cores_user_pct",
            ),
        ),
        (
            "leaves it 42.4 % idle",
            cell(
                "specweb96",
                "value=specweb96_class3",
                "server_cores_idle_pct",
            ),
        ),
        (
            "softirq at 46.0 %",
            cell(
                "specweb96",
                "value=specweb96_class3",
                "server_cores_softirq_pct",
            ),
        ),
        (
            "system 10.2 %",
            cell(
                "specweb96",
                "value=specweb96_class3",
                "server_cores_system_pct",
            ),
        ),
        (
            "user 1.4 %",
            cell(
                "specweb96",
                "value=specweb96_class3",
                "server_cores_user_pct",
            ),
        ),
        (
            "per response: 4,144 us",
            cell("ecommerce", "value=heavy_cgi", "server_cpu_us_per_response"),
        ),
        (
            "CPU at 49.4 % system",
            cell("ecommerce", "value=heavy_cgi", "server_cores_system_pct"),
        ),
        (
            "against 1,393 us",
            cell(
                "ecommerce",
                "value=heavy_servlet",
                "server_cpu_us_per_response",
            ),
        ),
        (
            "and 4.4 % system",
            cell(
                "ecommerce",
                "value=heavy_servlet",
                "server_cores_system_pct",
            ),
        ),
    ]
}

/// Numbers of the Gallery section that the scenarios set rather than measured (or that name a
/// figure or a seed): each a snippet of the README.
const SETTINGS: &[&str] = &[
    "2 vCPUs",
    "2-vCPU",
    "Fig. 7 by its mechanism",
    "4 ms of work asked",
    "(sub_filter over a\n77 KB file) is not a clean Fig. 7",
    "CPU: class 0",
    "%; class 3",
    "Linux 6.18",
    "~80 minutes",
    "load averages of 3 to 20",
    "seed 000 Figs. 5, 6",
    "(Fig. 7)",
    "up to 750/s",
    "at 1,000",
    "at 8,000",
    "(Fig. 8)",
    "800/s average",
    "10 s period",
    "(2,10)",
    "(4,10)",
    "(6,5)",
    "(6,10)",
    "(Fig. 8 as",
    "100 s period",
    "at 400/s",
    "at 800/s",
    "(§5.6)",
    "300/s at 100 ms RTT with 0-5 % loss",
    "1 s retransmission",
    "at 1 %",
    "at 5 %",
    "(59 at 0 %",
    "(§5.6 at capacity)",
    "at 100 ms",
    "at 0 %",
    "at 2 %",
    "-36 %",
    "seed 000 §4.4",
    "at 200/s",
    "seed 002 Table 10",
    "for 60 s",
    "at 100 / 200 / 400 / 800 connections/s",
    "x 60 s",
    "seed 001",
    "SPECweb96 class at a time at 500 requests/s",
    "class 3",
    "class 0",
    "seed 003",
    "~3x",
    "D = 1",
    "D = 4",
    "D = 512",
    "with 512",
    "Figs. 9, 10",
    "800 requests/s",
    "RTT 0-200 ms",
    "(150 processes",
    "up to 100 ms",
    "at 200 ms",
    "at 20 ms",
    "600/s average",
    "800/s as the RTT grows to 200 ms",
    "150",
    "processes are all busy",
    "(Fig. 10:",
    "(seed 004)",
    "50 ms think time",
    "at 48 clients",
    "p98 under 100 ms",
    "32 and 48 clients",
    "(seed 000 §4.3)",
    "8,000 attempts/s with 1, 2 and 4 workers",
    "(seed 002 Tables 11-14)",
    "2,000 connections/s",
    "HTTP/1.1",
    "HTTP/1.0",
    "1998 cost",
];

/// The page that holds the gallery and the papers' comparison.
const EXPERIMENTS: &str = "docs/12-experiments.md";

fn readme() -> String {
    std::fs::read_to_string(EXPERIMENTS).unwrap()
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
            wrong.push(format!("not in {EXPERIMENTS}: `{quote}`"));
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
            // A comma or full stop after the number ends the clause, not the number.
            while j > i + 1 && (b[j - 1] == b',' || b[j - 1] == b'.') {
                j -= 1;
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
        "numbers in the Gallery section of docs/12-experiments.md that no quote checks against the gallery and no setting explains:\n{}",
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
