//! Drawing: reads the App and the LabState only (no I/O), lays out the panels for the terminal
//! size and folds them on small screens. One module per panel.
//!
//! Top to bottom: the status line, the lesson's caption (it leads: the last to give way) with
//! its checks, the busy banner and the recovery, the last action's answer, the warnings, the
//! panels, the key hint. The text above the panels never takes the rates chart's rows
//! (`TOP_MIN` and the folded latency and CPU line): what does not fit is cut to fewer lines,
//! each block to its least (one line; none for an answer that was no refusal), ending in "…"
//! and where to see the rest ("… more: enlarge", "+2 more (run.log)").
//!
//! Folding order on small screens (80x24): TCP states go first (their latest values move into
//! the accept-queue header), then the latency chart (the p50/p90/p99 table stays), then the
//! overflows chart (a header value), then per-core CPU rows (a "+N cores" line); when the
//! rates and accept-queue charts would have fewer than `TOP_MIN` rows (a three-line caption at
//! 80x24), the latency and CPU panels fold into one line. When the server's port has UDP
//! sockets (a QUIC server) the UDP panel takes the TCP states' place on a big screen, and the
//! lower half of the accept queue's on a smaller one. Over HTTP/3 there is no accept queue and
//! no TCP connection: the UDP panel takes the accept queue's place, the TCP states are left out.

pub mod caption;
pub mod common;
pub mod cpu;
pub mod drops;
pub mod help;
pub mod latency;
pub mod queue;
pub mod rates;
pub mod states;
pub mod status;
pub mod udp;

use super::app::App;
use super::keymap::{HINT, HINT_SHORT};
use crate::lab::state::LabState;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use ratatui::Frame;

/// Draws a whole frame.
pub fn draw(frame: &mut Frame, app: &App, st: &LabState) {
    let area = frame.area();
    draw_buffer(area, frame.buffer_mut(), app, st);
}

/// The blocks of text above the panels, top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Status,
    Caption,
    Checks,
    Busy,
    Recovery,
    Message,
    Warnings,
}

/// Which block keeps its least first, the caption's the last to go: then the status, the
/// first alarm (with the others counted), the step's checks, the busy banner, the recovery,
/// and the answer to a refused key.
const LEAST_FIRST: [Block; 7] = [
    Block::Caption,
    Block::Status,
    Block::Warnings,
    Block::Checks,
    Block::Busy,
    Block::Recovery,
    Block::Message,
];

/// Which block gets its further lines first: the caption's band (the caption, its checks),
/// then the status, the recovery, the busy banner (whole; its one line says it in short),
/// the other warnings, the last action's answer.
const MORE_FIRST: [Block; 7] = [
    Block::Caption,
    Block::Checks,
    Block::Status,
    Block::Recovery,
    Block::Busy,
    Block::Warnings,
    Block::Message,
];

/// How many of `room` lines each block gets (indexed by `Block as usize`), by the lines it
/// wants and the least it keeps: the least first, in `LEAST_FIRST` order while there is room,
/// then the rest in `MORE_FIRST` order.
fn share(room: usize, want: impl Fn(Block) -> usize, least: impl Fn(Block) -> usize) -> [usize; 7] {
    let mut got = [0; 7];
    let mut left = room;
    for b in LEAST_FIRST {
        let n = least(b).min(want(b)).min(left);
        got[b as usize] = n;
        left -= n;
    }
    for b in MORE_FIRST {
        let n = want(b).saturating_sub(got[b as usize]).min(left);
        got[b as usize] += n;
        left -= n;
    }
    got
}

/// The rows the panels keep on a screen `height` rows high before any text above them: the
/// rates chart's (`TOP_MIN`) and the folded latency and CPU line, or what a small screen
/// leaves them.
fn panels_least(height: u16) -> u16 {
    (TOP_MIN + 1)
        .min(height.saturating_sub(9))
        .max(6)
        .min(height)
}

/// Draws into a buffer (also used for text screenshots).
pub fn draw_buffer(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    if area.width < 10 || area.height < 3 {
        Paragraph::new("synlab: enlarge the terminal").render(area, buf);
        return;
    }
    let (w, h) = (area.width, area.height);
    // Warnings keep to a few lines so the charts keep their rows at 80x24.
    let max_warnings = if h >= 40 { 4 } else { 2 };
    let status = status::lines(app, st, w, h < 30);
    let message = caption::message(app, st, w);
    let refused = app
        .message_for(st.last_action.as_ref())
        .is_some_and(|(_, refused)| refused);
    let all = usize::MAX;
    let want = |b: Block| match b {
        Block::Status => status.len(),
        Block::Caption => caption::caption(app, st, w, all).len(),
        Block::Checks => caption::checks(app, st, w, all).len(),
        Block::Busy => caption::busy(app, st, w, all).len(),
        Block::Recovery => caption::recovery(app, st, w, all).len(),
        Block::Message => message.len(),
        Block::Warnings => status::warnings(app, st, w, max_warnings).len(),
    };
    // A refused key's answer keeps a line (nothing changed, and this says why); another
    // answer gives way first.
    let least = |b: Block| usize::from(b != Block::Message || refused);
    let leasts: usize = LEAST_FIRST.iter().map(|&b| least(b).min(want(b))).sum();
    // The panels keep their least (the rates chart's rows), and the key hint its line while
    // the blocks' least fits: what does not fit above them is cut, with "…", never the chart.
    let panels_h = usize::from(panels_least(h));
    let hint_h = u16::from(leasts + panels_h < h as usize);
    let room = (h as usize).saturating_sub(panels_h + usize::from(hint_h));
    let shares = share(room, want, least);
    let got = |b: Block| shares[b as usize];
    let status = common::cut_spans(status, got(Block::Status), w);
    let mut band = caption::caption(app, st, w, got(Block::Caption));
    band.extend(caption::checks(app, st, w, got(Block::Checks)));
    band.extend(caption::busy(app, st, w, got(Block::Busy)));
    band.extend(caption::recovery(app, st, w, got(Block::Recovery)));
    let message = common::cut(message, got(Block::Message), w);
    let warnings = match got(Block::Warnings) {
        0 => Vec::new(),
        n => status::warnings(app, st, w, n.min(max_warnings)),
    };
    let [status_a, band_a, message_a, warnings_a, panels_a, hint_a] = Layout::vertical([
        Constraint::Length(status.len() as u16),
        Constraint::Length(band.len() as u16),
        Constraint::Length(message.len() as u16),
        Constraint::Length(warnings.len() as u16),
        Constraint::Min(0),
        Constraint::Length(hint_h),
    ])
    .areas(area);
    Paragraph::new(status).render(status_a, buf);
    Paragraph::new(band).render(band_a, buf);
    Paragraph::new(message).render(message_a, buf);
    Paragraph::new(warnings).render(warnings_a, buf);
    if app.show_drops {
        drops::render(panels_a, buf, app, st);
    } else {
        panels(panels_a, buf, app, st);
    }
    let hint = if app.show_help {
        "? or Esc closes this help  q quit".to_string()
    } else if area.width as usize >= HINT.chars().count() {
        HINT.to_string()
    } else {
        HINT_SHORT.to_string()
    };
    Paragraph::new(Line::from(Span::styled(hint, app.theme.text()))).render(hint_a, buf);
    if app.show_help {
        help::render(area, buf, app, st);
    }
}

/// The rows the rates and accept-queue panels keep on a small screen: borders, a header of up
/// to four lines and a chart of four.
const TOP_MIN: u16 = 10;

fn panels(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    if area.height < 3 {
        return;
    }
    let big = area.width >= 120 && area.height >= 30;
    if big {
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
        let [r, q] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(top);
        let udp = udp::shown(st);
        rates::render(r, buf, app, st);
        if udp::quic_load(st) {
            udp::render(q, buf, app, st);
            let [l, c] =
                Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                    .areas(bottom);
            latency::render(l, buf, app, st);
            cpu::render(c, buf, app, st);
            return;
        }
        queue::render(q, buf, app, st, udp);
        let [l, s, c] = Layout::horizontal([
            Constraint::Percentage(34),
            Constraint::Percentage(30),
            Constraint::Percentage(36),
        ])
        .areas(bottom);
        latency::render(l, buf, app, st);
        if udp {
            udp::render(s, buf, app, st);
        } else {
            states::render(s, buf, app, st);
        }
        cpu::render(c, buf, app, st);
        return;
    }
    // Small and medium: rates | queue (with TCP states folded in), then latency table | CPU.
    // 7 rows hold the latency table with what it covers and the CPU total; more go to
    // per-core bars. The charts above keep TOP_MIN rows first (a lesson's caption takes
    // rows at 80x24): else the latency and CPU panels fold into one line.
    let bottom_h = (area.height * 38 / 100).clamp(7, 14);
    let bottom_h = if area.height >= bottom_h + TOP_MIN {
        bottom_h
    } else {
        0
    };
    // Too small for the latency and CPU panels: their headline figures on one line, and how
    // to see the panels.
    let fold_h = u16::from(bottom_h == 0 && area.height >= 8);
    let [top, bottom, fold] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(bottom_h),
        Constraint::Length(fold_h),
    ])
    .areas(area);
    if fold_h > 0 {
        Paragraph::new(fold_line(app, st)).render(fold, buf);
    }
    let [r, q] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(top);
    rates::render(r, buf, app, st);
    if udp::shown(st) && !udp::quic_load(st) && q.height >= 2 * TOP_MIN {
        let [q, u] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(q);
        queue::render(q, buf, app, st, true);
        udp::render(u, buf, app, st);
    } else if udp::shown(st) {
        // Too low for both, or over HTTP/3: the UDP panel alone (a QUIC server's queue is its
        // socket buffer).
        udp::render(q, buf, app, st);
    } else {
        queue::render(q, buf, app, st, true);
    }
    if bottom_h > 0 {
        let [l, c] = Layout::horizontal([Constraint::Length(34), Constraint::Min(0)]).areas(bottom);
        latency::render(l, buf, app, st);
        cpu::render(c, buf, app, st);
    }
}

/// The latency and CPU panels folded into one line: "total p50 1.8ms p99 1.0s · CPU 92% ·
/// latency, CPU: enlarge to 80x24".
fn fold_line(app: &App, st: &LabState) -> Line<'static> {
    let t = &app.theme;
    let l = &st.live.all;
    let lat = match l.total {
        Some([p50, _, p99]) => format!(
            "total p50 {} p99 {}",
            common::ms(Some(p50)),
            common::ms(Some(p99))
        ),
        None => "total p50 - p99 -".into(),
    };
    let idle = common::headline(st, crate::model::col::CPU_IDLE);
    let cpu = idle.map_or("CPU -".into(), |i| format!("CPU {:.0}%", 100.0 - i));
    Line::from(vec![
        Span::styled(format!("{lat} · {cpu}"), t.label()),
        Span::styled(" · more: enlarge", t.text()),
    ])
}

/// The screen as text (one line per row), for snapshots to file.
pub fn screen_text(app: &App, st: &LabState, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    draw_buffer(area, &mut buf, app, st);
    let mut out = String::with_capacity((width as usize + 1) * height as usize);
    for y in 0..height {
        for x in 0..width {
            out.push_str(buf[(x, y)].symbol());
        }
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lesson-quic flood at 80x24: 12 lines above the panels for a status of 4, a caption
    /// of 4, 2 checks, a 2-line busy banner, an answer and 2 warning lines. The caption and
    /// its checks stay whole, then the status; the banner, the warnings keep a line each; the
    /// answer (no refusal) gives way.
    #[test]
    fn the_text_gives_way_before_the_charts_in_its_order() {
        let want = |b: Block| match b {
            Block::Status | Block::Caption => 4,
            Block::Checks | Block::Busy | Block::Warnings => 2,
            Block::Recovery => 0,
            Block::Message => 1,
        };
        let answer = |refused: bool| move |b: Block| usize::from(b != Block::Message || refused);
        let got = share(12, want, answer(false));
        let of = |b: Block| got[b as usize];
        assert_eq!(
            [Block::Status, Block::Caption, Block::Checks, Block::Busy].map(of),
            [4, 4, 2, 1]
        );
        assert_eq!(
            [Block::Recovery, Block::Message, Block::Warnings].map(of),
            [0, 0, 1]
        );
        // A refusal keeps its line: the status gives its last.
        let got = share(12, want, answer(true));
        assert_eq!(got[Block::Message as usize], 1);
        assert_eq!(got[Block::Status as usize], 3);
        assert_eq!(got.iter().sum::<usize>(), 12);
        // Room for all: all.
        let got = share(40, want, answer(false));
        assert_eq!(got.iter().sum::<usize>(), 15);
        // Hardly any room: the caption's line first, then the status's.
        let got = share(2, want, answer(false));
        assert_eq!(
            (got[Block::Caption as usize], got[Block::Status as usize]),
            (1, 1)
        );
        // The panels' rows: the rates chart's and the folded line from 20 rows up.
        assert_eq!(panels_least(24), TOP_MIN + 1);
        assert_eq!(panels_least(20), TOP_MIN + 1);
        assert_eq!(panels_least(12), 6);
        assert_eq!(panels_least(4), 4);
    }
}
