//! issue 28, in a real terminal (tmux), as root and as a plain user (the rootless lab): a
//! screen a class can trust. Closing the window ends the run as an interruption with a whole
//! run folder and exit 130; keys that change nothing are refused and recorded nowhere; a rate
//! change raises no CLIENT-BOUND while a real client-bound stretch does and its warning goes
//! after; latency with no response is "-"; bandwidth steps in Mbit/s; and the lesson
//! `lesson-overload`, walked step by step, with a capture of each step in the output and each
//! caption's claim checked against the figures on the screen.
//!
//! The lesson assumes what a laptop gives the built-in server: most of a core (~1,000
//! requests/s at 1 ms of CPU each). On our shared 2-vCPU machines other builds take the
//! CPUs, so as root the walk-through runs synlab (and the plain user's synlab) at nice -15;
//! a test runner that is not root cannot, and says so.

mod plain_support;
mod tmux_support;

use plain_support::Plain;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tmux_support::{figure_any, have_tmux, queue, tmux, wait_for, Session};

/// One session at a time: the walk-through measures rates, the others build labs.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Who runs synlab: whoever runs the tests (root in CI), or the plain user (rootless); each
/// with a copy of the binary of its own, so its processes are found by their executable.
struct Runner {
    who: &'static str,
    prefix: Vec<String>,
    exe: PathBuf,
    dir: PathBuf,
    plain: Option<Plain>,
    _tmp: Option<tempfile::TempDir>,
}

fn root() -> bool {
    synlab::sys::userns::host_root()
}

impl Runner {
    fn invoker() -> Runner {
        let tmp = tempfile::Builder::new()
            .prefix("synlab-class-")
            .tempdir_in("/tmp")
            .unwrap();
        let exe = tmp.path().join("synlab");
        std::fs::copy(env!("CARGO_BIN_EXE_synlab"), &exe).unwrap();
        Runner {
            who: if root() { "root" } else { "the test's user" },
            prefix: Vec::new(),
            exe,
            dir: tmp.path().to_path_buf(),
            plain: None,
            _tmp: Some(tmp),
        }
    }

    fn plain() -> Option<Runner> {
        let p = plain_support::plain_user()?;
        Some(Runner {
            who: "a plain user (rootless)",
            prefix: p.prefix.clone(),
            exe: p.exe.clone(),
            dir: p.dir.path().to_path_buf(),
            plain: Some(p),
            _tmp: None,
        })
    }

    /// Runs at nice -15 (root only: the lesson's server needs its core on a shared machine).
    fn niced(mut self) -> Runner {
        if root() {
            let mut p = vec!["nice".to_string(), "-n".into(), "-15".into()];
            p.append(&mut self.prefix);
            self.prefix = p;
        } else {
            eprintln!("note: not root, so synlab runs at normal priority (a busy machine may slow the lesson's server)");
        }
        self
    }

    /// The session's command: synlab's TUI with `args`, in a shell that outlives the window's
    /// hangup (its trap) and writes synlab's exit code to `exit-code`, then keeps the pane
    /// (for a last capture) until the pane hangs up: a read of the terminal, which ends at the
    /// hangup, rather than a sleep, which outlived the tmux server by up to a minute.
    fn command(&self, args: &str) -> String {
        let mut words = self.prefix.clone();
        words.push(self.exe.display().to_string());
        format!(
            "cd {d} && trap true HUP; HOME={d} {} tui {args} --out {d}/out; code=$?; echo $code > {d}/exit-code; echo SYNLAB-EXIT=$code; timeout --foreground 60 cat >/dev/null",
            words.join(" "),
            d = self.dir.display()
        )
    }

    fn exit_code(&self, secs: u64) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Ok(s) = std::fs::read_to_string(self.dir.join("exit-code")) {
                if let Ok(c) = s.trim().parse() {
                    return Some(c);
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn folder(&self) -> PathBuf {
        plain_support::run_folder(&self.dir.join("out"))
    }

    /// Live processes running this runner's copy of synlab, after up to `secs` for them to go.
    fn left(&self, secs: u64) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left: Vec<u32> = std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|pid: &u32| {
                    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|x| x == self.exe)
                })
                .collect();
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Runs `test` as whoever runs the tests, one session at a time (skipped without tmux).
fn as_invoker(test: impl FnOnce(Runner)) {
    if !have_tmux() {
        return;
    }
    let _s = serial();
    test(Runner::invoker());
}

/// Runs `test` as the plain user (the rootless lab), one session at a time.
fn as_plain_user(test: impl FnOnce(Runner)) {
    if !have_tmux() {
        return;
    }
    let _s = serial();
    if let Some(r) = Runner::plain() {
        test(r);
    }
}

fn session_name(what: &str) -> String {
    format!("synlab-{what}-{}", std::process::id())
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_default()
}

/// Whether the default scenario gets its network lab here: as root on the host; as anyone
/// else in a user namespace, where the kernel grants one (the plain user is only ever
/// chosen where it does).
fn lab_possible(r: &Runner) -> bool {
    (root() && r.plain.is_none())
        || r.plain.is_some()
        || std::process::Command::new("unshare")
            .args(["-r", "-n", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

// ---------------------------------------------------------------------------------------
// Item 1: the terminal closed under the TUI.

fn closing_the_window(r: Runner) {
    let session = Session::start_sized(&session_name("close"), &r.command(""), 120, 40);
    let up = wait_for(
        &session.0,
        &|s| {
            s.contains("rate 500 conn/s")
                && figure_any(s, &["connections", "conn"]).is_some_and(|v| v > 0.0)
        },
        40,
    );
    assert!(
        up.contains("rate 500 conn/s"),
        "the TUI did not come up as {}:\n{up}",
        r.who
    );
    println!("as {} before closing the window:\n{up}", r.who);
    // What a teacher closing the terminal does: the window goes, its pty hangs up.
    tmux(&["kill-window", "-t", &session.0]);
    let code = r.exit_code(45);
    let dir = r.folder();
    let log = read(&dir, "run.log");
    assert_eq!(code, Some(130), "exit code as {}; run.log:\n{log}", r.who);
    assert!(log.contains("the terminal went away"), "{log}");
    assert!(log.contains("interrupted:"), "{log}");
    for f in [
        "summary.json",
        "summary.csv",
        "events.csv",
        "timeseries.csv",
        "report.md",
        "scenario.toml",
        "plots/timeseries.png",
    ] {
        assert!(
            dir.join(f).exists(),
            "{f} missing as {}; run.log:\n{log}",
            r.who
        );
    }
    let summary: serde_json::Value = serde_json::from_str(&read(&dir, "summary.json")).unwrap();
    assert_eq!(summary["meta"]["interrupted"], true);
    assert!(summary["run_totals"]["attempts"].as_u64().unwrap_or(0) > 0);
    assert!(read(&dir, "report.md").contains("**Interrupted:**"));
    let left = r.left(15);
    assert!(left.is_empty(), "synlab processes left: {left:?}");
}

#[test]
fn closing_the_window_ends_the_run_as_an_interruption() {
    as_invoker(closing_the_window);
}

#[test]
fn closing_the_window_ends_a_rootless_run_as_an_interruption() {
    as_plain_user(closing_the_window);
}

// ---------------------------------------------------------------------------------------
// Items 2, 3, 4, 5, 7: what keys and warnings say.

/// Connection errors never more than connections on a screen (the CSV's figures: each is one
/// column, averaged over the same second).
fn errors_within_attempts(s: &str) -> bool {
    match (
        figure_any(s, &["conn err", "cerr"]),
        figure_any(s, &["connections", "conn"]),
    ) {
        (Some(e), Some(a)) => e <= a * 1.05 + 1.0,
        _ => true,
    }
}

fn keys_and_warnings(r: Runner) {
    let lab = lab_possible(&r);
    let s = Session::start_sized(&session_name("keys"), &r.command(""), 120, 40);
    let up = wait_for(
        &s.0,
        &|s| {
            s.contains("rate 500 conn/s")
                && figure_any(s, &["connections"]).is_some_and(|v| v > 300.0)
        },
        40,
    );
    assert!(
        up.contains("rate 500 conn/s"),
        "the TUI did not come up:\n{up}"
    );

    // `*` doubles the rate: no CLIENT-BOUND (a rate change is not a lag), errors within
    // attempts, for 8 s.
    s.keys(&["*"]);
    let doubled = wait_for(&s.0, &|s| s.contains("rate 1000 conn/s"), 10);
    assert!(doubled.contains("rate 1000 conn/s"), "{doubled}");
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        let screen = s.screen();
        assert!(
            !screen.contains("CLIENT-BOUND"),
            "a rate change read as client-bound:\n{screen}"
        );
        assert!(
            errors_within_attempts(&screen),
            "more errors than attempts:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // Bandwidth in Mbit/s, on round steps.
    if lab {
        for (key, want) in [
            ("w", "bw 100 Mbit/s"),
            ("w", "bw 50 Mbit/s"),
            ("W", "bw 100 Mbit/s"),
        ] {
            s.keys(&[key]);
            let screen = wait_for(&s.0, &|x| x.contains(want), 10);
            assert!(screen.contains(want), "after {key}:\n{screen}");
            assert!(!screen.contains("bit "), "raw bits on screen:\n{screen}");
        }
    }

    // Down to the floor: each press a change, then one refused with the reason.
    for _ in 0..10 {
        s.keys(&["/"]);
        std::thread::sleep(Duration::from_millis(150));
    }
    let floor = wait_for(&s.0, &|x| x.contains("rate 1 conn/s"), 10);
    assert!(floor.contains("rate 1 conn/s"), "{floor}");
    s.keys(&["/"]);
    let refused = wait_for(&s.0, &|x| x.contains("» refused: rate limit reached"), 10);
    assert!(
        refused.contains("» refused: rate limit reached"),
        "{refused}"
    );
    // At 1-2/s a fine step still changes the rate.
    s.keys(&["+"]);
    let up2 = wait_for(&s.0, &|x| x.contains("» rate 1/s -> 2/s"), 10);
    assert!(up2.contains("» rate 1/s -> 2/s"), "{up2}");
    s.keys(&["+"]);
    let up3 = wait_for(&s.0, &|x| x.contains("» rate 2/s -> 3/s"), 10);
    assert!(up3.contains("» rate 2/s -> 3/s"), "{up3}");

    // No response in the last second: latency is "-", not the last value seen.
    s.keys(&["p"]);
    let dashes = |x: &str| {
        x.lines()
            .find(|l| l.contains("│total "))
            .is_some_and(|l| l.split_whitespace().filter(|w| *w == "-").count() >= 3)
    };
    let paused = wait_for(&s.0, &|x| x.contains("PAUSED") && dashes(x), 10);
    assert!(
        dashes(&paused),
        "latency after a second without responses:\n{paused}"
    );
    s.keys(&["p"]);

    // A real client-bound stretch: D = 1 at 768/s (most arrivals find the one socket busy).
    s.keys(&["*", "*", "*", "*", "*", "*", "*", "*"]);
    let r768 = wait_for(&s.0, &|x| x.contains("rate 768 conn/s"), 10);
    assert!(r768.contains("rate 768 conn/s"), "{r768}");
    for _ in 0..15 {
        s.keys(&["d"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    let bound = wait_for(&s.0, &|x| x.contains("CLIENT-BOUND"), 15);
    assert!(
        bound.contains("D 1 ") && bound.contains("CLIENT-BOUND"),
        "{bound}"
    );
    for _ in 0..15 {
        s.keys(&["D"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    let back = Instant::now();
    let gone = wait_for(
        &s.0,
        &|x| x.contains("D 32768") && !x.contains("CLIENT-BOUND"),
        20,
    );
    let took = back.elapsed().as_secs_f64();
    assert!(
        !gone.contains("CLIENT-BOUND"),
        "the warning stayed after the stretch ended:\n{gone}"
    );
    println!("CLIENT-BOUND went {took:.1} s after D was raised back");
    assert!(took < 12.0, "the warning took {took:.1} s to go");

    let end = s.quit();
    assert!(end.contains("SYNLAB-EXIT=0"), "{end}");
    let dir = r.folder();
    let events = read(&dir, "events.csv");
    // Every change in the log changed something; the refused press is not there.
    for line in events.lines().filter(|l| l.contains(",change,rate ")) {
        let text = line.split(",change,").nth(1).unwrap();
        let (from, to) = text.trim_start_matches("rate ").split_once(" -> ").unwrap();
        assert_ne!(from, to, "a no-op change was recorded: {line}");
    }
    assert_eq!(events.matches("rate 2/s -> 1/s").count(), 1, "{events}");
    assert!(events.contains("warning: CLIENT-BOUND"), "{events}");
    assert!(events.contains("cleared: CLIENT-BOUND"), "{events}");
    let log = read(&dir, "run.log");
    assert!(log.contains("warning cleared: CLIENT-BOUND"), "{log}");
    let left = r.left(15);
    assert!(left.is_empty(), "synlab processes left: {left:?}");
}

#[test]
fn keys_and_warnings_tell_the_truth() {
    as_invoker(keys_and_warnings);
}

#[test]
fn keys_and_warnings_tell_the_truth_rootless() {
    as_plain_user(keys_and_warnings);
}

// ---------------------------------------------------------------------------------------
// Item 8: a sweep in the TUI; item 10: a small window.

const SWEEP: &str =
    "name = \"sweep-in-the-tui\"\n[target]\narch = \"event\"\nservice_time = \"1ms\"\n\
[load]\nmode = \"open\"\nrate = 100\nsockets = 2000\n\
[sweep]\nparam = \"load.rate\"\nvalues = [150, 300, 450]\nwarmup = \"1s\"\nhold = \"20s\"\n";

fn sweep_plays(r: Runner, w: u16, h: u16) {
    let sc = r.dir.join("sweep.toml");
    std::fs::write(&sc, SWEEP).unwrap();
    let workers = r.dir.join("workers.toml");
    std::fs::write(
        &workers,
        SWEEP.replace(
            "param = \"load.rate\"\nvalues = [150, 300, 450]",
            "param = \"load.workers\"\nvalues = [1, 2]",
        ),
    )
    .unwrap();
    for f in [&sc, &workers] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let s = Session::start_sized(
        &session_name("sweep"),
        &r.command(&sc.display().to_string()),
        w,
        h,
    );
    let first = wait_for(
        &s.0,
        &|x| x.contains("point 1/3: load.rate = 150") && x.contains("rate 150 conn/s"),
        40,
    );
    println!("a sweep in the TUI at {w}x{h} as {}:\n{first}", r.who);
    assert!(
        first.contains("step 1/3"),
        "the sweep's first point did not play:\n{first}"
    );
    if h < 24 {
        // Small: the latency and CPU panels, or (when the status needs the rows) their
        // figures on a line that says how to see them; never nothing.
        assert!(
            first.contains("latency, last 1 s") || first.contains("more: enlarge"),
            "{first}"
        );
    }
    s.keys(&["n"]);
    let second = wait_for(
        &s.0,
        &|x| x.contains("point 2/3: load.rate = 300") && x.contains("rate 300 conn/s"),
        10,
    );
    println!("after n:\n{second}");
    assert!(second.contains("step 2/3"), "{second}");
    let end = s.quit();
    assert!(end.contains("SYNLAB-EXIT=0"), "{end}");
    let events = read(&r.folder(), "events.csv");
    assert!(
        events.contains("point 1/3: load.rate = 150")
            && events.contains("point 2/3: load.rate = 300"),
        "{events}"
    );
    // A sweep that restarts the workers is said to be for `synlab run`.
    std::fs::remove_dir_all(r.dir.join("out")).unwrap();
    let _ = std::fs::remove_file(r.dir.join("exit-code"));
    let s = Session::start_sized(
        &session_name("sweepw"),
        &r.command(&workers.display().to_string()),
        w,
        h,
    );
    let said = wait_for(&s.0, &|x| x.contains("synlab run"), 40);
    assert!(
        said.contains("load.workers") || said.contains("synlab run"),
        "{said}"
    );
    let end = s.quit();
    assert!(end.contains("SYNLAB-EXIT=0"), "{end}");
    let left = r.left(15);
    assert!(left.is_empty(), "synlab processes left: {left:?}");
}

#[test]
fn a_sweep_plays_as_steps_in_a_small_window() {
    as_invoker(|r| sweep_plays(r, 60, 20));
}

#[test]
fn a_sweep_plays_as_steps_rootless() {
    as_plain_user(|r| sweep_plays(r, 80, 24));
}

// ---------------------------------------------------------------------------------------
// The lesson, step by step.

/// A screen's figures a caption speaks of.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    connections: f64,
    responses: f64,
    conn_err: f64,
    queue: f64,
    limit: f64,
    overflows: f64,
}

fn figures(s: &str) -> Option<Figures> {
    let (queue, limit) = queue(s)?;
    Some(Figures {
        connections: figure_any(s, &["connections", "conn"])?,
        responses: figure_any(s, &["responses", "resp"])?,
        conn_err: figure_any(s, &["conn err", "cerr"])?,
        queue,
        limit,
        // The lesson's own server: its port's listen drops where the namespace is the host's
        // (a loopback run as root), else the lab's namespace's overflows.
        overflows: figure_any(s, &["drops/s port", "overflows/s"])?,
    })
}

fn near(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.max(1.0)
}

/// Below capacity at `rate`: connections at the rate, every one answered, no SYN dropped, the
/// accept queue (near) empty.
fn served_in_full(rate: f64) -> impl Fn(&Figures) -> bool {
    move |f| {
        near(f.connections, rate, 0.15)
            && near(f.responses, f.connections, 0.1)
            && f.overflows == 0.0
            && f.queue <= 5.0
    }
}

/// One step: `n`, then up to `secs` for the screen to show what `claim` says; the screen
/// shown with the caption and what was checked, then the verdict.
fn step(
    s: &Session,
    (i, hold): (usize, u64),
    caption_starts: &str,
    secs: u64,
    what: &str,
    claim: &dyn Fn(&Figures) -> bool,
) -> Figures {
    // The step may have come on its own time already (each is 25-55 s after the last).
    if !s.screen().contains(&format!("step {i}/8")) {
        s.keys(&["n"]);
    }
    let pressed = Instant::now();
    let deadline = pressed + Duration::from_secs(secs);
    // The headline figures are the last second's means: judged once they are all the step's.
    std::thread::sleep(Duration::from_secs(2));
    let (screen, f) = loop {
        let screen = s.screen();
        let f = figures(&screen);
        let shown = screen.contains(caption_starts);
        if (shown && f.as_ref().is_some_and(claim)) || Instant::now() > deadline {
            break (screen, f);
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    println!("----- step {i}: \"{caption_starts} ...\": {what}\n{screen}\n  figures: {f:?}\n");
    assert!(
        screen.contains(caption_starts),
        "step {i}: caption not shown:\n{screen}"
    );
    let f = f.unwrap_or_else(|| panic!("step {i}: figures not on screen:\n{screen}"));
    assert!(
        claim(&f),
        "step {i}: the caption says {what}, the screen shows {f:?}:\n{screen}"
    );
    // Connection errors are one column of timeseries.csv: never more than the attempts in a
    // steady step. (After a burst's peak the timeouts of its attempts land a T later, when
    // fewer start: there the CSV has more errors than attempts too.)
    if i != 6 {
        assert!(
            f.conn_err <= f.connections * 1.05 + 1.0,
            "step {i}: more errors than attempts on screen: {f:?}"
        );
    }
    // Held long enough for its stretch to be summarised (and measured in the run folder).
    let hold = Duration::from_secs(hold);
    if pressed.elapsed() < hold {
        std::thread::sleep(hold - pressed.elapsed());
    }
    f
}

fn lesson(r: Runner, w: u16, h: u16) {
    let sc = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lesson-overload.toml");
    let s = Session::start_sized(
        &session_name("lesson"),
        &r.command(&sc.display().to_string()),
        w,
        h,
    );
    println!("===== lesson-overload at {w}x{h} as {} =====", r.who);
    // The first step plays at the start: up once its figures cover a whole second.
    let up = wait_for(
        &s.0,
        &|x| x.contains("t 0m03s") || x.contains("t 0m04s") || x.contains("t 0m05s"),
        40,
    );
    assert!(up.contains("step 1/8"), "the lesson did not come up:\n{up}");
    step(
        &s,
        (1, 8),
        "400 requests/s against a server",
        20,
        "responses follow the offered rate, the accept queue is empty",
        &served_in_full(400.0),
    );
    step(
        &s,
        (2, 8),
        "700/s: still below capacity",
        20,
        "responses follow 700/s, every SYN answered (no overflows)",
        &served_in_full(700.0),
    );
    let f3 = step(
        &s,
        (3, 4),
        "1,500/s: past capacity",
        20,
        "responses stop near capacity, the accept queue at its limit (128), listen overflows",
        &|f| {
            near(f.connections, 1500.0, 0.15)
                && f.responses < 0.9 * f.connections
                && f.queue >= f.limit - 1.0
                && f.limit >= 128.0
                && f.overflows > 0.0
        },
    );
    let cap = f3.responses;
    step(
        &s,
        (4, 4),
        "4,000/s: four times capacity",
        20,
        "throughput does not grow, the extra attempts time out",
        &|f| {
            near(f.connections, 4000.0, 0.15)
                && f.responses <= 1.25 * cap
                && f.conn_err >= 0.7 * (f.connections - f.responses)
        },
    );
    step(
        &s,
        (5, 4),
        "Back to 600/s",
        20,
        "the queue drains and responses follow 600/s",
        &served_in_full(600.0),
    );
    step(
        &s,
        (6, 11),
        "Bursts: same 600/s on average",
        30,
        "during a peak (5x) the queue fills and SYNs drop",
        &|f| f.connections > 1200.0 && f.overflows > 0.0 && f.responses < f.connections,
    );
    step(
        &s,
        (7, 4),
        "Bursts off",
        25,
        "the same average served in full",
        &served_in_full(600.0),
    );
    if !s.screen().contains("step 8/8") {
        s.keys(&["n"]);
    }
    let end = wait_for(&s.0, &|x| x.contains("End of the lesson"), 10);
    println!("----- step 8: \"End of the lesson ...\": the load stops at the end, p runs it again\n{end}\n");
    assert!(end.contains("End of the lesson"), "{end}");
    // The session's end came 20 s after the last step; `p` then runs the load again.
    let finished = wait_for(&s.0, &|x| x.contains("FINISHED"), 30);
    assert!(
        finished.contains("FINISHED") && finished.contains("p runs it again"),
        "{finished}"
    );
    s.keys(&["p"]);
    let free = wait_for(
        &s.0,
        &|x| {
            x.contains("free play")
                && !x.contains("FINISHED")
                && figures(x).is_some_and(|f| f.connections > 400.0)
        },
        15,
    );
    println!("----- after the end: p\n{free}\n");
    assert!(
        free.contains("free play") && !free.contains("FINISHED"),
        "{free}"
    );
    s.keys(&["+"]);
    let plus = wait_for(&s.0, &|x| x.contains("rate 660 conn/s"), 10);
    assert!(
        plus.contains("rate 660 conn/s"),
        "keys work in free play:\n{plus}"
    );
    let quit = s.quit();
    assert!(quit.contains("SYNLAB-EXIT=0"), "{quit}");

    // The claims that are averages over a stretch, from the run folder: the bursts' stretch
    // served less than it offered; the server's CPU grew from 400/s to 700/s (the server-CPU
    // figure comes on screen with issue 26; here timeseries.csv's server process CPU).
    let dir = r.folder();
    let summary: serde_json::Value = serde_json::from_str(&read(&dir, "summary.json")).unwrap();
    let points = summary["points"].as_array().unwrap();
    let bursts = points
        .iter()
        .find(|p| {
            p["start_s"]
                .as_f64()
                .is_some_and(|t| events_at(&dir, "bursts").is_some_and(|b| (t - b).abs() < 0.5))
        })
        .unwrap_or_else(|| panic!("no stretch for the bursts: {}", read(&dir, "events.csv")));
    let (thr, off) = (
        bursts["throughput_per_s"].as_f64().unwrap(),
        bursts["offered_rate"].as_f64().unwrap(),
    );
    println!("bursts' stretch: {thr:.0} responses/s of {off:.0} offered");
    assert!(thr < 0.97 * off, "the bursts lost nothing: {bursts}");
    let cpu = |from: f64, to: f64| server_cpu(&dir, from, to);
    let (t1, t2, t3) = (
        0.0,
        events_at(&dir, "700/s").expect("step 2 in events.csv"),
        events_at(&dir, "1,500/s").expect("step 3 in events.csv"),
    );
    let ((c1, n1), (c2, n2)) = (cpu(t1 + 2.0, t2), cpu(t2 + 2.0, t3));
    println!(
        "server CPU (timeseries.csv): {c1:.0}% at 400/s ({n1} rows to {t2:.1} s), {c2:.0}% at 700/s ({n2} rows to {t3:.1} s)"
    );
    // "getting busy": it grows (by how much depends on what else runs on the machine's two
    // CPUs; the server's own CPU figure on screen comes with issue 26).
    assert!(
        c2 > c1 + 5.0,
        "the server's CPU did not grow with the rate: {c1} -> {c2}"
    );
    let left = r.left(15);
    assert!(left.is_empty(), "synlab processes left: {left:?}");
}

/// When the caption containing `text` was shown (events.csv).
fn events_at(dir: &Path, text: &str) -> Option<f64> {
    read(dir, "events.csv")
        .lines()
        .find(|l| {
            l.contains(",caption,") && l.contains(text) || l.contains(",mark,") && l.ends_with(text)
        })
        .and_then(|l| l.split(',').next()?.parse().ok())
}

/// The server process's mean CPU % (user + system) over [from, to) s of timeseries.csv, and
/// how many rows it is over.
fn server_cpu(dir: &Path, from: f64, to: f64) -> (f64, usize) {
    let ts = read(dir, "timeseries.csv");
    let mut lines = ts.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|c| *c == n).unwrap();
    let (t, u, sy) = (
        col("t_s"),
        col("server_cpu_user_pct"),
        col("server_cpu_sys_pct"),
    );
    let v: Vec<f64> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[t].parse::<f64>().is_ok_and(|x| x >= from && x < to))
        .filter_map(|r| Some(r[u].parse::<f64>().ok()? + r[sy].parse::<f64>().ok()?))
        .collect();
    (v.iter().sum::<f64>() / v.len() as f64, v.len())
}

#[test]
fn the_lesson_walked_through_step_by_step() {
    as_invoker(|r| lesson(r.niced(), 200, 55));
}

#[test]
fn the_lesson_walked_through_step_by_step_rootless() {
    as_plain_user(|r| lesson(r.niced(), 80, 24));
}
