//! TUI cost: frame render time at 200x60 with all panels and a full 60 s window (goal p99
//! < 5 ms), and the UI thread's CPU at 10 frames/s (goal < 3 % of one core).
//!
//! Run: `cargo bench --bench ui_render` (SYNLAB_BENCH_FRAMES=2000, SYNLAB_BENCH_CPU_SECS=10 to
//! change the sample sizes). Frames go through ratatui's diffing into a crossterm backend
//! writing to a sink, so escape-sequence encoding is measured too; a new sample row arrives
//! every other frame (200 ms sampling at 10 fps) so every frame has changes to draw.

use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use std::time::{Duration, Instant};
use synlab::lab::state::LabState;
use synlab::ui::app::App;
use synlab::ui::fixture::{self, Synth};
use synlab::ui::render;
use synlab::ui::theme::Theme;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time of this thread (user + system).
fn thread_cpu() -> Duration {
    Duration::from_nanos(synlab::sys::server_io::thread_cpu_ns())
}

/// Adds the next 200 ms row, continuing the overload model (every column, 8 cores).
fn advance(st: &mut LabState, model: &Synth) {
    let mut next = st.clone();
    next.store = synlab::metrics::store::Store::new(200_000);
    fixture::fill(
        &mut next,
        &Synth {
            secs: 0.2,
            ..model.clone()
        },
    );
    let t = st.elapsed_s + 0.2;
    if let Some((_, row)) = next.store.last_row() {
        let row: Vec<_> = row.into_iter().map(|(n, v)| (n, Some(v))).collect();
        st.store.push(t, &row);
    }
    st.elapsed_s = t;
}

fn main() {
    let frames = env_or("SYNLAB_BENCH_FRAMES", 2000) as usize;
    let cpu_secs = env_or("SYNLAB_BENCH_CPU_SECS", 10);
    let model = Synth {
        cores: 8,
        offered: |t| 3000.0 + 100.0 * t,
        target: |t| 3000.0 + 100.0 * t,
        ..Synth::default()
    };
    let mut st = fixture::overloaded();
    st.store = synlab::metrics::store::Store::new(200_000);
    for i in 0..10 {
        st.store.event(
            35.0 + i as f64 * 5.0,
            synlab::metrics::store::EventKind::Mark,
            format!("mark {i}"),
        );
    }
    fixture::fill(
        &mut st,
        &Synth {
            secs: 120.0,
            ..model.clone()
        },
    );
    let app = App::new(Theme { color: true }, 60.0);
    let area = Rect::new(0, 0, 200, 60);
    let mut term = Terminal::with_options(
        CrosstermBackend::new(std::io::sink()),
        TerminalOptions {
            viewport: Viewport::Fixed(area),
        },
    )
    .expect("terminal on a sink");

    // 1. Frame time.
    let mut times = Vec::with_capacity(frames);
    for i in 0..frames {
        if i % 2 == 0 {
            advance(&mut st, &model);
        }
        let t0 = Instant::now();
        term.draw(|f| render::draw(f, &app, &st)).unwrap();
        times.push(t0.elapsed());
    }
    times.sort();
    let q = |p: f64| times[((times.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    println!(
        "render 200x60, {} frames, {} rows in store: p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  (goal p99 < 5 ms)",
        frames,
        st.store.len(),
        q(0.5),
        q(0.99),
        q(1.0)
    );

    // 2. UI CPU at 10 fps: draw, then sleep to the next frame, as the main loop does.
    let frame = Duration::from_millis(100);
    let (wall0, cpu0) = (Instant::now(), thread_cpu());
    let mut next = Instant::now();
    let mut n = 0;
    while wall0.elapsed() < Duration::from_secs(cpu_secs) {
        if n % 2 == 0 {
            advance(&mut st, &model);
        }
        term.draw(|f| render::draw(f, &app, &st)).unwrap();
        n += 1;
        next += frame;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let cpu = (thread_cpu() - cpu0).as_secs_f64();
    let wall = wall0.elapsed().as_secs_f64();
    println!(
        "UI thread at 10 fps for {wall:.1} s ({n} frames, incl. store updates): {:.2} % of one core (goal < 3 %)",
        cpu / wall * 100.0
    );
}
