//! A load worker's notice on screen: a bad-response reason is an alarm line, a raised
//! descriptor limit a note.

use synlab::lab::state::Warning;
use synlab::load::protocol::WorkerNotice;
use synlab::model::BadReason;
use synlab::ui::app::App;
use synlab::ui::fixture;
use synlab::ui::render;

#[test]
fn worker_notices_show_as_alarms_or_notes() {
    let mut st = fixture::under_load();
    st.warnings = vec![
        Warning::Worker(WorkerNotice::BadResponses {
            reason: BadReason::NotHttp,
            words: "status line is not HTTP/1.x".into(),
        }),
        Warning::Worker(WorkerNotice::RaisedNofile {
            from: 1024,
            to: 65536,
            needs: 40000,
        }),
    ];
    let app = App::new(synlab::ui::theme::Theme { color: false }, 60.0);
    let text = render::screen_text(&app, &st, 240, 48);
    assert!(
        text.contains(
            "⚠ load: bad responses: status line is not HTTP/1.x: the server's answers are not HTTP"
        ),
        "{text}"
    );
    assert!(
        text.contains("note: load: raised RLIMIT_NOFILE from 1024 to 65536"),
        "{text}"
    );
}
