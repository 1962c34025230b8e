//! `synlab ab A.toml B.toml --repeat N`: two configurations measured in interleaved trials
//! (A B, B A, A B ...: each pair side by side in time, its order alternated, so the host's
//! drift between minutes hits both alike), each trial a whole run in its own sub-folder
//! (`a-1`, `b-1`, `b-2`, `a-2` ...), and B judged against A per figure by the median of the
//! pairs' ratios with its interval (`report::sure::judge_paired`).

use super::ci::Progress;
use super::run::run_gated_with;
use super::session::Start;
use crate::report::sure::{self, Judged};
use crate::report::{compare, disturbed};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// The order of the trials of `n` pairs: A B, B A, A B ... (true for A).
pub fn order(n: usize) -> Vec<(bool, usize)> {
    (1..=n)
        .flat_map(|k| {
            if k % 2 == 1 {
                [(true, k), (false, k)]
            } else {
                [(false, k), (true, k)]
            }
        })
        .collect()
}

/// `synlab ab`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct AbArgs {
    /// The baseline configuration's scenario.
    pub a: PathBuf,
    /// The candidate configuration's scenario (judged against A).
    pub b: PathBuf,
    /// Pairs of trials (6 or more reach a 95 % interval).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub repeat: u32,
    /// The largest regression of B against A allowed, in % (error share: in points).
    #[arg(long, default_value = "5%")]
    pub max_regression: crate::report::compare::MaxRegression,
    /// The metrics judged (comma-separated), as `synlab compare --on`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "throughput_per_s,total_p50_ms,total_p99_ms,error_share_pct"
    )]
    pub on: Vec<String>,
    /// Parent folder of the A/B folder (default: A's [output] dir, else ./results).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Scale durations down (warm-up, hold, steps).
    #[arg(long)]
    pub quick: bool,
    /// Write the judged figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one JUnit test case per judged figure to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "scenario".into())
}

/// `synlab ab`: exit 0, 3 when a judged figure of B regressed past the limit with its whole
/// interval, 4 when a trial was not whole, 130 interrupted.
pub fn ab_main(args: &AbArgs) -> anyhow::Result<ExitCode> {
    let limit = args.max_regression.0;
    let on = sure::parse_on(&args.on)?;
    let open = |p: &Path| {
        Start {
            scenario: Some(p),
            out: args.out.as_deref(),
            quick: args.quick,
            ..Default::default()
        }
        .open()
    };
    let (sa, opts) = open(&args.a)?;
    let (sb, _) = open(&args.b)?;
    let parent = opts.out_parent.clone().unwrap_or_else(|| "results".into());
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let dir = parent.join(format!("ab-{}-vs-{}-{stamp}", stem(&args.a), stem(&args.b)));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let n = args.repeat as usize;
    let show = Progress::for_stderr(true);
    let mut a_runs: Vec<Option<PathBuf>> = vec![None; n];
    let mut b_runs: Vec<Option<PathBuf>> = vec![None; n];
    let mut incomplete = Vec::new();
    for (i, (is_a, k)) in order(n).into_iter().enumerate() {
        let (sc, side) = if is_a { (&sa, "a") } else { (&sb, "b") };
        let o = super::controller::RunOptions {
            out_parent: Some(dir.clone()),
            interrupted: opts.interrupted.clone(),
            network_fallback: opts.network_fallback,
            metrics: None,
        };
        let p = Progress {
            trial: Some((i + 1, 2 * n)),
            ..show.clone()
        };
        eprintln!(
            "synlab: trial {} of {}: {} (pair {k})",
            i + 1,
            2 * n,
            side.to_uppercase()
        );
        let out = run_gated_with(sc.clone(), o, &p)?;
        if let Some(made) = &out.dir {
            let to = dir.join(format!("{side}-{k}"));
            std::fs::rename(made, &to)
                .with_context(|| format!("renaming {} to {}", made.display(), to.display()))?;
            if is_a {
                a_runs[k - 1] = Some(to);
            } else {
                b_runs[k - 1] = Some(to);
            }
        }
        if out.interrupted || opts.interrupted.load(Ordering::Relaxed) {
            eprintln!("synlab: interrupted; the A/B folder holds the trials done");
            return Ok(ExitCode::from(130));
        }
        if let Some(d) = out.child_died {
            incomplete.push(format!("trial {side}-{k}: {d}"));
            break;
        }
    }
    let mut pairs = Vec::new();
    for (a, b) in a_runs.iter().zip(&b_runs) {
        if let (Some(a), Some(b)) = (a, b) {
            let (ra, rb) = (
                crate::report::read::read_run(a)?,
                crate::report::read::read_run(b)?,
            );
            for (r, p) in [(&ra, a), (&rb, b)] {
                for why in compare::incomplete(r) {
                    incomplete.push(format!("{} is not whole: {why}", p.display()));
                }
            }
            // A pair with a trial the machine disturbed is left out whole, so the pairs
            // stay side by side in time (while enough undisturbed ones remain).
            let busy = [(&ra, a), (&rb, b)]
                .into_iter()
                .find_map(|(r, p)| Some(format!("{}: {}", p.display(), disturbed::of(r)?)));
            pairs.push((ra, rb, busy));
        }
    }
    let busy = pairs.iter().filter(|p| p.2.is_some()).count();
    if disturbed::leave_out(busy, pairs.len()) {
        for (_, _, why) in &pairs {
            if let Some(why) = why {
                println!("left out the pair of {why}");
            }
        }
        pairs.retain(|p| p.2.is_none());
    } else if busy > 0 {
        println!(
            "the machine was busy in {busy} of the {} pairs: judged on all of them, so the verdict carries the neighbours' noise; rerun on a quieter machine to be sure",
            pairs.len()
        );
    }
    let pairs: Vec<_> = pairs.into_iter().map(|(a, b, _)| (a, b)).collect();
    let judged = sure::judge_paired(&pairs, limit, &on);
    println!(
        "A: {}\nB: {}\n{} interleaved pairs; B against A, the median of the pairs' ratios:",
        args.a.display(),
        args.b.display(),
        pairs.len()
    );
    for j in &judged {
        println!("{}", line(j));
    }
    let worse = judged.iter().filter(|j| j.verdict.fails()).count();
    // Why nothing was judged, when nothing was (CLIENT-BOUND pairs, a busy machine): said
    // as compare says it, with what to do.
    let nothing = judged.is_empty().then(|| match pairs.first() {
        Some((a, b)) => compare::nothing_judged(&compare::deltas_on(a, b, &on), &on),
        None => "nothing was judged: no pair of trials was measured whole".to_string(),
    });
    let code = if !incomplete.is_empty() || judged.is_empty() {
        compare::say_incomplete(&incomplete, nothing.as_deref());
        compare::EXIT_INCOMPLETE
    } else if worse > 0 {
        compare::EXIT_REGRESSION
    } else {
        0
    };
    let json = sure::json(&args.a, &args.b, limit, &judged, code);
    crate::sys::files::atomic_write(
        &dir.join("ab.json"),
        serde_json::to_string_pretty(&json)?.as_bytes(),
    )?;
    if let Some(p) = &args.json {
        crate::sys::files::atomic_write(p, serde_json::to_string_pretty(&json)?.as_bytes())?;
    }
    if let Some(p) = &args.junit {
        let xml = sure::junit(&judged, &incomplete).to_string()?;
        crate::sys::files::atomic_write(p, xml.as_bytes())?;
    }
    println!("results: {}", dir.display());
    match nothing {
        Some(why) if incomplete.is_empty() => println!("verdict: FAIL: {why} (exit {code})"),
        _ => println!(
            "verdict: {}: {} figure(s) judged, {worse} regression(s) of B past the limit with the whole interval (exit {code})",
            if code == 0 { "PASS" } else { "FAIL" },
            judged.len()
        ),
    }
    Ok(ExitCode::from(code))
}

/// A judged figure with its ratio B/A.
fn line(j: &Judged) -> String {
    match j.scale {
        crate::report::noise::Scale::Ratio => {
            format!("{j} [B/A {:.3}]", j.shift.estimate)
        }
        crate::report::noise::Scale::Difference => j.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_alternate_a_b_b_a() {
        let o: String = order(3)
            .into_iter()
            .map(|(a, _)| if a { 'A' } else { 'B' })
            .collect();
        assert_eq!(o, "ABBAAB");
        assert_eq!(order(2)[2], (false, 2));
    }
}
