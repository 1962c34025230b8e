//! Results: the run folder's CSV/JSON writers, and `synlab report`: plots (SVG + PNG) and
//! report.md from a run folder, or two run folders overlaid.

pub mod compare;
pub mod figures;
pub mod hlog;
pub mod junit;
pub mod markdown;
pub mod plots;
pub mod read;
pub mod run_folder;
pub mod thresholds;

use crate::sys::machine::Machine;
use anyhow::Context;
use figures::Ctx;
use markdown::{MachineLine, PlotRef};
use read::RunData;
use std::path::{Path, PathBuf};

/// `synlab report RUN [RUN2]`.
pub fn report_main(runs: &[PathBuf]) -> anyhow::Result<()> {
    let md = match runs {
        [one] => write_report(one)?,
        [a, b] => write_comparison(a, b)?,
        _ => anyhow::bail!(
            "synlab report takes one run folder (plots and report.md) or two (an overlay of \
             the second on the first); got {}",
            runs.len()
        ),
    };
    println!("report: {}", md.display());
    println!("plots:  {}", md.with_file_name("plots").display());
    Ok(())
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
    let mut figs = if run.param().is_empty() {
        Vec::new()
    } else {
        figures::sweep_figures(&ctx)
    };
    figs.extend(figures::timeseries_figure(&run, &subtitle));
    write_all(run_dir, runs, figs, &ctx.missing(), &machine)
}

/// Overlays run `b` on run `a`: writes `A/compare-<B name>/plots/*` and `report.md` there.
pub fn write_comparison(a: &Path, b: &Path) -> anyhow::Result<PathBuf> {
    if let (Ok(ca), Ok(cb)) = (a.canonicalize(), b.canonicalize()) {
        if ca == cb {
            anyhow::bail!(
                "{} and {} are the same run folder: an overlay of a run on itself shows \
                 nothing; give two different runs, or one folder for its own report",
                a.display(),
                b.display()
            );
        }
    }
    let runs = [read::read_run(a)?, read::read_run(b)?];
    let (pa, pb) = (runs[0].param(), runs[1].param());
    if let Some(flat) = [(a, &pa), (b, &pb)].iter().find(|(_, p)| p.is_empty()) {
        anyhow::bail!(
            "{} has no sweep (a TUI session or a run of timed steps): `synlab report A B` overlays \
             the curves of two sweeps over the same parameter; run `synlab report` on each \
             folder instead",
            flat.0.display()
        );
    }
    if pa != pb {
        anyhow::bail!(
            "cannot overlay {} (sweeps `{pa}`) and {} (sweeps `{pb}`): compare runs of the same \
             sweep parameter",
            a.display(),
            b.display()
        );
    }
    let machine = machine_line(&runs[0]);
    let subtitle = format!(
        "{}: {} · {}: {}\nmachine: {}",
        runs[0].name,
        runs[0].backend(),
        runs[1].name,
        runs[1].backend(),
        machine.text
    );
    let ctx = Ctx::new(&runs, subtitle);
    let figs = figures::sweep_figures(&ctx);
    let out = a.join(format!("compare-{}", runs[1].name));
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
    for f in &figs {
        match plots::render(f, &plot_dir) {
            Ok(_) => refs.push(PlotRef {
                title: f.title.clone(),
                png: format!("plots/{}.png", f.stem),
                svg: format!("plots/{}.svg", f.stem),
            }),
            Err(e) => errors.push(format!("{}: {e:#}", f.stem)),
        }
    }
    let written_at = chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string();
    let md = markdown::report(runs, &refs, &errors, missing, machine, &written_at);
    let path = out.join("report.md");
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
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
