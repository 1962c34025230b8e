//! Results: `synlab report`: plots (SVG + PNG) and report.md from a run folder (written by
//! `lab::recorder`), or two run folders overlaid.

pub mod compare;
pub mod disturbed;
pub mod figures;
pub mod hlog;
pub mod junit;
pub mod latency_split;
pub mod markdown;
pub mod noise;
pub mod phases;
pub mod plots;
pub mod read;
pub mod sure;
pub mod thresholds;
pub mod trials;
pub mod trials_page;
pub mod unwritten;
pub mod whole;
pub use unwritten::Unwritten;

use crate::sys::machine::Machine;
use anyhow::Context;
use figures::Ctx;
use markdown::{MachineLine, PlotRef};
use read::RunData;
use std::path::{Path, PathBuf};

/// The exit code for a report that could not be written whole (a run folder that is not one
/// stays bad input: exit 2).
pub const EXIT_UNWRITTEN: u8 = 1;

/// `synlab report RUN [RUN2]`: exit 0, or 1 when a file could not be written.
pub fn report_main(runs: &[PathBuf]) -> anyhow::Result<std::process::ExitCode> {
    let written = match runs {
        [] => anyhow::bail!("synlab report takes at least one run folder"),
        // A repeated run's folder: its aggregate again, from its trials.
        [one] if !trials::trial_dirs(one).is_empty() => trials_page::rewrite(one),
        [one] => write_report(one),
        several => write_overlay(several),
    };
    match written {
        Ok(md) => {
            println!("report: {}", md.display());
            println!("plots:  {}", md.with_file_name("plots").display());
            Ok(whole_or_said(runs))
        }
        Err(e) if e.is::<Unwritten>() => {
            eprintln!("synlab: {e:#}");
            Ok(std::process::ExitCode::from(EXIT_UNWRITTEN))
        }
        Err(e) => Err(e),
    }
}

/// Exit 0 when every run reported is whole; else 4, each reason said on stderr as `synlab
/// compare` says it (a report of a killed or interrupted run is written, and is no valid
/// result). A repeated run's folder is judged by its trials' aggregate, not here.
fn whole_or_said(runs: &[PathBuf]) -> std::process::ExitCode {
    let mut said = false;
    for dir in runs.iter().filter(|d| trials::trial_dirs(d).is_empty()) {
        let Ok(run) = read::read_run(dir) else {
            continue;
        };
        for why in whole::incomplete(&run) {
            eprintln!("INCOMPLETE {} is not whole: {why}", dir.display());
            said = true;
        }
    }
    if said {
        eprintln!(
            "synlab: report written, but of a run that is not whole (exit {})",
            whole::EXIT_INCOMPLETE
        );
        return std::process::ExitCode::from(whole::EXIT_INCOMPLETE);
    }
    std::process::ExitCode::SUCCESS
}

/// Writes `RUN_DIR/plots/*.svg|png` and `RUN_DIR/report.md`; returns report.md's path.
/// Works on an interrupted run: whatever was measured is plotted, the gaps are said.
pub fn write_report(run_dir: &Path) -> anyhow::Result<PathBuf> {
    let run = read::read_run(run_dir)?;
    let machine = machine_line(&run);
    let subtitle = format!(
        "backend: {} · run: {}\nmachine: {}",
        run.backend(),
        run.name,
        machine.text
    );
    let runs = std::slice::from_ref(&run);
    let ctx = Ctx::new(runs, subtitle.clone());
    // A run without a sweep (a TUI session, a run of timed steps) has one summary row: curves
    // against a sweep parameter would be single dots, so it gets its time series only.
    let mut figs = if run.param().is_none() {
        Vec::new()
    } else {
        figures::sweep_figures(&ctx)
    };
    figs.extend(figures::timeseries_figure(&run, &subtitle));
    if run.param().is_none() {
        figs.extend(figures::classes_over_time(&run, &subtitle));
    }
    write_all(run_dir, runs, figs, &ctx.missing(), &machine)
}

/// Overlays run `b` on run `a`: writes `A/compare-<B name>/plots/*` and `report.md` there.
pub fn write_comparison(a: &Path, b: &Path) -> anyhow::Result<PathBuf> {
    write_overlay(&[a.to_path_buf(), b.to_path_buf()])
}

/// Overlays the sweep curves of two or more runs of the same sweep parameter (e.g. one
/// scenario against built-in, nginx and Apache targets) into the first run's folder, under
/// `compare-<the others' names>`; returns that report.md's path.
pub fn write_overlay(dirs: &[PathBuf]) -> anyhow::Result<PathBuf> {
    write_overlay_into(dirs, &dirs[0], None)
}

/// [`write_overlay`] into the folder `into` (`compare` writes beside the run it judges, never
/// into a baseline a CI job may keep read-only), under `compare-<named>` (default: the names
/// of the runs after the first). The folder's name is bounded ([`plots::bounded_name`]):
/// eleven runs' names do not make a name too long.
pub fn write_overlay_into(
    dirs: &[PathBuf],
    into: &Path,
    named: Option<&[&str]>,
) -> anyhow::Result<PathBuf> {
    let canon: Vec<Option<PathBuf>> = dirs.iter().map(|d| d.canonicalize().ok()).collect();
    for (i, c) in canon.iter().enumerate() {
        if let Some(j) = canon[..i].iter().position(|o| o.is_some() && o == c) {
            anyhow::bail!(
                "{} and {} are the same run folder: an overlay of a run on itself shows \
                 nothing; give different runs, or one folder for its own report",
                dirs[j].display(),
                dirs[i].display()
            );
        }
    }
    let runs = dirs
        .iter()
        .map(|d| read::read_run(d))
        .collect::<anyhow::Result<Vec<RunData>>>()?;
    if let Some(i) = runs.iter().position(|r| r.param().is_none()) {
        anyhow::bail!(
            "{} has no sweep (a TUI session or a run of timed steps): `synlab report A B ...` \
             overlays the curves of sweeps over the same parameter; run `synlab report` on each \
             folder instead",
            dirs[i].display()
        );
    }
    let p0 = runs[0].param();
    if let Some(i) = runs.iter().position(|r| r.param() != p0) {
        use crate::model::SweepParam;
        let name = |p: Option<SweepParam>| p.map_or("", SweepParam::name);
        anyhow::bail!(
            "cannot overlay {} (sweeps `{}`) and {} (sweeps `{}`): compare runs of the same \
             sweep parameter",
            dirs[0].display(),
            name(p0),
            dirs[i].display(),
            name(runs[i].param())
        );
    }
    let machine = machine_line(&runs[0]);
    let names: Vec<String> = runs
        .iter()
        .map(|r| format!("{}: {}", r.name, r.backend()))
        .collect();
    let subtitle = format!("{}\nmachine: {}", names.join(" · "), machine.text);
    let ctx = Ctx::new(&runs, subtitle);
    let figs = figures::sweep_figures(&ctx);
    let others: Vec<&str> = runs[1..].iter().map(|r| r.name.as_str()).collect();
    let out = into.join(plots::bounded_name("compare", named.unwrap_or(&others)));
    write_all(&out, &runs, figs, &ctx.missing(), &machine)
}

fn write_all(
    out: &Path,
    runs: &[RunData],
    figs: Vec<plots::Figure>,
    missing: &[String],
    machine: &MachineLine,
) -> anyhow::Result<PathBuf> {
    let plot_dir = out.join("plots");
    std::fs::create_dir_all(&plot_dir)
        .with_context(|| format!("creating {}", plot_dir.display()))?;
    let mut refs = Vec::new();
    let mut errors = Vec::new();
    let mut unwritten = Vec::new();
    for f in &figs {
        match plots::render(f, &plot_dir) {
            Ok(_) => refs.push(PlotRef {
                title: f.title.clone(),
                png: format!("plots/{}.png", f.stem),
                svg: format!("plots/{}.svg", f.stem),
            }),
            Err(e) => {
                errors.push(format!("{}: {e:#}", f.stem));
                unwritten.push(format!("{e:#}"));
            }
        }
    }
    let written_at = chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string();
    let md = markdown::report(runs, &refs, &errors, missing, machine, &written_at);
    let path = out.join("report.md");
    if let Err(e) = crate::sys::files::atomic_write(&path, md.as_bytes()) {
        unwritten.push(format!("{e:#}"));
    }
    if unwritten.is_empty() {
        Ok(path)
    } else {
        Err(Unwritten(unwritten).into())
    }
}

/// The machine from summary.json's meta.machine if the run recorded it, else this host now.
fn machine_line(run: &RunData) -> MachineLine {
    match run.meta.get("machine").and_then(Machine::from_json) {
        Some(m) => MachineLine {
            text: m.describe(),
            recorded: true,
        },
        None => MachineLine {
            text: Machine::read().describe(),
            recorded: false,
        },
    }
}
