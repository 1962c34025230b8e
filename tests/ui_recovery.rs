//! issue 45 item 2: recovery after overload on the live screen. When the load drops below
//! capacity after an overload, the server goes on answering its backlog (more than is
//! offered, more than its clients receive). The TUI names that phase under the caption while
//! it lasts, by the rule report.md's Phases use (`model::phase`), not as a fault. Rendered on
//! ratatui's TestBackend with insta snapshots, and no clock.

use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;
use synlab::lab::state::LabState;
use synlab::model::col;
use synlab::ui::app::App;
use synlab::ui::fixture;
use synlab::ui::render;
use synlab::ui::theme::Theme;

fn app() -> App {
    App::new(Theme { color: true }, 60.0)
}

/// Appends rows after the store's last at `interval_s`: each is the last row with the
/// offered rate, the clients' responses and the server's own count set as `f(i)` gives them.
fn extend(st: &mut LabState, n: usize, f: impl Fn(usize) -> (f64, f64, f64)) {
    let (mut t, last) = st.store.last_row().unwrap();
    for i in 0..n {
        t += st.interval_s;
        let (offered, client, server) = f(i);
        let row: Vec<_> = last
            .iter()
            .map(|&(c, v)| {
                let v = match c {
                    col::TARGET_RATE | col::ATTEMPTS | col::SYN_IN => offered,
                    col::RESPONSES | col::REQUESTS | col::ESTABLISHED => client,
                    col::SERVER_RESPONSES => server,
                    col::ACCEPT_QUEUE
                    | col::SYN_RECV
                    | col::LISTEN_OVERFLOWS
                    | col::CONNECT_TIMEOUTS
                    | col::ERRORS
                    | col::CONNECTION_ERRORS
                    | col::REQUEST_ERRORS => 0.0,
                    _ => v,
                };
                (c, Some(v))
            })
            .collect();
        st.store.push(t, &row);
        st.elapsed_s = t;
    }
}

/// lesson-overload's recovery step: 12,000/s against a 5,000/s server until 90 s, then
/// 600/s offered; the clients get 600/s while the server answers its backlog at its
/// capacity for 3 s so far.
fn recovering() -> LabState {
    let mut st = fixture::overloaded();
    st.knobs.rate = Some(600.0);
    st.step = Some((5, 8));
    st.caption = Some(
        "Back to 600/s: the queue drains and responses follow the offered rate again; the \
         server may go on answering its backlog for a while (see the recovery line)."
            .into(),
    );
    st.expect = ["responses_per_s >= 0.9 * target_rate", "accept_queue < 5"]
        .iter()
        .map(|t| synlab::model::expect::Expect::parse(t).unwrap())
        .collect();
    st.last_action = None;
    st.verdicts.clear();
    extend(&mut st, 15, |_| (600.0, 600.0, 4950.0));
    st
}

/// The line naming the recovery, if the screen has one.
fn recovery_line(st: &LabState, w: u16, h: u16) -> Option<String> {
    render::screen_text(&app(), st, w, h)
        .lines()
        .find(|l| l.starts_with("↺ recovery after overload"))
        .map(str::to_string)
}

#[test]
fn the_server_answering_its_backlog_after_overload_is_named_under_the_caption() {
    let st = recovering();
    for (w, h) in [(120, 40), (80, 24)] {
        let text = render::screen_text(&app(), &st, w, h);
        let line = recovery_line(&st, w, h).unwrap_or_else(|| panic!("{w}x{h}:\n{text}"));
        assert!(
            line.contains("since 90 s: the server is answering its backlog"),
            "{line}"
        );
        // Its figures: the server's count, the offered rate, the surplus over 3 s
        // ((~4,950 - 600) x 3 s, as report.md's Phases would sum it), wrapped at words.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(
                "5.0k responses/s against 600 offered, 13k more than its clients received so far"
            ),
            "{text}"
        );
        // Good news, not an alarm: the theme's ok colour, no warning sign.
        let term = {
            let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
            term.draw(|f| render::draw(f, &app(), &st)).unwrap();
            term
        };
        let y = text
            .lines()
            .position(|l| l.starts_with("↺ recovery"))
            .unwrap() as u16;
        let cell = &term.backend().buffer()[(0, y)];
        assert_ne!(cell.bg, Color::Red, "{w}x{h}: recovery styled as an alarm");
        assert!(!line.contains('⚠'));
        // Under the caption's band, and the caption is whole above it.
        let caption = text
            .lines()
            .position(|l| l.starts_with("▶ Back to 600/s"))
            .unwrap();
        assert!(caption < y as usize, "{text}");
        insta::assert_snapshot!(format!("recovery_{w}x{h}"), term.backend());
    }
}

/// The same rule as report.md's: a single late interval is no recovery, nor is a server
/// above its clients without an overload before, and the line goes once the server answers
/// no more than is offered for two intervals.
#[test]
fn a_blip_a_surplus_without_overload_and_the_end_of_the_backlog_are_no_recovery() {
    // One interval above: the server's count landing one sample late.
    let mut st = fixture::overloaded();
    extend(&mut st, 1, |_| (600.0, 600.0, 4950.0));
    extend(&mut st, 3, |_| (600.0, 600.0, 600.0));
    assert_eq!(recovery_line(&st, 120, 40), None);
    // No overload before: the cross-check's business, not a phase.
    let mut st = fixture::under_load();
    extend(&mut st, 15, |_| (600.0, 600.0, 1500.0));
    assert_eq!(recovery_line(&st, 120, 40), None);
    // The backlog answered: one interval at the offered rate keeps the line (a gap of one
    // is no end in report.md either), two end it.
    let mut st = recovering();
    extend(&mut st, 1, |_| (600.0, 600.0, 600.0));
    assert!(recovery_line(&st, 120, 40).is_some());
    extend(&mut st, 1, |_| (600.0, 600.0, 600.0));
    assert_eq!(recovery_line(&st, 120, 40), None);
    // Without a caption (free play) it is named all the same.
    let mut st = recovering();
    st.caption = None;
    st.expect.clear();
    assert!(recovery_line(&st, 120, 40).is_some());
}
