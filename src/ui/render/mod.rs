//! Drawing: reads the App and the LabState only (no I/O), lays out the panels for the terminal
//! size and folds them on small screens. One module per panel.
//!
//! Top to bottom: the status line, the lesson's caption (it leads: the last to give way), the
//! last action's answer, the warnings, the panels, the key hint.
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

/// Draws into a buffer (also used for text screenshots).
pub fn draw_buffer(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    if area.width < 10 || area.height < 3 {
        Paragraph::new("synlab: enlarge the terminal").render(area, buf);
        return;
    }
    // Warnings keep to a few lines so the charts keep their rows at 80x24.
    let max_warnings = if area.height >= 40 { 4 } else { 2 };
    let status = status::lines(app, st, area.width, area.height < 30);
    let caption = caption::caption(app, st, area.width);
    let message = caption::message(app, st, area.width);
    let warnings = status::warnings(app, st, area.width, max_warnings);
    let fixed = status.len() + caption.len() + message.len() + warnings.len() + 1;
    // Keep at least 6 rows of panels. The caption leads: it is the last to give way, then
    // the status, the warnings (one line at least) and the last action's answer.
    let mut room = (area.height as usize).saturating_sub(6);
    let mut take = |n: usize| {
        let h = n.min(room);
        room -= h;
        h as u16
    };
    let caption_h = take(caption.len());
    let status_h = take(status.len());
    let warnings_h = take(warnings.len());
    let message_h = take(message.len());
    let hint_h = u16::from(fixed <= area.height as usize);
    let [status_a, caption_a, message_a, warnings_a, panels_a, hint_a] = Layout::vertical([
        Constraint::Length(status_h),
        Constraint::Length(caption_h),
        Constraint::Length(message_h),
        Constraint::Length(warnings_h),
        Constraint::Min(0),
        Constraint::Length(hint_h),
    ])
    .areas(area);
    Paragraph::new(status).render(status_a, buf);
    // What gives way is cut with "…", never dropped as if whole.
    let caption = common::cut(caption, caption_h.into(), area.width);
    let message = common::cut(message, message_h.into(), area.width);
    Paragraph::new(caption).render(caption_a, buf);
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
