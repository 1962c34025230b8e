//! Panel: the UDP side of the server's port (issue 47), shown when the port has UDP sockets (a
//! QUIC server: Caddy over HTTP/3, a probe of a UDP port): QUIC Initials arriving (pcap), the
//! datagrams the port's sockets dropped and the namespace's RcvbufErrors, and the bytes waiting
//! in their receive queue against the buffer and net.core.rmem_max. The QUIC counterpart of the
//! accept-queue panel: no SYN, no accept queue; the socket's buffer is the queue.

use super::common::{headline, line_chart, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Whether the server's port has UDP sockets (their receive buffer was read).
pub fn shown(st: &LabState) -> bool {
    headline(st, c::UDP_RCVBUF).is_some()
}

/// "2304/65536 B" (the queue against its buffer, in whole bytes: the buffer's size is a
/// setting, read as written), "full" when it reached it.
pub fn queue_text(q: Option<f64>, buf: Option<f64>) -> String {
    match (q, buf) {
        (Some(q), Some(b)) if b > 0.0 && q >= b => format!("{q:.0}/{b:.0} B full"),
        (Some(q), Some(b)) => format!("{q:.0}/{b:.0} B"),
        (Some(q), None) => format!("{q:.0} B"),
        _ => "n/a".into(),
    }
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let w = Window::of(app, st);
    let dropping = headline(st, c::PORT_UDP_DROPS_PER_S).is_some_and(|d| d > 0.0);
    let title = if dropping {
        "UDP (QUIC)  DROPPING: buffer full"
    } else {
        "UDP (QUIC)"
    };
    let inner = panel(area, buf, title, &app.theme);
    let mut queue = Series::value_only(st, "rcv queue", c::UDP_RCV_QUEUE);
    queue.latest = Some(queue_text(
        headline(st, c::UDP_RCV_QUEUE),
        headline(st, c::UDP_RCVBUF),
    ));
    let mut rmem = Series::value_only(st, "rmem_max", c::RMEM_MAX);
    rmem.latest = headline(st, c::RMEM_MAX).map(|v| format!("{v:.0} B"));
    let series = vec![
        Series::column(st, "Initials/s", c::QUIC_INITIAL_IN_PER_S, w),
        Series::column(st, "first/s", c::QUIC_FIRST_INITIAL_PER_S, w),
        Series::column(st, "drops/s port", c::PORT_UDP_DROPS_PER_S, w).as_error(),
        Series::value_only(st, "RcvbufErrors/s", c::UDP_RCVBUF_ERRORS_PER_S),
        queue,
        rmem,
    ];
    line_chart(inner, buf, st, w, &series, &app.theme);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_said_against_its_buffer() {
        assert_eq!(queue_text(Some(2304.0), Some(65536.0)), "2304/65536 B");
        assert_eq!(
            queue_text(Some(70000.0), Some(65536.0)),
            "70000/65536 B full"
        );
        assert_eq!(queue_text(None, Some(1.0)), "n/a");
    }
}
