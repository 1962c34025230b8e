//! Panel: the UDP side of the server's port (issue 47), shown when the port has UDP sockets (a
//! QUIC server: Caddy over HTTP/3, a probe of a UDP port): QUIC Initials arriving (pcap), the
//! datagrams the port's sockets dropped and the namespace's RcvbufErrors, and the bytes waiting
//! in their receive queue against the buffer and net.core.rmem_max; with Retry on, the Retries
//! per second. The QUIC counterpart of the accept-queue panel: no SYN, no accept queue; the
//! socket's buffer is the queue. Over HTTP/3 it is drawn in the accept queue's place.

use super::common::{headline, line_chart, num, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Whether the load speaks HTTP/3: the workers sent QUIC counts (the core's rule too). Over
/// HTTP/3 the TCP figures (accept queue, TCP states) are not the server's story.
pub fn quic_load(st: &LabState) -> bool {
    st.store.last(c::QUIC_PACKETS_SENT).is_some()
}

/// Whether the panel is drawn: the server's port has UDP sockets (their receive buffer was
/// read), or the load speaks HTTP/3.
pub fn shown(st: &LabState) -> bool {
    headline(st, c::UDP_RCVBUF).is_some() || quic_load(st)
}

/// The Retries per second, only where measured: the server's own count of those it sent and
/// the clients' of those they received, both on a wide panel, else the server's (or the
/// clients' where it does not count). None: neither is measured.
fn retry(st: &LabState, wide: bool) -> Option<Series> {
    let fig = |col| {
        st.store
            .last(col)
            .map(|_| headline(st, col).map_or("-".into(), num))
    };
    let text = match (fig(c::SERVER_QUIC_RETRIES), fig(c::QUIC_RETRY)) {
        (Some(sent), Some(recv)) if wide => format!("sent {sent} recv {recv}"),
        (Some(sent), _) => sent,
        (None, Some(recv)) => recv,
        (None, None) => return None,
    };
    Some(Series {
        latest: Some(text),
        ..Series::value_only(st, "Retry/s", c::QUIC_RETRY)
    })
}

/// "2304/65536 B" (the queue against its buffer, in whole bytes: the buffer's size is a
/// setting, read as written), "full" when it reached it. While the port drops datagrams with
/// the sampled queue below its buffer, "sampled": the kernel dropped at a full buffer between
/// the samples, and the queue a sample found is not that peak.
pub fn queue_text(q: Option<f64>, buf: Option<f64>, dropping: bool) -> String {
    match (q, buf) {
        (Some(q), Some(b)) if b > 0.0 && q >= b => format!("{q:.0}/{b:.0} B full"),
        (Some(q), Some(b)) if dropping => format!("{q:.0}/{b:.0} B sampled"),
        (Some(q), Some(b)) => format!("{q:.0}/{b:.0} B"),
        (Some(q), None) => format!("{q:.0} B"),
        _ => "n/a".into(),
    }
}

/// The panel's title for a panel `width` wide: while the port drops, whether its buffer was
/// full at the samples too (then "buffer full", as the queue says) or only between them (the
/// drops counted since the last sample, the queue sampled below its buffer), as long as the
/// width holds it.
pub fn title(dropping: bool, q: Option<f64>, buf: Option<f64>, width: u16) -> &'static str {
    if !dropping {
        return "UDP (QUIC)";
    }
    let full_at_samples = matches!((q, buf), (Some(q), Some(b)) if b > 0.0 && q >= b);
    let choices: &[&'static str] = if full_at_samples || q.is_none() {
        &["UDP (QUIC)  DROPPING: buffer full"]
    } else {
        &[
            "UDP (QUIC)  DROPPING: buffer full between samples",
            "UDP (QUIC)  DROPPING when full",
        ]
    };
    // The border's corners and the space before the title (the one after it may go).
    let room = usize::from(width).saturating_sub(3);
    choices
        .iter()
        .copied()
        .find(|t| t.chars().count() <= room)
        .unwrap_or("UDP (QUIC)  DROPPING")
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let dropping = headline(st, c::PORT_UDP_DROPS_PER_S).is_some_and(|d| d > 0.0);
    let (q, rcvbuf) = (headline(st, c::UDP_RCV_QUEUE), headline(st, c::UDP_RCVBUF));
    let title = title(dropping, q, rcvbuf, area.width);
    let inner = panel(area, buf, title, &app.theme);
    let mut queue = Series::value_only(st, "rcv queue", c::UDP_RCV_QUEUE);
    queue.latest = Some(queue_text(q, rcvbuf, dropping));
    // A short panel (80x24) keeps its chart: the buffer's ceiling, a setting that does not
    // move, gives way first (a taller terminal shows it, as timeseries.csv does).
    let mut rmem = Series::value_only(st, "rmem_max", c::RMEM_MAX).gives_way();
    rmem.latest = headline(st, c::RMEM_MAX).map(|v| format!("{v:.0} B"));
    let mut series = vec![
        Series::column(st, "Initials/s", c::QUIC_INITIAL_IN_PER_S, w),
        Series::column(st, "first/s", c::QUIC_FIRST_INITIAL_PER_S, w),
        Series::column(st, "drops/s port", c::PORT_UDP_DROPS_PER_S, w).as_error(),
    ];
    // Beside the drops: on a narrow panel one figure keeps the header to its lines.
    series.extend(retry(st, inner.width >= 50));
    series.extend([
        Series::value_only(st, "RcvbufErrors/s", c::UDP_RCVBUF_ERRORS_PER_S),
        queue,
        rmem,
    ]);
    line_chart(inner, buf, st, w, &series, &app.theme);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_said_against_its_buffer() {
        assert_eq!(
            queue_text(Some(2304.0), Some(65536.0), false),
            "2304/65536 B"
        );
        assert_eq!(
            queue_text(Some(70000.0), Some(65536.0), true),
            "70000/65536 B full"
        );
        assert_eq!(queue_text(None, Some(1.0), true), "n/a");
        // Dropping below a full buffer at the samples: the figure is a sample's.
        assert_eq!(
            queue_text(Some(43541.0), Some(212992.0), true),
            "43541/212992 B sampled"
        );
    }

    /// The lesson's flood (issue: `DROPPING: buffer full` beside a queue 20 % full): the title
    /// says the buffer was full between the samples, or only that it drops when full on a
    /// narrow panel, never that it is full when the samples say it is not.
    #[test]
    fn the_title_is_true_to_the_drops_and_the_sampled_queue() {
        let (q, b) = (Some(43541.0), Some(212992.0));
        assert_eq!(title(false, q, b, 36), "UDP (QUIC)");
        assert_eq!(title(true, q, b, 36), "UDP (QUIC)  DROPPING when full");
        assert_eq!(
            title(true, q, b, 64),
            "UDP (QUIC)  DROPPING: buffer full between samples"
        );
        assert_eq!(title(true, q, b, 20), "UDP (QUIC)  DROPPING");
        let full = Some(213000.0);
        assert_eq!(
            title(true, full, b, 36),
            "UDP (QUIC)  DROPPING: buffer full"
        );
        assert_eq!(
            title(true, full, b, 64),
            "UDP (QUIC)  DROPPING: buffer full"
        );
    }

    /// The buffer's ceiling gives way exactly where it would take the chart's last rows (a
    /// fixed height had it give way up to three rows early at 60 columns): never shown without
    /// the chart, and shown from the first height
    /// that holds the chart with it (its header line is one more at most).
    #[test]
    fn rmem_max_gives_way_only_to_keep_the_chart() {
        let st = crate::ui::fixture::quic_lesson_flood();
        let app = App::new(crate::ui::theme::Theme { color: false }, 60.0);
        let text = |b: &Buffer| b.content().iter().map(|c| c.symbol()).collect::<String>();
        let (mut chart, mut rmem) = (Vec::new(), Vec::new());
        for h in 6..16 {
            let area = Rect::new(0, 0, 60, h);
            let mut b = Buffer::empty(area);
            render(area, &mut b, &app, &st);
            chart.push(text(&b).contains("now"));
            rmem.push(text(&b).contains("rmem_max"));
        }
        let first = |v: &[bool]| v.iter().position(|&s| s).expect("shown on a tall panel");
        let (c0, r0) = (first(&chart), first(&rmem));
        assert!(chart[c0..].iter().all(|&s| s) && rmem[r0..].iter().all(|&s| s));
        assert!(
            c0 > 0 && r0 >= c0 && r0 <= c0 + 1,
            "chart {chart:?}, rmem_max {rmem:?}"
        );
    }

    fn with(cols: &[(crate::model::Col, Option<f64>)]) -> LabState {
        let mut st = LabState::new("t", crate::ui::fixture::knobs(), 0.2);
        st.store.push(1.0, cols);
        st
    }

    #[test]
    fn retries_are_shown_only_where_measured() {
        let text = |st: &LabState, wide| retry(st, wide).map(|s| s.latest_text());
        // Over TCP: the columns exist, never measured.
        let tcp = with(&[(c::QUIC_RETRY, None), (c::SERVER_QUIC_RETRIES, None)]);
        assert_eq!(text(&tcp, true), None);
        // The built-in server counts its own; the clients theirs.
        let both = with(&[
            (c::QUIC_RETRY, Some(990.0)),
            (c::SERVER_QUIC_RETRIES, Some(1000.0)),
        ]);
        assert_eq!(text(&both, true).as_deref(), Some("sent 1.0k recv 990"));
        assert_eq!(text(&both, false).as_deref(), Some("1.0k"));
        // A server that does not count (Caddy): the clients' figure.
        let clients = with(&[(c::QUIC_RETRY, Some(990.0)), (c::SERVER_QUIC_RETRIES, None)]);
        assert_eq!(text(&clients, true).as_deref(), Some("990"));
    }
}
