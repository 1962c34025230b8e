//! Full-screen snapshots of the TUI (ratatui TestBackend + insta) at 80x24 and 160x48, driven
//! by fixed lab states and action sequences through a fake lab; no sleeps, no terminal.

use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;
use synlab::lab::state::LabState;
use synlab::ui::app::App;
use synlab::ui::fixture::{self, FakeLab};
use synlab::ui::keymap::{action_for, Action, Key};
use synlab::ui::render;
use synlab::ui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn draw(app: &App, st: &LabState, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render::draw(f, app, st)).unwrap();
    term
}

/// Presses keys on a fake lab through the keymap, as the main loop does.
fn press(app: &mut App, lab: &mut FakeLab, keys: &[Key]) {
    for k in keys {
        let a = action_for(k.event()).unwrap_or_else(|| panic!("{k:?} is not bound"));
        app.apply(lab, a, &|app, st| render::screen_text(app, st, 80, 24));
    }
}

fn colour_app() -> App {
    App::new(Theme { color: true }, 60.0)
}

fn snap(name: &str, app: &App, st: &LabState) {
    for (w, h) in SIZES {
        let term = draw(app, st, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), term.backend());
    }
}

#[test]
fn idle() {
    snap("idle", &colour_app(), &fixture::idle());
}

#[test]
fn under_load() {
    snap("under_load", &colour_app(), &fixture::under_load());
}

#[test]
fn overloaded_queue_full_and_overflows() {
    let st = fixture::overloaded();
    for (w, h) in SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        assert!(text.contains("FULL"), "{text}");
        assert!(text.contains("128/128"), "{text}");
    }
    snap("overloaded", &colour_app(), &st);
}

/// Two paths measured apart: the latency panel lists each one's connect and total
/// percentiles under the totals (100 ms more on the far path), at both sizes.
#[test]
fn per_path_latency() {
    use synlab::model::{col as c, PathName};
    let mut st = fixture::under_load();
    let t = st.store.times().last().copied().unwrap_or(0.0) + 0.5;
    let mut row = Vec::new();
    for (path, added) in [("near", 0.0), ("far", 100.0)] {
        for (col, v) in [
            (c::CONNECT_P50, 0.3),
            (c::CONNECT_P90, 0.8),
            (c::CONNECT_P99, 2.0),
            (c::TOTAL_P50, 1.5),
            (c::TOTAL_P90, 3.0),
            (c::TOTAL_P99, 9.0),
        ] {
            let extra = if col.name().starts_with("total") {
                2.0
            } else {
                1.0
            };
            row.push((col.of_path(PathName::new(path)), Some(v + added * extra)));
        }
    }
    st.store.push(t, &row);
    // The last second per path, as the core keeps it.
    for (path, added) in [("near", 0.0), ("far", 100.0)] {
        st.live.paths.push((
            path.to_string(),
            synlab::lab::state::LiveLatency {
                window_s: 1.0,
                connect: Some([0.3 + added, 0.8 + added, 2.0 + added]),
                total: Some([1.5 + 2.0 * added, 3.0 + 2.0 * added, 9.0 + 2.0 * added]),
                connects: 1000,
                responses: 1000,
                ..Default::default()
            },
        ));
    }
    let small = render::screen_text(&colour_app(), &st, 80, 24);
    assert!(small.contains("+2 path(s) (enlarge to see)"), "{small}");
    let large = render::screen_text(&colour_app(), &st, 160, 48);
    let line = |label: &str| row_of(&large, label);
    assert!(
        line("far conn").contains("100ms   101ms   102ms"),
        "{large}"
    );
    assert!(
        line("far total").contains("202ms   203ms   209ms"),
        "{large}"
    );
    assert!(
        line("near total").contains("1.5ms   3.0ms   9.0ms"),
        "{large}"
    );
    snap("per_path_latency", &colour_app(), &st);
}

/// The screen's line that holds `label` (the test fails showing the screen when none does).
fn row_of(screen: &str, label: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("no `{label}` row:\n{screen}"))
        .to_string()
}

/// A mix of classes: the latency panel lists each class's response time under the totals,
/// and says how many classes it could not show at 80x24.
#[test]
fn per_class_latency() {
    let mut st = fixture::under_load();
    // The last second per class, as the core keeps it.
    for (class, p50) in [
        ("class0", 1.0),
        ("class1", 2.0),
        ("class2", 5.0),
        ("class3", 40.0),
    ] {
        st.live.classes.push((
            class.to_string(),
            synlab::lab::state::LiveLatency {
                window_s: 1.0,
                total: Some([p50, 2.0 * p50, 3.0 * p50]),
                responses: 250,
                ..Default::default()
            },
        ));
    }
    let large = render::screen_text(&colour_app(), &st, 160, 48);
    let line = |label: &str| row_of(&large, label);
    assert!(
        line("class3 total").contains("40.0ms  80.0ms   120ms"),
        "{large}"
    );
    assert!(
        line("class0 total").contains("1.0ms   2.0ms   3.0ms"),
        "{large}"
    );
    let small = render::screen_text(&colour_app(), &st, 80, 24);
    assert!(small.contains("class(s) (enlarge to see)"), "{small}");
}

#[test]
fn help_overlay() {
    let mut app = colour_app();
    let mut lab = FakeLab::new(fixture::under_load());
    press(&mut app, &mut lab, &[Key::Char('?')]);
    assert!(app.show_help);
    snap("help", &app, &lab.state);
}

#[test]
fn client_bound_warning() {
    let st = fixture::client_bound();
    for (w, h) in SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        assert!(text.contains("⚠ CLIENT-BOUND"), "{text}");
    }
    snap("client_bound", &colour_app(), &st);
}

/// After a sequence of actions: the rate raised three times and the far path's RTT raised.
#[test]
fn after_actions() {
    let mut app = colour_app();
    let mut lab = FakeLab::new(fixture::under_load());
    press(
        &mut app,
        &mut lab,
        &[
            Key::Char('+'),
            Key::Char('+'),
            Key::Char('*'),
            Key::Tab,
            Key::Char('R'),
            Key::Char('m'),
        ],
    );
    assert_eq!(lab.state.knobs.rate, Some(4840.0));
    assert_eq!(
        lab.state.knobs.paths[1].rtt,
        synlab::model::units::Dur(std::time::Duration::from_millis(110))
    );
    snap("after_actions", &app, &lab.state);
}

#[test]
fn no_color_sets_no_colour_anywhere() {
    let app = App::new(Theme { color: false }, 60.0);
    let st = fixture::overloaded();
    for (w, h) in SIZES {
        let term = draw(&app, &st, w, h);
        let buf = term.backend().buffer();
        for cell in buf.content() {
            assert_eq!(
                (cell.fg, cell.bg),
                (Color::Reset, Color::Reset),
                "coloured cell {:?} with NO_COLOR",
                cell.symbol()
            );
        }
    }
    snap("no_color", &app, &st);
    // And the colour mode does use colour (so the check above means something).
    let term = draw(&colour_app(), &st, 80, 24);
    assert!(term
        .backend()
        .buffer()
        .content()
        .iter()
        .any(|c| c.fg != Color::Reset));
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    let st = fixture::overloaded();
    let mut app = colour_app();
    for (w, h) in [
        (1, 1),
        (9, 2),
        (20, 5),
        (40, 10),
        (80, 12),
        (300, 100),
        (120, 30),
    ] {
        draw(&app, &st, w, h);
        app.show_help = !app.show_help;
        draw(&app, &st, w, h);
    }
    let _ = Action::Quit;
}

/// A keep-alive pool (open mode with `connections`): the status line says the rate is
/// requests/s over the pool, and the rates panel shows requests/s apart from connections/s.
#[test]
fn keepalive_pool_rates() {
    use synlab::model::col as c;
    let mut st = fixture::under_load();
    let t0 = st.store.times().last().copied().unwrap_or(0.0);
    for i in 1..=50 {
        let t = t0 + i as f64 * 0.2;
        st.store.push(
            t,
            &[
                (c::TARGET_RATE, Some(20_000.0)),
                (c::ATTEMPTS, Some(0.0)),
                (c::ESTABLISHED, Some(0.0)),
                (c::REQUESTS, Some(20_000.0)),
                (c::RESPONSES, Some(20_000.0)),
                (c::CONNECTION_ERRORS, Some(0.0)),
                (c::REQUEST_ERRORS, Some(0.0)),
                (c::POOL_CONNECTIONS, Some(64.0)),
            ],
        );
        st.elapsed_s = t;
    }
    st.knobs.rate = Some(20_000.0);
    for (w, h) in SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        assert!(text.contains("rate 20000 req/s over 64 conns"), "{text}");
        assert!(
            text.contains("req 20k") || text.contains("requests 20k"),
            "{text}"
        );
        assert!(
            text.contains("conn 0") || text.contains("connections 0"),
            "{text}"
        );
    }
    snap("keepalive_pool", &colour_app(), &st);
}

/// Over TLS (issue 30): the status line says what the clients speak and the resumed share, the
/// rates panel shows handshakes/s full and resumed, the latency panel the handshake's own
/// percentiles; `U` and `u` move the resumed share by 10 points, within 0-100 %.
#[test]
fn tls_handshakes_and_the_resumed_share_key() {
    use synlab::model::col as c;
    let mut st = fixture::under_load();
    st.knobs.resumed = Some(0.5);
    st.tls = "TLS 1.3 X25519, tickets".into();
    // The fixture's last row goes on, with the handshakes beside it.
    let (t0, last) = st.store.last_row().expect("a row");
    for i in 1..=50 {
        let t = t0 + i as f64 * 0.2;
        let mut row: Vec<_> = last.iter().map(|&(k, v)| (k, Some(v))).collect();
        row.extend([
            (c::HANDSHAKES, Some(900.0)),
            (c::FULL_HANDSHAKES, Some(450.0)),
            (c::RESUMED_HANDSHAKES, Some(450.0)),
            (c::HANDSHAKE_ERRORS, Some(0.0)),
            (c::HANDSHAKE_P50, Some(0.31)),
            (c::HANDSHAKE_P90, Some(0.52)),
            (c::HANDSHAKE_P99, Some(1.8)),
        ]);
        st.store.push(t, &row);
        st.elapsed_s = t;
    }
    // The latency table is the last second's, as the core keeps it.
    st.live.all.handshake = Some([0.31, 0.52, 1.8]);
    for (w, h) in SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        assert!(
            text.contains("tls TLS 1.3 X25519, tickets resumed 50%"),
            "{text}"
        );
        assert!(text.contains("tls hs"), "{text}");
        assert!(text.contains("1.8ms"), "handshake p99: {text}");
        assert!(
            text.contains("hs full 450") || text.contains("full 450"),
            "{text}"
        );
    }
    snap("tls", &colour_app(), &st);
    let mut app = colour_app();
    let mut lab = FakeLab::new(st);
    press(&mut app, &mut lab, &[Key::Char('U'), Key::Char('U')]);
    assert_eq!(lab.state.knobs.resumed, Some(0.7));
    press(&mut app, &mut lab, &[Key::Char('U'); 5]);
    assert_eq!(lab.state.knobs.resumed, Some(1.0), "stops at 100 %");
    press(&mut app, &mut lab, &[Key::Char('u')]);
    let text = render::screen_text(&app, &lab.state, 160, 48);
    assert!(text.contains("resumed 90%"), "{text}");
    assert!(text.contains("resumed handshakes 90%"), "the reply: {text}");
    // Without TLS the key says why it does nothing.
    let mut lab = FakeLab::new(fixture::under_load());
    press(&mut app, &mut lab, &[Key::Char('U')]);
    let text = render::screen_text(&app, &lab.state, 160, 48);
    assert!(text.contains("does not speak TLS"), "{text}");
}

/// issue 28, item 10: at 60x20 the latency and CPU panels fold into a line that says how to
/// see them; three warnings at 80x24 take two lines (the rest counted), each broken at spaces,
/// never mid-word, and the rates chart keeps its 0.
#[test]
fn small_screens_fold_with_a_hint_and_wrap_warnings_at_words() {
    use synlab::lab::client_agg::ClientBound;
    use synlab::lab::state::Warning;
    let mut st = fixture::overloaded();
    st.warnings = vec![
        Warning::ClientBound(vec![ClientBound::Shortfall {
            started: 53.0,
            unit: "attempts",
            done: 53,
            intended: 100.0,
        }]),
        Warning::OutOfFds,
        Warning::RouterBehind,
    ];
    let app = colour_app();
    let small = render::screen_text(&app, &st, 60, 20);
    assert!(small.contains("· more: enlarge"), "{small}");
    assert!(small.contains("total p50 1.8ms p99 1012ms"), "{small}");
    let mid = render::screen_text(&app, &st, 80, 24);
    assert!(mid.contains("⚠ +2 more warning(s): see run.log"), "{mid}");
    // Every word on a warning line is a whole word of a warning (or of the "+N more" line).
    let words: Vec<String> = st
        .warnings
        .iter()
        .map(|w| w.to_string())
        .chain(["+2 more warning(s): see run.log (run.log)".to_string()])
        .flat_map(|t| t.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    for screen in [&small, &mid] {
        for l in screen.lines().filter(|l| l.starts_with("⚠ ")) {
            for word in l.trim_start_matches("⚠ ").split_whitespace() {
                assert!(
                    word == "…" || words.iter().any(|w| w == word),
                    "`{word}` cut mid-word in `{l}`"
                );
            }
        }
    }
    // The rates chart still has its 0 label.
    assert!(mid.lines().any(|l| l.starts_with("│0  │")), "{mid}");
    for (w, h) in [(60, 20), (80, 24)] {
        let term = draw(&app, &st, w, h);
        insta::assert_snapshot!(format!("small_warnings_{w}x{h}"), term.backend());
    }
}

/// issue 28, item 2: the errors on screen are one column each, as in timeseries.csv: at four
/// times capacity (the lesson's step 4: 4.3k attempts/s, 955 established, the rest timing
/// out) connection errors read 3.3k, never more than the attempts, and nothing adds the
/// timeouts to them a second time.
#[test]
fn errors_on_screen_never_exceed_attempts_when_the_rows_do_not() {
    use synlab::model::col as c;
    let mut st = fixture::under_load();
    let t0 = st.store.times().last().copied().unwrap_or(0.0);
    for i in 1..=25 {
        let t = t0 + i as f64 * 0.2;
        let wob = 1.0 + 0.05 * (i as f64).sin();
        let attempts = 4300.0 * wob;
        let timeouts = (attempts - 955.0) * 0.99;
        st.store.push(
            t,
            &[
                (c::TARGET_RATE, Some(4000.0)),
                (c::ATTEMPTS, Some(attempts)),
                (c::ESTABLISHED, Some(955.0)),
                (c::RESPONSES, Some(955.0)),
                (c::REQUESTS, Some(955.0)),
                (c::CONNECT_TIMEOUTS, Some(timeouts)),
                (c::ERRORS, Some(timeouts)),
                (c::CONNECTION_ERRORS, Some(timeouts)),
                (c::REQUEST_ERRORS, Some(0.0)),
            ],
        );
        st.elapsed_s = t;
    }
    for (w, h) in [(80, 24), (200, 55)] {
        let text = render::screen_text(&colour_app(), &st, w, h);
        let fig = |labels: &[&str]| -> f64 {
            labels
                .iter()
                .find_map(|l| {
                    let i = text.find(&format!("{l} "))?;
                    let tok: String = text[i + l.len() + 1..]
                        .chars()
                        .take_while(|c| !c.is_whitespace())
                        .collect();
                    let (n, m) = match tok.strip_suffix('k') {
                        Some(n) => (n, 1e3),
                        None => (tok.as_str(), 1.0),
                    };
                    n.parse::<f64>().ok().map(|v| v * m)
                })
                .unwrap_or_else(|| panic!("{labels:?} not on screen:\n{text}"))
        };
        let (errs, attempts) = (fig(&["conn err", "cerr"]), fig(&["connections", "conn"]));
        assert!(
            errs <= attempts,
            "{errs} errors > {attempts} attempts:\n{text}"
        );
        assert!((3000.0..=3500.0).contains(&errs), "{errs}:\n{text}");
        assert!(!text.contains("err+timeout"), "{text}");
    }
}

/// issue 28, item 7: the schedule's line says what it is by mode: a target (open), the least a
/// flat-out S-Client offers (D/T, if every connect timed out), none in a closed loop (no
/// `target 0`); the queue one past its limit says why.
#[test]
fn the_schedules_line_is_labelled_by_mode_and_a_full_queue_says_so() {
    use synlab::load::protocol::Mode;
    let label_of = |mode: Mode, rate: Option<f64>| {
        let mut st = fixture::overloaded();
        st.knobs.mode = mode;
        st.knobs.rate = rate;
        render::screen_text(&colour_app(), &st, 160, 48)
    };
    let open = label_of(Mode::Open, Some(1000.0));
    assert!(open.contains("━target 12k"), "{open}");
    let flat = label_of(Mode::Sclient, None);
    assert!(
        flat.contains("━D/T min 12k") && !flat.contains("━target"),
        "{flat}"
    );
    let closed = label_of(Mode::Closed, None);
    assert!(
        !closed.contains("━target") && !closed.contains("D/T min"),
        "{closed}"
    );
    assert!(closed.contains("rate n/a (closed loop)"), "{closed}");
    // A queue one past its backlog.
    let mut st = fixture::overloaded();
    let t0 = st.store.times().last().copied().unwrap();
    for i in 1..=6 {
        let t = t0 + 0.2 * i as f64;
        st.store.push(
            t,
            &[
                (synlab::model::col::ACCEPT_QUEUE, Some(129.0)),
                (synlab::model::col::ACCEPT_QUEUE_LIMIT, Some(128.0)),
            ],
        );
        st.elapsed_s = t;
    }
    let text = render::screen_text(&colour_app(), &st, 160, 48);
    assert!(text.contains("queue 129/128 full (limit+1)"), "{text}");
}

/// The caption-led layout's sizes: a laptop's terminal and a classroom's.
const LESSON_SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

/// issue 45 item 4: the caption leads the screen: under the status line, above the warnings,
/// bold black on yellow across the width, wrapped at words; the steady conditions (no pcap,
/// the delay router late) are one plain `note:` line, not an alarm; at 80x24 a three-line
/// caption and the accept-queue chart both stay (the latency and CPU panels fold into a line).
#[test]
fn a_lesson_leads_with_its_caption_and_keeps_the_queue_chart() {
    let st = fixture::lesson();
    let app = colour_app();
    for (w, h) in LESSON_SIZES {
        let term = draw(&app, &st, w, h);
        let buf = term.backend().buffer();
        let text = render::screen_text(&app, &st, w, h);
        let rows: Vec<&str> = text.lines().collect();
        let caption: Vec<usize> = (0..h)
            .filter(|&y| buf[(0, y)].bg == Color::LightYellow)
            .map(usize::from)
            .collect();
        assert!(
            rows[caption[0]].starts_with("▶ 50 ms round trip"),
            "{w}x{h}:\n{text}"
        );
        let words: String = caption
            .iter()
            .map(|&y| rows[y].trim_start_matches("▶ "))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            words.split_whitespace().collect::<Vec<_>>(),
            st.caption
                .as_deref()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            "the whole caption, wrapped at words: {w}x{h}:\n{text}"
        );
        for &y in &caption {
            let y = y as u16;
            let (first, last) = (&buf[(0, y)], &buf[(w - 1, y)]);
            assert!(
                first.modifier.contains(ratatui::style::Modifier::BOLD)
                    && first.fg == Color::Black
                    && last.bg == Color::LightYellow,
                "{w}x{h}: caption row {y} is not a bold band"
            );
        }
        // The notes: one plain line below the caption, never white on red.
        let note = rows
            .iter()
            .position(|l| l.starts_with("note: no pcap: SYN/s estimated · delay router late"))
            .unwrap_or_else(|| panic!("{w}x{h}: no note line:\n{text}"));
        assert!(note > *caption.last().unwrap(), "{text}");
        assert_eq!(buf[(0, note as u16)].bg, Color::Reset);
        assert!(!buf[(0, note as u16)]
            .modifier
            .contains(ratatui::style::Modifier::BOLD));
        assert!(!text.contains('⚠'), "no alarm here: {text}");
        // The accept-queue chart is drawn: its x axis ends in "now" beside the rates chart's.
        let axis = rows
            .iter()
            .find(|l| l.matches("now").count() >= 2)
            .unwrap_or_else(|| {
                panic!("{w}x{h}: the rates and queue charts are not both drawn:\n{text}")
            });
        assert!(axis.contains("-60s"), "{axis}");
        // TCP states name the connections the caption points at.
        assert!(
            text.contains("held ") && text.contains("TIME_WAIT"),
            "{text}"
        );
        if h >= 40 {
            assert!(
                text.contains("FIN_WAIT") && text.contains("CLOSE_WAIT"),
                "{text}"
            );
        }
        insta::assert_snapshot!(format!("lesson_{w}x{h}"), term.backend());
    }
}

/// issue 42 item 7: the delay router's lateness is over the shaped traffic: not shown while
/// the load is paused, back when it resumes.
#[test]
fn the_router_late_note_rests_while_the_load_is_paused() {
    let mut st = fixture::lesson();
    let shown = render::screen_text(&colour_app(), &st, 120, 40);
    assert!(shown.contains("delay router late"), "{shown}");
    st.knobs.paused = true;
    let paused = render::screen_text(&colour_app(), &st, 120, 40);
    assert!(
        !paused.contains("delay router late") && paused.contains("note: no pcap"),
        "{paused}"
    );
}

/// issue 42 item 7: the CPU panel's processes line wraps between figures at 120 columns,
/// never inside one, and says why the server's is missing.
#[test]
fn the_cpu_panel_wraps_its_processes_and_says_why_one_is_missing() {
    let mut st = fixture::under_load();
    let text = render::screen_text(&colour_app(), &st, 120, 40);
    assert!(text.contains("procs: server "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("load ") && l.contains("(workers ") && l.contains("%)")),
        "the load's figure whole on one line:\n{text}"
    );
    // Never measured: the probe had no server pid.
    let t = st.store.times().last().copied().unwrap() + 0.2;
    let mut fresh = synlab::metrics::store::Store::new(1000);
    fresh.push(t, &[(synlab::model::col::LOAD_CPU, Some(20.0))]);
    st.store = fresh;
    let text = render::screen_text(&colour_app(), &st, 120, 40);
    assert!(text.contains("procs: server n/a (no pid)"), "{text}");
    assert!(!text.contains("n/a%"), "{text}");
}

/// issue 45: the help lists the keys that act on this run: the TLS share's only over TLS;
/// the bandwidth keys say they step the 1-2-5 ladder.
#[test]
fn help_hides_the_tls_keys_without_tls() {
    let mut app = colour_app();
    app.show_help = true;
    let plain = fixture::under_load();
    let text = render::screen_text(&app, &plain, 160, 48);
    assert!(!text.contains("resumed handshakes"), "{text}");
    assert!(text.contains("bandwidth up (1-2-5 steps)"), "{text}");
    let mut tls = fixture::under_load();
    tls.knobs.resumed = Some(0.5);
    let text = render::screen_text(&app, &tls, 160, 48);
    assert!(text.contains("TLS: resumed handshakes +10%"), "{text}");
}

/// The caption band's top rows: status, caption, checks, busy banner, notes.
fn top(st: &LabState, rows: usize) -> String {
    render::screen_text(&colour_app(), st, 120, 40)
        .lines()
        .take(rows)
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// issue 45 item 1: a step's checks show under its caption, in the same band: one held, one
/// not yet with the figure's value and the bound's; a figure never measured says so.
#[test]
fn a_lessons_checks_show_held_or_not_yet_under_its_caption() {
    let mut st = fixture::lesson();
    st.expect = [
        "held >= 40",
        "accept_queue >= 0.9 * accept_queue_limit",
        "tls_handshake_p99_ms < 50",
    ]
    .iter()
    .map(|t| synlab::model::expect::Expect::parse(t).unwrap())
    .collect();
    let text = top(&st, 8);
    assert!(text.contains("✓ held: held >= 40"), "{text}");
    assert!(
        text.contains(
            "… not yet: accept_queue = 8, wants accept_queue >= 0.9 * accept_queue_limit (115)"
        ),
        "{text}"
    );
    assert!(
        text.contains("… not measured: tls_handshake_p99_ms < 50"),
        "{text}"
    );
    assert!(!text.contains("machine is busy"), "{text}");
    // The checks are in the caption's band.
    let term = draw(&colour_app(), &st, 120, 40);
    let y = text.lines().position(|l| l.contains("✓ held")).unwrap() as u16;
    assert_eq!(term.backend().buffer()[(0, y)].bg, Color::LightYellow);
    insta::assert_snapshot!("lesson_checks_120x40", text);
}

/// issue 45 item 1: other work on the server's CPU above the share puts the banner under the
/// caption: the step's figures are not the server's alone.
#[test]
fn other_work_on_the_servers_cpu_says_the_machine_is_busy() {
    use synlab::model::col;
    let mut st = fixture::lesson();
    assert!(!top(&st, 8).contains("machine is busy"));
    // The server's one CPU 95 % busy while the server used 45 % of it: others took 50 %.
    let t = *st.store.times().last().unwrap();
    for i in 1..=5 {
        st.store.push(
            t + 0.2 * f64::from(i),
            &[
                (col::SERVER_CORES_USER, Some(85.0)),
                (col::SERVER_CORES_SYSTEM, Some(10.0)),
                (col::SERVER_CORES_IDLE, Some(5.0)),
                (col::SERVER_CPU_USER_PCT, Some(40.0)),
                (col::SERVER_CPU_SYS_PCT, Some(5.0)),
            ],
        );
    }
    let text = top(&st, 9);
    assert!(
        text.contains("⚠ the machine is busy: other work took 50 % of the server's CPUs and left none idle: figures not the server's alone"),
        "{text}"
    );
    insta::assert_snapshot!("lesson_busy_120x40", text);
}

/// issue 47: a server port with UDP sockets (a QUIC server) gets the UDP panel: Initials in,
/// the port's drops (the title says it drops), the receive queue against its buffer, and
/// rmem_max; at 80x24 it takes the accept queue's place, at 160x48 the TCP states'.
#[test]
fn a_quic_server_shows_the_udp_panel() {
    use synlab::model::col as c;
    let mut st = fixture::under_load();
    let (t0, last) = st.store.last_row().expect("a row");
    for i in 1..=50 {
        let t = t0 + i as f64 * 0.2;
        let mut row: Vec<_> = last.iter().map(|&(k, v)| (k, Some(v))).collect();
        row.extend([
            (c::QUIC_INITIAL_IN_PER_S, Some(1200.0)),
            (c::QUIC_FIRST_INITIAL_PER_S, Some(1000.0)),
            (c::PORT_UDP_DROPS_PER_S, Some(300.0)),
            (c::UDP_RCVBUF_ERRORS_PER_S, Some(300.0)),
            (c::UDP_RCV_QUEUE, Some(66000.0)),
            (c::UDP_RCVBUF, Some(65536.0)),
            (c::RMEM_MAX, Some(4194304.0)),
        ]);
        st.store.push(t, &row);
        st.elapsed_s = t;
    }
    for (w, h) in SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        assert!(text.contains("UDP (QUIC)  DROPPING"), "{w}x{h}: {text}");
        assert!(text.contains("Initials/s 1.2k"), "{w}x{h}: {text}");
        assert!(text.contains("66000/65536 B full"), "{w}x{h}: {text}");
    }
    // A TCP-only server's screens keep their panels.
    let plain = render::screen_text(&colour_app(), &fixture::under_load(), 160, 48);
    assert!(!plain.contains("UDP (QUIC)"), "{plain}");
    snap("quic_udp", &colour_app(), &st);
}

/// The drops view (`y`, issue 48): an overload with SYN cookies on, as root: the reasons by
/// their rates, the largest first, cookies said as such, the kernel's own reasons with the
/// overflow cross-check; as a plain user, which view it gets and why not.
#[test]
fn the_drops_view_names_the_reasons_largest_first_and_the_kernels_own() {
    use synlab::model::col as c;
    use synlab::model::kreasons::{
        KernelReasons, KernelView, NotCounted, OverflowCheck, ReasonCount,
    };
    let mut st = fixture::overloaded();
    let t = st.elapsed_s + 0.2;
    st.store.push(
        t,
        &[
            (c::LISTEN_OVERFLOWS, Some(700.0)),
            (c::REQQ_FULL_COOKIES_PER_S, Some(20000.0)),
            (c::SYNCOOKIES_SENT_PER_S, Some(20000.0)),
            (c::SYNCOOKIES_RECV_PER_S, Some(19000.0)),
            (c::BACKLOG_DROPS_PER_S, Some(0.0)),
        ],
    );
    st.elapsed_s = t;
    st.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::counted(
            vec![
                ReasonCount {
                    name: "TCP_LISTEN_OVERFLOW".into(),
                    count: 400,
                },
                ReasonCount {
                    name: "NO_SOCKET".into(),
                    count: 12,
                },
            ],
            430,
            60.0,
        ),
        overflow: Some(OverflowCheck {
            counter: 42000,
            kernel: 400,
        }),
    });
    let mut app = colour_app();
    let mut lab = FakeLab::new(st);
    press(&mut app, &mut lab, &[Key::Char('y')]);
    assert!(app.show_drops);
    let text = render::screen_text(&app, &lab.state, 160, 48);
    let row = |s: &str| text.lines().position(|l| l.contains(s)).expect(s);
    assert!(row("SYN cookies sent") < row("accept queue full"), "{text}");
    assert!(text.contains("20k sent/s, 19k validated/s"), "{text}");
    assert!(text.contains("machine-wide"), "{text}");
    assert!(text.contains("400 final ACKs + 41600 SYNs"), "{text}");
    assert!(!text.contains("socket backlog full"), "{text}");
    snap("drops_view", &app, &lab.state);

    lab.state.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::NotCounted(NotCounted::NotRoot),
        overflow: None,
    });
    let text = render::screen_text(&app, &lab.state, 160, 48);
    assert!(text.contains("plain user"), "{text}");
    assert!(text.contains("accept queue full"), "{text}");
    press(&mut app, &mut lab, &[Key::Char('y')]);
    assert!(!app.show_drops);
}

/// The sizes a new user's HTTP/3 walk drew at: a laptop's terminal and a big one.
const QUIC_SIZES: [(u16, u16); 2] = [(80, 24), (200, 55)];

/// A Retry flood over HTTP/3: the UDP panel in the accept queue's place says the Retries per
/// second (the server's count and, on a wide panel, the clients'); no panel claims HTTP/2 or
/// shows the TCP figures (accept queue, TCP queues, overflows, TCP states) as the story.
#[test]
fn over_http3_the_udp_panel_takes_the_accept_queues_place_with_retries() {
    use synlab::model::col as c;
    use synlab::ui::render::common::num;
    let st = fixture::quic_retry_flood();
    let fig = |col| num(st.store.headline(col).expect("measured"));
    let (sent, recv) = (fig(c::SERVER_QUIC_RETRIES), fig(c::QUIC_RETRY));
    for (w, h) in QUIC_SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        assert!(text.contains("UDP (QUIC)  DROPPING"), "{w}x{h}:\n{text}");
        // The server's count of the Retries it sent, and on a wide panel the clients' too.
        let retry = if w >= 200 {
            format!("Retry/s sent {sent} recv {recv}")
        } else {
            format!("Retry/s {sent}")
        };
        assert!(text.contains(&retry), "{w}x{h}: no `{retry}`:\n{text}");
        for tcp in [
            "HTTP/2",
            "accept queue",
            "recvq",
            "queue 0/128",
            "overflows/s",
            "TIME_WAIT",
            "TCP states",
        ] {
            assert!(!text.contains(tcp), "{w}x{h}: `{tcp}` shown:\n{text}");
        }
        // The UDP panel sits beside the rates chart, in the accept queue's place.
        let top = row_of(&text, "offered vs achieved");
        assert!(top.contains("UDP (QUIC)"), "{w}x{h}:\n{text}");
        let term = draw(&colour_app(), &st, w, h);
        insta::assert_snapshot!(format!("quic_retry_flood_{w}x{h}"), term.backend());
    }
    // A TCP load's screens have no Retry figure (never measured).
    let plain = render::screen_text(&colour_app(), &fixture::under_load(), 200, 55);
    assert!(!plain.contains("Retry/s"), "{plain}");
}

/// The help over HTTP/3: the streams keys are listed and labelled for HTTP/2 and HTTP/3, and
/// every help line ends a gap before the next column's key.
#[test]
fn the_help_over_http3_labels_the_streams_keys_for_both_and_keeps_its_gaps() {
    let mut app = colour_app();
    let mut lab = FakeLab::new(fixture::quic_retry_flood());
    press(&mut app, &mut lab, &[Key::Char('?')]);
    for (w, h) in QUIC_SIZES {
        let text = render::screen_text(&app, &lab.state, w, h);
        for line in [
            "e      HTTP/2, 3: streams per conn /2  ",
            "E      HTTP/2, 3: streams per conn x2  ",
            "k      keep-alive: requests per conn /10  ",
            "K      keep-alive: requests per conn x10  ",
            "D      D (or clients) x2  ",
        ] {
            assert!(text.contains(line), "{w}x{h}: no `{line}`:\n{text}");
        }
        assert!(!text.contains("HTTP/2: streams"), "{w}x{h}:\n{text}");
        let term = draw(&app, &lab.state, w, h);
        insta::assert_snapshot!(format!("help_http3_{w}x{h}"), term.backend());
    }
}

/// Over HTTP/3 the rates panel shows the first Initials where a TCP load shows its SYNs,
/// labelled as such (the server's first packets are QUIC Initials: no SYN to count).
#[test]
fn over_http3_the_rates_panel_shows_the_first_initials_in_the_syns_place() {
    use synlab::model::col as c;
    use synlab::ui::render::common::num;
    let st = fixture::quic_retry_flood();
    let first = num(st
        .store
        .headline(c::QUIC_FIRST_INITIAL_PER_S)
        .expect("measured"));
    for (w, h) in QUIC_SIZES {
        let text = render::screen_text(&colour_app(), &st, w, h);
        let label = if w >= 200 {
            "first Initials"
        } else {
            "1st Init"
        };
        let rates: Vec<String> = text
            .lines()
            .map(|l| l.split("││").next().unwrap_or(l).to_string())
            .collect();
        let rates = rates.join("\n");
        assert!(
            rates.contains(&format!("{label} {first}")),
            "{w}x{h}: no `{label} {first}`:\n{text}"
        );
        assert!(!rates.contains("SYN"), "{w}x{h}: a SYN figure:\n{text}");
    }
    // A TCP load keeps its SYN column and has no Initials.
    let plain = render::screen_text(&colour_app(), &fixture::under_load(), 200, 55);
    assert!(plain.contains("SYN in"), "{plain}");
    assert!(!plain.contains("Initials"), "{plain}");
}

/// At 80x24 what is cut keeps its important part and says it is cut: a snapshot's file name
/// first and its long folder broken across the message's second line; a message with no
/// room left ends in "…"; the first alarm cut to its line leaves no figure half said
/// ("(348520 of …"); the rates panel's latest event keeps its time first. At 200x55 all whole.
#[test]
fn cut_messages_and_notices_keep_their_important_part_and_end_in_an_ellipsis() {
    use synlab::lab::client_agg::ClientBound;
    use synlab::lab::state::Warning;
    use synlab::metrics::store::EventKind;
    let dir = "/home/student/synlab/results/2025-03-04T10-22-31-quic-handshake-flood-retry";
    let mut st = fixture::quic_retry_flood();
    st.warnings = vec![
        Warning::ClientBound(vec![ClientBound::Shortfall {
            started: 348520.0,
            unit: "attempts",
            done: 348520,
            intended: 1400000.0,
        }]),
        Warning::PortsRunningOut,
    ];
    let event = "rate 4000/s -> 20000/s, every handshake a full one, past the server's capacity";
    st.store.event(66.0, EventKind::Change, event);
    let mut app = colour_app();
    let mut lab = FakeLab::new(st);
    lab.snapshot_dir = dir.into();
    press(&mut app, &mut lab, &[Key::Char('s')]);
    let small = render::screen_text(&app, &lab.state, 80, 24);
    let lines: Vec<&str> = small.lines().collect();
    // The file first; the folder, longer than a line, broken onto the next rather than cut.
    let at = lines
        .iter()
        .position(|l| l.starts_with("» snapshot-1.txt written to"))
        .unwrap_or_else(|| panic!("{small}"));
    let said: String = lines[at..=at + 2]
        .iter()
        .map(|l| l.trim_start_matches("» ").trim())
        .collect();
    assert!(said.contains(dir), "{small}");
    // The first alarm cut at its open parenthesis, so the second keeps its line.
    let warn: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("⚠"))
        .collect();
    assert_eq!(
        warn,
        [
            "⚠ CLIENT-BOUND: 75 % fewer attempts than the schedule intended …",
            "⚠ ephemeral ports exhausted",
        ],
        "{small}"
    );
    // The event's time before its words, which end in "…" at the panel's edge.
    let ev = lines
        .iter()
        .find(|l| l.contains("• @66s rate 4000/s"))
        .unwrap_or_else(|| panic!("{small}"));
    assert!(ev.split("││").next().unwrap().ends_with('…'), "{small}");
    insta::assert_snapshot!(
        "cut_notices_80x24",
        draw(&app, &lab.state, 80, 24).backend()
    );
    let big = render::screen_text(&app, &lab.state, 200, 55);
    assert!(
        big.contains(&format!("» snapshot-1.txt written to {dir}/")),
        "{big}"
    );
    assert!(big.contains("intended (348520 of 1400000)"), "{big}");
    assert!(big.contains(&format!("• @66s {event}")), "{big}");
    assert!(!big.contains('…'), "{big}");
    insta::assert_snapshot!(
        "cut_notices_200x55",
        draw(&app, &lab.state, 200, 55).backend()
    );

    // A lesson's long caption leaves the answer one line: it ends in "…", never reads whole.
    let mut st = fixture::lesson();
    st.caption = Some(["a caption as long as a lesson's longest;"; 21].join(" "));
    let mut lab = FakeLab::new(st);
    let mut app = colour_app();
    for _ in 0..8 {
        press(&mut app, &mut lab, &[Key::Char('X')]);
    }
    for _ in 0..4 {
        press(&mut app, &mut lab, &[Key::Char('F')]);
    }
    let said = synlab::ui::render::caption::message(&app, &lab.state, 80);
    assert!(said.len() >= 2, "{said:?}");
    let small = render::screen_text(&app, &lab.state, 80, 24);
    let answer: Vec<&str> = small.lines().filter(|l| l.starts_with("» ")).collect();
    assert_eq!(answer.len(), 1, "{small}");
    assert!(answer[0].starts_with("» refused: burst ratio"), "{small}");
    assert!(answer[0].ends_with(" …"), "{small}");
    assert!(answer[0].chars().count() <= 80, "{small}");
    insta::assert_snapshot!("cut_answer_80x24", draw(&app, &lab.state, 80, 24).backend());
    let big = render::screen_text(&app, &lab.state, 200, 55);
    assert!(
        big.contains("the peaks alone would exceed the average; lower one"),
        "{big}"
    );
    insta::assert_snapshot!(
        "cut_answer_200x55",
        draw(&app, &lab.state, 200, 55).backend()
    );
}

/// The drops view over HTTP/3 as root: the kernel's reasons without the accept queue's TCP
/// conclusion, and where the UDP drops are instead.
#[test]
fn over_http3_the_drops_view_draws_no_tcp_conclusion() {
    use synlab::model::kreasons::{KernelReasons, KernelView, OverflowCheck, ReasonCount};
    let mut st = fixture::quic_retry_flood();
    st.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::counted(
            vec![ReasonCount {
                name: "SOCKET_RCVBUFF".into(),
                count: 66000,
            }],
            66100,
            60.0,
        ),
        overflow: Some(OverflowCheck {
            counter: 0,
            kernel: 0,
        }),
    });
    let mut app = colour_app();
    let mut lab = FakeLab::new(st);
    press(&mut app, &mut lab, &[Key::Char('y')]);
    for (w, h) in QUIC_SIZES {
        let text = render::screen_text(&app, &lab.state, w, h);
        assert!(text.contains("SOCKET_RCVBUFF"), "{w}x{h}:\n{text}");
        let flat = text.replace('│', " ");
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("the load is QUIC (UDP): no accept queue"),
            "{w}x{h}:\n{text}"
        );
        assert!(flat.contains("in the UDP panel"), "{w}x{h}:\n{text}");
        for tcp in ["ListenOverflows 0", "TCP_LISTEN_OVERFLOW 0", "final ACKs"] {
            assert!(!text.contains(tcp), "{w}x{h}: `{tcp}`:\n{text}");
        }
        let term = draw(&app, &lab.state, w, h);
        insta::assert_snapshot!(format!("drops_http3_{w}x{h}"), term.backend());
    }
    // A TCP load keeps the cross-check.
    lab.state = fixture::overloaded();
    lab.state.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::counted(Vec::new(), 0, 60.0),
        overflow: Some(OverflowCheck {
            counter: 0,
            kernel: 0,
        }),
    });
    let text = render::screen_text(&app, &lab.state, 200, 55);
    assert!(
        text.contains("ListenOverflows 0 = TCP_LISTEN_OVERFLOW 0"),
        "{text}"
    );
}

/// Not the host's root: the drops view says the kernel's reasons need root in plain words
/// (no "turn on with Y", no tracefs error), and `Y` says so without asking the lab.
#[test]
fn as_a_plain_user_the_kernels_reasons_say_they_need_root_without_offering_y() {
    use synlab::model::kreasons::{KernelReasons, KernelView, NotCounted};
    let mut app = colour_app();
    app.host_root = false;
    let mut lab = FakeLab::new(fixture::quic_retry_flood());
    lab.state.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::NotCounted(NotCounted::Off),
        overflow: None,
    });
    press(&mut app, &mut lab, &[Key::Char('y'), Key::Char('Y')]);
    let said = app
        .message_for(lab.state.last_action.as_ref())
        .map(|(t, refused)| (t.to_string(), refused));
    assert_eq!(
        said,
        Some((
            "Y needs root (the kernel's tracepoints): synlab runs as a plain user".into(),
            true
        ))
    );
    // A refusal's raw words (a user namespace's root cannot mount tracefs) are run.log's.
    lab.state.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::NotCounted(NotCounted::Refused(
            "tracefs: mount -t tracefs at /sys/kernel/tracing: EPERM".into(),
        )),
        overflow: None,
    });
    for (w, h) in QUIC_SIZES {
        let text = render::screen_text(&app, &lab.state, w, h);
        let flat = text.replace('│', " ");
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("needs root, the kernel's tracepoints; synlab runs as a plain user"),
            "{w}x{h}:\n{text}"
        );
        for raw in ["turn on with Y", "tracefs", "EPERM"] {
            assert!(!text.contains(raw), "{w}x{h}: `{raw}`:\n{text}");
        }
        let term = draw(&app, &lab.state, w, h);
        insta::assert_snapshot!(format!("drops_plain_user_{w}x{h}"), term.backend());
    }
    // As root the view offers the key, as before.
    app.host_root = true;
    lab.state.kernel_reasons = Some(KernelView {
        reasons: KernelReasons::NotCounted(NotCounted::Off),
        overflow: None,
    });
    let text = render::screen_text(&app, &lab.state, 200, 55);
    assert!(text.contains("turn on with Y"), "{text}");
}

/// The lesson-quic flood step at 80x24 (a new user's report): the caption's four lines, two
/// checks, the busy banner, the answer to `n` and three alarms once left the offered vs
/// achieved panel no chart. The charts keep their rows: the answer gives way, the banner
/// says itself in one line, the alarms take one line with the others counted ("… +2 more
/// (run.log)"); the caption and its checks stay whole. The UDP panel's title is true to
/// both its figures: dropping (at the full buffer, between the samples) beside a queue the
/// samples find a fifth full, said as a sample.
#[test]
fn the_quic_lessons_flood_keeps_its_chart_at_80x24() {
    let mut st = fixture::quic_lesson_flood();
    let caption = st.caption.take().unwrap();
    st.step = Some((2, 4));
    let mut lab = FakeLab::new(st);
    lab.steps.push_back(caption.clone());
    let mut app = colour_app();
    press(&mut app, &mut lab, &[Key::Char('n')]);
    let st = &lab.state;
    let text = render::screen_text(&app, st, 80, 24);
    let rows: Vec<&str> = text.lines().collect();
    // The rates panel's chart: at least three plot rows over its x axis, "now" at its end.
    let left = |l: &str| l.split("││").next().unwrap_or(l).to_string();
    let plot = rows
        .iter()
        .map(|l| left(l))
        .filter(|l| {
            let inner: Vec<char> = l.chars().skip(1).take_while(|&c| c != '│').collect();
            l.starts_with('│')
                && inner.len() < 6
                && l.chars().nth(inner.len() + 1) == Some('│')
                && inner
                    .iter()
                    .all(|c| c.is_ascii_digit() || " .k".contains(*c))
        })
        .count();
    assert!(plot >= 3, "{plot} plot rows:\n{text}");
    assert!(
        rows.iter()
            .any(|l| left(l).contains("-60s") && left(l).contains("now")),
        "{text}"
    );
    // The caption whole, and both checks.
    let words: Vec<&str> = rows
        .iter()
        .skip_while(|l| !l.starts_with("▶ 20,000"))
        .take(4)
        .flat_map(|l| l.trim_start_matches("▶ ").split_whitespace())
        .collect();
    assert_eq!(
        words,
        caption.split_whitespace().collect::<Vec<_>>(),
        "{text}"
    );
    for check in [
        "✓ held: quic_handshakes_full_per_s < 0.9 * target_rate",
        "✓ held: quic_handshake_timeouts_per_s > 0",
    ] {
        assert!(text.contains(check), "{text}");
    }
    // The busy banner in one line, whole in its short words.
    assert!(
        rows.contains(
            &"⚠ busy: others took 86 % of the server's CPUs: figures not the server's alone"
        ),
        "{text}"
    );
    // The first alarm, the others counted on its line.
    let warn: Vec<&&str> = rows.iter().filter(|l| l.starts_with("⚠ CLIENT")).collect();
    assert_eq!(warn.len(), 1, "{text}");
    assert!(
        warn[0].starts_with("⚠ CLIENT-BOUND: 82 % fewer attempts")
            && warn[0].ends_with("… +2 more (run.log)"),
        "{text}"
    );
    // The latency and CPU panels folded into their line.
    assert!(text.contains("total p50 3774ms p99 4243ms"), "{text}");
    // The UDP panel: dropping, its queue a sample; never "buffer full" beside a fifth.
    assert!(text.contains("UDP (QUIC)  DROPPING when full"), "{text}");
    assert!(text.contains("rcv queue 43541/212992 B sampled"), "{text}");
    assert!(!text.contains("buffer full"), "{text}");
    insta::assert_snapshot!("quic_lesson_flood_80x24", draw(&app, st, 80, 24).backend());
    // Large: everything whole, the answer too, and the title says when the buffer was full.
    let big = render::screen_text(&app, st, 160, 48);
    for whole in [
        "» next step: 3 of 4",
        "⚠ the machine is busy: other work took 86 % of the server's CPUs",
        "UDP (QUIC)  DROPPING: buffer full between samples",
        "rcv queue 43541/212992 B sampled",
    ] {
        assert!(big.contains(whole), "no `{whole}`:\n{big}");
    }
    assert!(!big.contains("(run.log)"), "{big}");
    insta::assert_snapshot!(
        "quic_lesson_flood_160x48",
        draw(&app, st, 160, 48).backend()
    );
}
