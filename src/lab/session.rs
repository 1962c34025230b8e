//! The one start-up path of both front ends (the TUI and `synlab run`) and their one ending:
//! the scenario read, the lab's mode settled before any thread starts, the `--metrics`
//! endpoint, the signal flag and where the run folder goes; at the end, the report, where the
//! folder is and the exit code of a run that a signal or a death cut short.

use super::controller::RunOptions;
use crate::model::death::Death;
use crate::scenario::Scenario;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Factor `--quick` scales a scenario's durations by.
pub const QUICK_FACTOR: f64 = 0.25;

/// What a front end was asked to run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Start<'a> {
    /// A scenario file; None or `default`: the embedded default scenario.
    pub scenario: Option<&'a Path>,
    /// Parent folder of the run folder (else the scenario's [output] dir, else ./results).
    pub out: Option<&'a Path>,
    /// `--metrics ADDR`.
    pub metrics: Option<&'a str>,
    /// Build the network lab in a user namespace even as root.
    pub userns: bool,
    /// Scale durations down (`--quick`).
    pub quick: bool,
}

impl Start<'_> {
    /// The embedded default scenario: without the privileges for its lab it runs on loopback.
    fn embedded(&self) -> bool {
        self.scenario.is_none_or(|p| p.as_os_str() == "default")
    }

    /// How the scenario is named in messages ("default" for the embedded one).
    pub fn name(&self) -> String {
        match self.scenario {
            Some(p) if !self.embedded() => p.display().to_string(),
            _ => "default".into(),
        }
    }

    /// The scenario and the options `Controller::start` takes: the lab's mode settled (before
    /// any thread), the `--metrics` endpoint up, Ctrl-C / SIGTERM / SIGHUP noted.
    pub fn open(&self) -> anyhow::Result<(Scenario, RunOptions)> {
        let mut sc = match self.scenario {
            Some(p) if !self.embedded() => {
                let (sc, warnings) = crate::scenario::load_with_warnings(p)?;
                for w in &warnings {
                    eprintln!("synlab: warning: {w}");
                }
                sc
            }
            Some(p) => crate::scenario::load(p)?,
            None => crate::scenario::default_scenario(),
        };
        if self.quick {
            sc = sc.scaled(QUICK_FACTOR);
        }
        let own_loopback = settle_lab_mode(&sc, self.userns)?;
        // The endpoint binds on the host's namespace before the move, so it stays reachable.
        let metrics = crate::metrics::openmetrics::Exporter::start_at(self.metrics)?;
        if own_loopback {
            if let Err(e) = crate::net::loopback::enter_own() {
                crate::net::loopback::keep_host(format!("{e:#}"));
            }
        }
        let opts = RunOptions {
            out_parent: Some(out_parent(&sc, self.out)),
            interrupted: interrupt_flag(),
            network_fallback: self.embedded(),
            metrics,
        };
        Ok((sc, opts))
    }
}

/// Decides, before any thread starts, where a scenario's network lab is built: as root on
/// the host, or in synlab's own user namespace (not root, or `force`). Scenarios without a
/// [network] section stay as they are: their command targets keep the user's own identity.
/// A target that cannot run in the lab so settled (nginx or Apache rootless without
/// subordinate ids) is refused here, before any of the lab is built.
/// A scenario without [network] run in the user namespace gets a loopback of its own
/// (`crate::net::loopback`): Ok(true) says the caller enters it once its own threads that
/// must stay on the host (the `--metrics` endpoint) have started.
pub fn settle_lab_mode(sc: &Scenario, force: bool) -> anyhow::Result<bool> {
    if sc.network.is_none() {
        if let Some(why) = host_loopback_why(sc, force) {
            crate::net::loopback::keep_host(why);
        } else {
            match crate::sys::userns::prepare(force) {
                crate::sys::userns::LabMode::Rootless { .. } => return Ok(true),
                mode => {
                    crate::net::loopback::keep_host(mode_why(mode));
                }
            }
        }
    }
    if sc.network.is_some() || force {
        let mode = crate::sys::userns::prepare(force);
        super::real_server::fits_lab(sc.target.kind, mode)?;
        if matches!(mode, crate::sys::userns::LabMode::Rootless { .. }) {
            if let Some(why) = crate::scenario::steers_live(sc) {
                anyhow::bail!("{why}");
            }
        }
    }
    Ok(false)
}

/// Why a scenario without [network] keeps the host's loopback (None: it gets its own).
fn host_loopback_why(sc: &Scenario, force: bool) -> Option<String> {
    use crate::scenario::model::TargetKind;
    if crate::sys::userns::host_root() && !force {
        return Some(
            "synlab runs as root: the run uses the host's loopback (a `[network]` section, or --userns, gives it a namespace of its own)".into(),
        );
    }
    if sc.target.kind == TargetKind::Address {
        return Some(
            "the target is a server already running on the host, which a namespace of the run's own could not reach".into(),
        );
    }
    if sc.target.kind.is_real_server() {
        if let Some(lack) = crate::sys::userns::wide_mapping_would_lack() {
            return Some(format!(
                "{} could not run in a namespace of the run's own: {lack}",
                sc.target.kind.name()
            ));
        }
    }
    None
}

/// Why the user namespace gave no loopback of the run's own.
fn mode_why(mode: &crate::sys::userns::LabMode) -> String {
    match mode {
        crate::sys::userns::LabMode::Refused(why) => why.to_string(),
        other => format!("the lab runs {}", other.label()),
    }
}

/// The parent folder of run folders: --out, else the scenario's [output] dir, else ./results.
pub fn out_parent(sc: &Scenario, out: Option<&Path>) -> PathBuf {
    out.map(Path::to_path_buf)
        .or_else(|| sc.output.dir.clone())
        .unwrap_or_else(|| PathBuf::from("results"))
}

/// Registers Ctrl-C / SIGTERM / SIGHUP to set the returned flag (a second Ctrl-C exits at once).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag));
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// Writes the run folder's report.md and says where the folder is; Err(what could not be
/// written and why, with its path), which fails the run. After a hangup the terminal is gone: these lines are
/// lost, never a panic (as println!'s would be).
pub fn report_and_folder(dir: Option<&Path>) -> anyhow::Result<()> {
    let Some(dir) = dir else { return Ok(()) };
    let mut out = std::io::stdout();
    let written =
        crate::report::write_report(dir).map(|md| drop(writeln!(out, "report: {}", md.display())));
    let _ = writeln!(out, "results: {}", dir.display());
    written
}

/// The exit code of a run that a signal (130) or the death of a child it needed (1) cut
/// short, said on stderr; None when neither did.
pub fn cut_short(interrupted: bool, died: Option<&Death>) -> Option<ExitCode> {
    let mut err = std::io::stderr();
    if interrupted {
        let _ = writeln!(
            err,
            "synlab: interrupted; the run folder holds what was measured"
        );
        return Some(ExitCode::from(130));
    }
    let d = died?;
    let _ = writeln!(
        err,
        "synlab: {d}; the run stopped there and everything it started was removed (exit 1); the run folder holds what was measured"
    );
    Some(ExitCode::from(1))
}
