//! The status lines: what runs (scenario, target, backend, elapsed, step, window), every knob's
//! current value with the selected path marked; and the warnings by severity: alarms
//! (client-bound first) white on red, steady conditions (no pcap, the delay router late) as one
//! plain line of notes.

use super::common::{pack, wrap};
use crate::lab::state::{LabState, Warning};
use crate::load::protocol::Mode;
use crate::model::knob::PathKnob;
use crate::ui::app::App;
use ratatui::text::{Line, Span};

fn elapsed(s: f64) -> String {
    let s = s.max(0.0) as u64;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// "label value" as one group: the label plain, the value bold.
fn kv(app: &App, k: &str, v: String) -> Vec<Span<'static>> {
    vec![
        Span::styled(format!("{k} "), app.theme.text()),
        Span::styled(v, app.theme.label()),
    ]
}

/// The thresholds so far: how many hold, and the first that does not.
fn gate(app: &App, v: &[crate::report::thresholds::Verdict]) -> Vec<Span<'static>> {
    let held = v.iter().filter(|x| x.passed).count();
    match v.iter().find(|x| !x.passed) {
        None => kv(app, "gate", format!("{held}/{} hold", v.len())),
        Some(f) => vec![
            Span::styled("gate ".to_string(), app.theme.text()),
            Span::styled(
                format!("FAIL {}/{} hold: {}", held, v.len(), f.check),
                app.theme.warn(),
            ),
        ],
    }
}

/// The status lines for a screen `width` wide. `compact` (a small screen) leaves out what runs
/// where (target, backend, lab), which stays in run.log.
pub fn lines(app: &App, st: &LabState, width: u16, compact: bool) -> Vec<Line<'static>> {
    let t = &app.theme;
    let k = &st.knobs;
    let mut head = vec![vec![Span::styled(
        format!("synlab · {}", st.scenario_name),
        t.title(),
    )]];
    if !compact {
        head.push(kv(
            app,
            "target",
            if st.target.is_empty() {
                "n/a".into()
            } else {
                st.target.clone()
            },
        ));
        head.push(kv(app, "net", st.backend.clone()));
        if !st.lab.is_empty() {
            head.push(kv(app, "lab", st.lab.clone()));
        }
    }
    // Which CPUs the server and the load got, and where the server's packets are received.
    if !st.cpus.line.is_empty() {
        head.push(kv(app, "cpus", st.cpus.short()));
    }
    head.push(kv(app, "t", elapsed(st.elapsed_s)));
    if let Some((i, n)) = st.step {
        head.push(kv(app, "step", format!("{i}/{n}")));
    }
    if st.finished {
        head.push(vec![Span::styled("FINISHED", t.warn())]);
    } else if st.free_play {
        head.push(vec![Span::styled("free play", t.label())]);
    }

    let mut knobs = Vec::new();
    if k.paused {
        knobs.push(vec![Span::styled("PAUSED", t.warn())]);
    }
    // What the rate is: the workers' pool (their reports) makes it requests/s.
    let pool = st
        .store
        .last(crate::model::col::POOL_CONNECTIONS)
        .unwrap_or(0.0) as u64;
    knobs.push(kv(
        app,
        "rate",
        crate::load::rates::rate_text(k.mode, k.rate, pool),
    ));
    knobs.push(kv(app, "mode", format!("{:?}", k.mode).to_lowercase()));
    knobs.push(kv(app, "D", k.sockets.to_string()));
    if k.mode == Mode::Closed {
        knobs.push(kv(app, "clients", k.clients.to_string()));
    }
    if let Some(m) = k.streams {
        knobs.push(kv(app, "streams", streams_text(m, &st.store)));
    }
    knobs.push(kv(app, "T", format!("{}ms", k.timeout.as_millis())));
    knobs.push(kv(
        app,
        "burst",
        format!(
            "{:.1}x {:.0}%/{}s {}",
            k.burst.ratio,
            k.burst.fraction * 100.0,
            k.burst.period_s,
            if k.burst_on { "on" } else { "off" }
        ),
    ));
    if let Some(share) = k.resumed {
        knobs.push(kv(
            app,
            "tls",
            format!("{} resumed {:.0}%", st.tls, share * 100.0),
        ));
    }
    if k.paths.is_empty() {
        knobs.push(vec![Span::styled("no paths (loopback)", t.text())]);
    }
    for (i, p) in k.paths.iter().enumerate() {
        let sel = i == k.selected_path;
        let mut text = format!("{}{}", if sel { "▶" } else { "" }, p.name);
        for shown in PathKnob::ALL.iter().filter_map(|&k| p.get(k).status()) {
            text.push(' ');
            text.push_str(&shown);
        }
        knobs.push(vec![Span::styled(
            text,
            if sel { t.selected() } else { t.label() },
        )]);
    }

    if !st.verdicts.is_empty() {
        head.push(gate(app, &st.verdicts));
    }
    let mut out = pack(head, " │ ", width);
    out.extend(pack(knobs, "  ", width));
    out
}

/// HTTP/2's streams: M per connection, and once the workers report, the most in flight on
/// one connection against the server's advertised limit, and the refused ones per second.
fn streams_text(m: u32, store: &crate::metrics::store::Store) -> String {
    use crate::model::col;
    let mut text = format!("{m}/conn");
    if let Some(max) = store.last(col::H2_STREAMS_MAX) {
        text.push_str(&format!(" in flight {max:.0}"));
        if let Some(limit) = store.last(col::H2_STREAMS_LIMIT) {
            text.push_str(&format!(" of {limit:.0}"));
        }
    }
    if let Some(refused) = store.last(col::H2_REFUSED_STREAMS).filter(|&r| r > 0.0) {
        text.push_str(&format!(" refused {refused:.0}/s"));
    }
    text
}

/// How a warning is shown: an alarm (the figures are wrong or the run is in trouble) or a
/// steady condition a person should know but need not act on now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Alarm,
    Note,
}

pub fn severity(w: &Warning) -> Severity {
    use crate::load::protocol::WorkerNotice as N;
    match w {
        Warning::NoPcap
        | Warning::NoLab(_)
        | Warning::RouterLate(_)
        | Warning::ResumeShort { .. } => Severity::Note,
        // A worker's limits and what the server said: worth knowing, nothing wrong measured.
        Warning::Worker(N::RaisedNofile { .. } | N::NofileShort { .. } | N::StreamReset { .. }) => {
            Severity::Note
        }
        Warning::Worker(_) => Severity::Alarm,
        Warning::ClientBound(_)
        | Warning::CrossCheck(_)
        | Warning::PortsRunningOut
        | Warning::OutOfFds
        | Warning::ChildDied(_)
        | Warning::RouterBehind
        | Warning::AccessLog(_)
        | Warning::TlsFailing { .. } => Severity::Alarm,
    }
}

/// The warnings that hold now: the router's lateness is over the shaped traffic, so it is not
/// shown while the load is paused (nothing is shaped then; it comes back with the load).
fn current(st: &LabState) -> impl Iterator<Item = &Warning> {
    st.warnings
        .iter()
        .filter(move |w| !(st.knobs.paused && matches!(w, Warning::RouterLate(_))))
}

/// The warning lines for a screen `width` wide, at most `max` of them: the alarms first
/// (client-bound first: a result that measured the client must never look valid), each
/// wrapped at spaces, those that do not fit counted on the last line; then the notes on one
/// line ("note: no pcap: SYN/s estimated · ..."), cut with "…" when it is longer. The first
/// alarm always has a line; the notes keep theirs only while every alarm still shows (the
/// first cut at a space if need be), else they give way to the alarms and their count.
pub fn warnings(app: &App, st: &LabState, width: u16, max: usize) -> Vec<Line<'static>> {
    let max = max.max(1);
    let mut alarms: Vec<Warning> = current(st)
        .filter(|w| severity(w) == Severity::Alarm)
        .cloned()
        .collect();
    alarms.sort_by_key(|w| !matches!(w, Warning::ClientBound(_)));
    let notes: Vec<String> = current(st)
        .filter(|w| severity(w) == Severity::Note)
        .map(ToString::to_string)
        .collect();
    let note_h = usize::from(!notes.is_empty() && max >= 2);
    let (mut out, all_shown) = warning_lines(app, &alarms, width, max - note_h);
    if !all_shown && note_h > 0 {
        out = warning_lines(app, &alarms, width, max).0;
    }
    if !notes.is_empty() && out.len() < max {
        let text = format!("note: {}", notes.join(" · "));
        let w = width as usize;
        let text = if text.chars().count() > w {
            let mut cut: String = text.chars().take(w.saturating_sub(1)).collect();
            cut.push('…');
            cut
        } else {
            text
        };
        out.push(Line::from(Span::styled(text, app.theme.notice())));
    }
    out
}

/// Each warning wrapped at spaces ("⚠ " before it), as many whole ones as fit in `max`
/// lines, the rest counted on the last line; the first is always shown, in a line at least,
/// its last line ending in "…" (at a space) if it is longer than its room. Also whether every
/// warning is shown (none counted only).
fn warning_lines(
    app: &App,
    warnings: &[Warning],
    width: u16,
    max: usize,
) -> (Vec<Line<'static>>, bool) {
    let style = app.theme.warn();
    let max = max.max(1);
    let mut out: Vec<Line<'static>> = Vec::new();
    for (i, w) in warnings.iter().enumerate() {
        let mut l = wrap(&w.to_string(), "⚠ ", width, style);
        let more = warnings.len() - i - 1;
        // Its room: a line stays free for the count of those after it.
        let room = max.saturating_sub(out.len() + usize::from(more > 0));
        if l.len() > room {
            if i > 0 {
                // Counted, when a line is left for the count (only a one-line `max` has none).
                if out.len() < max {
                    let text = format!("+{} more warning(s): see run.log", warnings.len() - i);
                    out.extend(wrap(&text, "⚠ ", width, style).into_iter().take(1));
                }
                return (out, false);
            }
            // The first warning in the room it has, a line at least, cut at a space. With
            // no line left for the count of the others (a one-line budget), it ends in it.
            let more = (more > 0 && room == 0).then(|| format!("+{more} more (run.log)"));
            let tail = more.as_deref().map_or(0, |m| m.chars().count() + 3);
            let cut = wrap(
                &w.to_string(),
                "⚠ ",
                width.saturating_sub(2 + tail as u16),
                style,
            );
            let whole = cut.len() == 1;
            l = cut.into_iter().take(room.max(1)).collect();
            if let Some(last) = l.last_mut() {
                let text = last.to_string();
                let text = match (&more, whole) {
                    (Some(m), true) => format!("{text} · {m}"),
                    (Some(m), false) => format!("{} … {m}", at_clause(&text)),
                    (None, _) => format!("{} …", at_clause(&text)),
                };
                *last = Line::from(Span::styled(text, style));
            }
        }
        out.extend(l);
    }
    (out, true)
}

/// A cut line without the parenthesis it leaves open ("(34852 of …"), when that keeps more
/// than half of it: a cut leaves no figure without what it counts. The whole warning is in
/// run.log.
fn at_clause(line: &str) -> &str {
    match line.rfind(" (") {
        Some(i) if i > line.len() / 2 && !line[i..].contains(')') => &line[..i],
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use crate::lab::client_agg::ClientBound;
    use crate::lab::state::Warning;
    use crate::load::notice::WorkerNotice;
    use crate::ui::app::App;
    use crate::ui::fixture;
    use crate::ui::render;
    use crate::ui::theme::Theme;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    /// The client out of descriptors (`*` pressed five times on the default scenario): two
    /// alarms and a note on why the limit stays low.
    fn out_of_fds() -> crate::lab::state::LabState {
        let mut st = fixture::under_load();
        st.warnings = vec![
            Warning::Worker(WorkerNotice::NofileShort {
                soft: 1024,
                hard: 4096,
                needs: 40000,
                nr_open: 1 << 20,
                sys_resource: false,
                host_root: false,
            }),
            Warning::OutOfFds,
            Warning::ClientBound(vec![
                ClientBound::FdsOut,
                ClientBound::Shortfall {
                    started: 40.0,
                    unit: "attempts",
                    done: 40,
                    intended: 100.0,
                },
            ]),
        ];
        st
    }

    /// The first alarm (client-bound) has its line at 80x24 though a note is there: the note
    /// gives way to the alarms (here both, the first cut to its line), never the other way
    /// round.
    #[test]
    fn first_alarm_shown_before_a_note_at_80x24() {
        let app = App::new(Theme { color: true }, 60.0);
        let st = out_of_fds();
        let text = render::screen_text(&app, &st, 80, 24);
        let warn: Vec<&str> = text.lines().filter(|l| l.starts_with("⚠ ")).collect();
        assert_eq!(warn.len(), 2, "{text}");
        assert!(
            warn[0].starts_with("⚠ CLIENT-BOUND: client ran out of file descriptors"),
            "{text}"
        );
        assert!(warn[0].ends_with(" …"), "{text}");
        assert_eq!(warn[1], "⚠ out of file descriptors", "{text}");
        assert!(!text.contains("note: "), "{text}");
        let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
        term.draw(|f| render::draw(f, &app, &st)).unwrap();
        insta::assert_snapshot!("alarm_and_note_80x24", term.backend());
        // With room for them all (four lines at 200x55), both alarms and the note.
        let big = render::screen_text(&app, &st, 200, 55);
        assert!(big.contains("⚠ CLIENT-BOUND: client ran out"), "{big}");
        assert!(big.contains("⚠ out of file descriptors"), "{big}");
        assert!(big.contains("note: load: RLIMIT_NOFILE is 1024"), "{big}");
    }

    /// One alarm and a note: the alarm cut to its line keeps the note its own.
    #[test]
    fn one_alarm_cut_keeps_the_note() {
        let app = App::new(Theme { color: true }, 60.0);
        let mut st = out_of_fds();
        st.warnings.retain(|w| !matches!(w, Warning::OutOfFds));
        let lines: Vec<String> = super::warnings(&app, &st, 80, 2)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("⚠ CLIENT-BOUND: ") && lines[0].ends_with(" …"));
        assert!(
            lines[1].starts_with("note: load: RLIMIT_NOFILE"),
            "{lines:?}"
        );
        // A third alarm: the first, then the others counted; the note gives way.
        let mut three = out_of_fds();
        three.warnings.push(Warning::PortsRunningOut);
        let lines: Vec<String> = super::warnings(&app, &three, 80, 2)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("⚠ CLIENT-BOUND: "), "{lines:?}");
        assert_eq!(lines[1], "⚠ +2 more warning(s): see run.log");
        // A one-line budget: the first alarm still, cut, and the others counted on its line.
        let one: Vec<String> = super::warnings(&app, &out_of_fds(), 80, 1)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(one.len(), 1, "{one:?}");
        assert!(one[0].starts_with("⚠ CLIENT-BOUND: "), "{one:?}");
        assert!(one[0].ends_with(" … +1 more (run.log)"), "{one:?}");
        assert!(one[0].chars().count() <= 80, "{one:?}");
        // A short first alarm stays whole, the count after it.
        let mut short = out_of_fds();
        short.warnings = vec![Warning::OutOfFds, Warning::PortsRunningOut];
        let one: Vec<String> = super::warnings(&app, &short, 80, 1)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            one,
            ["⚠ out of file descriptors · +1 more (run.log)"],
            "{one:?}"
        );
    }
}
