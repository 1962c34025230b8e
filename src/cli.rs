//! Command line: `synlab` (TUI on the default scenario) and its subcommands.

use clap::{CommandFactory, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "synlab",
    version,
    about = "Drive a web server past its capacity the way Internet traffic does, and watch its kernel respond.",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Open the live TUI on a scenario (the default when no subcommand is given).
    Tui {
        /// Scenario file; the embedded default scenario when omitted.
        scenario: Option<PathBuf>,
        /// Where to write the run folder (default: the scenario's [output] dir, else ./results).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Serve the live time series as OpenMetrics at http://ADDR/metrics (a bare port binds
        /// 127.0.0.1).
        #[arg(long, value_name = "ADDR")]
        metrics: Option<String>,
        /// Build the network lab in a user namespace even as root (the lab a user who is not
        /// root gets; without root that is the default).
        #[arg(long)]
        userns: bool,
    },
    /// Run a scenario headless and write a run folder of results.
    Run {
        /// Scenario file (`default` for the embedded default scenario).
        scenario: PathBuf,
        /// Parent folder of the run folder (default: the scenario's [output] dir, else ./results).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Scale durations down (warm-up, hold, steps) for a quick look or CI.
        #[arg(long)]
        quick: bool,
        /// No progress bar (also off when stderr is not a terminal).
        #[arg(long)]
        no_progress: bool,
        #[command(flatten)]
        extras: crate::lab::ci::RunExtras,
    },
    /// Validate scenario files without running them.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run the built-in target server on its own.
    Serve(crate::target::cli::ServeArgs),
    /// Run the kernel probes alone against a server on this host.
    Probe(crate::probe::cli::ProbeArgs),
    /// Bring the network lab up or down by hand, or list its leftovers.
    Net(crate::net::cli::NetArgs),
    /// Make plots and report.md for a run folder (several folders of one sweep: overlay them).
    Report {
        #[arg(required = true, num_args = 1..)]
        runs: Vec<PathBuf>,
    },
    /// Compare a run with a baseline run point by point; exit 3 on a regression past the limit
    /// (on repeated runs: when the change's 95 % interval is wholly past it).
    Compare {
        /// The baseline run folder.
        baseline: PathBuf,
        /// The run folder to judge.
        run: PathBuf,
        /// The largest regression allowed, in % of the baseline (error share: in points).
        #[arg(long, default_value = "5%")]
        max_regression: crate::report::compare::MaxRegression,
        /// The metrics judged (comma-separated): any numeric column of summary.json (e.g.
        /// good_responses_per_s, total_p99_ms, error_share_pct: failures in % of the requests
        /// that ended, judged in points), cpu_busy_pct, capacity_per_s (the sweep's capacity
        /// at its response-time target, per series).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "good_responses_per_s,total_p50_ms,total_p99_ms,error_share_pct,capacity_per_s"
        )]
        on: Vec<String>,
        /// Write the judged figures (change, 95 % interval, verdict) as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Write one JUnit test case per judged figure (its interval in the message) to FILE.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Where the overlay plots go (default: the run's folder; the baseline's is never
        /// written).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the access-log format synlab reads best for a server of yours (`target.access_log`).
    Logformat {
        /// The server the config lines are for.
        server: crate::probe::accesslog::LogServer,
    },
    /// Measure two configurations in interleaved trials (A B B A ...) and judge B against A
    /// per figure with a 95 % interval; exit 3 on a regression past the limit.
    Ab(crate::lab::ab::AbArgs),
    /// Print a shell completion script of synlab's subcommands and flags.
    Completions {
        /// The shell the script is for.
        shell: clap_complete::Shell,
    },
    /// Print synlab's man page (roff: `synlab man | man -l -`).
    Man,
    /// (internal) A load worker started by the controller.
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        config_json: String,
    },
    /// (internal) The CGI program of the built-in server's /cgi/{us} endpoint.
    #[command(hide = true)]
    CgiChild {
        #[arg(long, default_value_t = 0)]
        work: u64,
        /// The server's calibrated speed of the work (ns per iteration); 0: calibrate here.
        #[arg(long, default_value_t = 0.0)]
        ns_per_iter: f64,
    },
    /// (internal) The built-in prefork server's manager, which forks its workers.
    #[command(hide = true)]
    PreforkManager(crate::target::pool::ManagerArgs),
    /// (internal) The delay router started by the controller.
    #[command(hide = true)]
    Router {
        #[arg(long)]
        config_json: String,
    },
}

/// The command line a person types: the internal subcommands (a worker, the router ...) left
/// out, which clap_complete's scripts would otherwise offer.
fn public_command() -> clap::Command {
    let full = Cli::command();
    let public: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("synlab")
        .args(full.get_arguments().cloned())
        .subcommands(public)
}

/// Runs one command; Ok carries the process exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let holds_nothing = match &cli.cmd {
        Some(
            Cmd::Check { .. }
            | Cmd::Probe(_)
            | Cmd::Report { .. }
            | Cmd::Compare { .. }
            | Cmd::Completions { .. }
            | Cmd::Logformat { .. }
            | Cmd::Man,
        ) => true,
        Some(Cmd::Net(n)) => matches!(n.cmd, crate::net::cli::NetCmd::Status),
        _ => false,
    };
    if holds_nothing {
        crate::sys::process::die_quietly_on_broken_pipe();
    }
    match cli.cmd.unwrap_or(Cmd::Tui {
        scenario: None,
        out: None,
        metrics: None,
        userns: false,
    }) {
        Cmd::Tui {
            scenario,
            out,
            metrics,
            userns,
        } => crate::ui::tui_main(crate::lab::session::Start {
            scenario: scenario.as_deref(),
            out: out.as_deref(),
            metrics: metrics.as_deref(),
            userns,
            quick: false,
        }),
        Cmd::Run {
            scenario,
            out,
            quick,
            no_progress,
            extras,
        } => crate::lab::repeat::run_main(&scenario, out.as_deref(), quick, !no_progress, &extras),
        Cmd::Check { files } => crate::scenario::check_main(&files),
        Cmd::Serve(a) => crate::target::cli::serve_main(a).map(|_| ExitCode::SUCCESS),
        Cmd::Probe(a) => crate::probe::cli::probe_main(a).map(|_| ExitCode::SUCCESS),
        Cmd::Net(a) => crate::net::cli::net_main(a).map(|_| ExitCode::SUCCESS),
        Cmd::Report { runs } => crate::report::report_main(&runs),
        Cmd::Compare {
            baseline,
            run,
            max_regression,
            on,
            json,
            junit,
            out,
        } => crate::report::sure::compare_cli(
            &baseline,
            &run,
            max_regression,
            &on,
            &crate::report::sure::Outputs {
                json,
                junit,
                overlay: out,
            },
        ),
        Cmd::Logformat { server } => {
            print!("{}", crate::probe::accesslog::recommended_format(server));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Ab(a) => crate::lab::ab::ab_main(&a),
        Cmd::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut public_command(),
                "synlab",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            std::io::stdout().write_all(&page)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Worker { config_json } => {
            crate::load::cli::worker_main(&config_json).map(|_| ExitCode::SUCCESS)
        }
        Cmd::CgiChild { work, ns_per_iter } => {
            if ns_per_iter > 0.0 {
                crate::target::work::set_speed(ns_per_iter);
            }
            crate::target::dynamic::cgi_child_main(work).map(|_| ExitCode::SUCCESS)
        }
        Cmd::PreforkManager(a) => crate::target::pool::manager_main(a).map(|_| ExitCode::SUCCESS),
        Cmd::Router { config_json } => {
            crate::net::cli::router_main(&config_json).map(|_| ExitCode::SUCCESS)
        }
    }
}
