//! The latency panel's split line (issue 48 item 4): the last sample's mean response time as
//! a stacked bar of connect, accept queue, service and transfer with its share of SYN
//! retransmissions, insta snapshots at 80x24 and 160x48; no line when the split was not
//! measured.

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use synlab::lab::state::LabState;
use synlab::model::col;
use synlab::ui::app::App;
use synlab::ui::fixture;
use synlab::ui::render;
use synlab::ui::theme::Theme;

/// An overloaded lab whose last sample's requests spent most of their time in the accept
/// queue and waiting for SYN retransmissions.
fn with_split() -> LabState {
    let mut st = fixture::overloaded();
    let t = st.elapsed_s + st.interval_s;
    st.store.push(
        t,
        &[
            (col::SPLIT_CONNECT, Some(180.0)),
            (col::SPLIT_QUEUE, Some(15.0)),
            (col::SPLIT_SERVICE, Some(1.0)),
            (col::SPLIT_TRANSFER, Some(4.0)),
            (col::CONNECT_RETRANS, Some(17.6)),
        ],
    );
    st.elapsed_s = t;
    st
}

#[test]
fn the_latency_panel_draws_the_split_as_a_stacked_bar() {
    let app = App::new(Theme { color: true }, 60.0);
    let st = with_split();
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| render::draw(f, &app, &st)).unwrap();
        insta::assert_snapshot!(format!("latency_split_{w}x{h}"), term.backend());
    }
    let large = render::screen_text(&app, &st, 160, 48);
    let line = large
        .lines()
        .find(|l| l.contains("split "))
        .unwrap_or_else(|| panic!("no split line:\n{large}"));
    // 180 of 200 ms connect: the bar is mostly C, then Q, then T; its mean and SYN share.
    assert!(line.contains("CCCCCCCCCC"), "{line}");
    assert!(line.contains("QQ"), "{line}");
    assert!(line.contains("200ms, 18% SYN retx"), "{line}");
    assert!(
        large.contains("C connect, Q accept queue, S service, T transfer"),
        "{large}"
    );
}

#[test]
fn no_split_line_without_a_measured_split() {
    let app = App::new(Theme { color: true }, 60.0);
    let screen = render::screen_text(&app, &fixture::overloaded(), 160, 48);
    assert!(!screen.contains("SYN retx"), "{screen}");
    assert!(!screen.contains("C connect"), "{screen}");
}
