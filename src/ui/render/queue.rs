//! Panel: the listen socket's accept queue against its limit, SYN-RCVD (request socks) and
//! listen overflows per second: where an overloaded server starts dropping SYNs.

use super::common::{headline, line_chart, num, num_or_na, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Whether the probed namespace holds other servers' sockets too: without a network lab the
/// probes read the host's namespace, whose counters and sockstat count every port, so the
/// panels show the port's own figures (sock_diag) and label whose each is. In the lab the
/// server's namespace holds only the server: its figures are the port's, shown unlabelled.
/// (The controller walks the port's TIME_WAIT by the same rule.)
pub(super) fn netns_shared(st: &LabState) -> bool {
    st.lab.is_empty()
}

/// A series shown in the header only (its own scale would flatten the chart).
fn header_only(s: Series) -> Series {
    Series {
        plotted: false,
        ..s
    }
}

/// "129/128 full (limit+1)": Linux admits one connection past the backlog before it drops
/// SYNs, so a full queue reads one over its limit; said, not left to puzzle over.
pub fn queue_text(q: Option<f64>, limit: Option<f64>) -> String {
    match (q, limit) {
        (Some(q), Some(l)) if l > 0.0 && q.round() > l => {
            format!("{}/{} full (limit+1)", num(q), num(l))
        }
        (Some(q), Some(l)) if l > 0.0 && q.round() >= l => format!("{}/{} full", num(q), num(l)),
        (Some(q), Some(l)) => format!("{}/{}", num(q), num(l)),
        (q, _) => num_or_na(q),
    }
}

/// `fold_states`: the TCP-states panel is not shown, so its latest values go in this header.
pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState, fold_states: bool) {
    let w = Window::of(app, st);
    let (q, limit) = (
        headline(st, c::ACCEPT_QUEUE),
        headline(st, c::ACCEPT_QUEUE_LIMIT),
    );
    let full = matches!((q, limit), (Some(q), Some(l)) if l > 0.0 && q.round() >= l);
    // Over HTTP/2 a few connections carry every stream: the accept queue stays nearly empty
    // and the queue is in the connections' socket buffers, charted instead and said so.
    let h2 = st.knobs.streams.is_some();
    let title = match (full, fold_states, h2) {
        (true, _, _) => "accept queue  FULL: SYNs dropped",
        (false, _, true) => "HTTP/2 conn queues (accept queue ~0: few conns, many streams)",
        (false, true, false) => "accept queue · TCP states",
        (false, false, false) => "accept queue",
    };
    let inner = panel(area, buf, title, &app.theme);
    let mut queue = Series::column(st, "queue", c::ACCEPT_QUEUE, w);
    queue.latest = Some(queue_text(q, limit));
    let mut queue_series = if h2 {
        vec![
            Series::column(st, "recvq B/conn", c::CONN_RECVQ_MEAN, w),
            Series::column(st, "sendq B/conn", c::CONN_SENDQ_MEAN, w),
            header_only(Series::column(st, "recvq max", c::CONN_RECVQ_MAX, w)),
            header_only(Series::column(st, "sendq max", c::CONN_SENDQ_MAX, w)),
            header_only(Series::column(st, "retrans", c::CONN_RETRANS, w)),
            header_only(queue),
        ]
    } else {
        vec![
            queue,
            Series::column(st, "limit", c::ACCEPT_QUEUE_LIMIT, w),
            Series::column(st, "SYN-RCVD", c::SYN_RECV, w),
        ]
    };
    // The built-in process or thread server's own count of its workers busy with a
    // connection (all busy leaves new connections in the queue). The event server's one loop
    // says little at the instant it reports, between requests.
    let workers = headline(st, c::SERVER_WORKERS).filter(|n| *n >= 2.0);
    if let (Some(b), Some(n)) = (headline(st, c::SERVER_BUSY), workers) {
        queue_series.push(Series {
            latest: Some(format!("{}/{}", num(b), num(n.round()))),
            ..Series::value_only(st, "server busy", c::SERVER_BUSY)
        });
    }
    // The port's own listen drops (its listeners' sk_drops: overflows and dropped SYNs)
    // lead where the namespace's overflows count other servers' too.
    let shared = netns_shared(st);
    let overflows = if shared {
        Series::column(st, "drops/s port", c::PORT_LISTEN_DROPS_PER_S, w).as_error()
    } else {
        Series::column(st, "overflows/s", c::LISTEN_OVERFLOWS, w).as_error()
    };
    let mut states: Vec<Series> = match (fold_states, shared) {
        (false, _) => Vec::new(),
        (true, false) => vec![
            header_only(Series::sum_of(st, "held", &super::states::HELD, w)),
            header_only(Series::column(st, "TIME_WAIT", c::TIME_WAIT, w)),
        ],
        (true, true) => vec![
            header_only(Series::sum_of(st, "held port", &super::states::HELD, w)),
            header_only(Series::column(st, "TIME_WAIT port", c::PORT_TIME_WAIT, w)),
        ],
    };
    if inner.height >= 14 {
        // Room for overflows/s on a chart of their own.
        let top = Rect {
            height: inner.height / 2 + 1,
            ..inner
        };
        let bottom = Rect {
            y: top.y + top.height,
            height: inner.height - top.height,
            ..inner
        };
        line_chart(top, buf, st, w, &queue_series, &app.theme);
        let mut lower = vec![overflows];
        if shared {
            // The namespace's, every port, beside the port's: labelled as such.
            lower.push(header_only(Series::column(
                st,
                "ovfl/s netns",
                c::LISTEN_OVERFLOWS,
                w,
            )));
        }
        lower.append(&mut states);
        line_chart(bottom, buf, st, w, &lower, &app.theme);
    } else {
        queue_series.push(header_only(overflows));
        queue_series.extend(states);
        line_chart(inner, buf, st, w, &queue_series, &app.theme);
    }
}
