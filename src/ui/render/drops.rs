//! The drops view (`y`, issue 48): "what the kernel dropped, and why". The namespace's drop
//! counters in words (model::drops), their rates of the last second, the largest first; SYN
//! cookies said as such; then the kernel's own reasons (skb:kfree_skb, machine-wide) when
//! synlab counts them, or which view the user gets and why not.

use super::common::{headline, num, panel, wrap};
use super::udp::quic_load;
use crate::lab::state::LabState;
use crate::model::col as c;
use crate::model::drops::{top, DROP_REASONS};
use crate::model::kreasons::{KernelReasons, KernelView};
use crate::ui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

/// The view's lines for a panel `width` wide.
pub fn lines(app: &App, st: &LabState, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = Vec::new();
    let measured = DROP_REASONS.iter().any(|r| st.store.col(r.col).is_some());
    if !measured {
        out.extend(wrap(
            "the namespace's drop counters (TcpExt/Udp) are not read on this run",
            "",
            width,
            t.text(),
        ));
    } else {
        let reasons = top(|col| headline(st, col));
        if reasons.is_empty() {
            out.push(Line::from(Span::styled(
                "nothing dropped in the last second (namespace's TcpExt/Udp counters)",
                t.ok(),
            )));
        } else {
            out.push(Line::from(Span::styled(
                "the last second, per namespace (TcpExt/Udp counters), the largest first:",
                t.label(),
            )));
        }
        for (r, rate) in reasons {
            let head = format!("{:>7}/s  ", num(rate));
            let text = format!("{}  ({})", r.words, r.counter);
            for (i, l) in wrap(&text, &head, width, t.warn()).into_iter().enumerate() {
                // The figure in the warning colour, its words in text colour.
                let s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                if i == 0 {
                    out.push(Line::from(vec![
                        Span::styled(s[..head.len()].to_string(), t.warn()),
                        Span::styled(s[head.len()..].to_string(), t.text()),
                    ]));
                } else {
                    out.push(Line::from(Span::styled(s, t.text())));
                }
            }
        }
        if let Some(line) = cookies(st) {
            out.extend(wrap(&line, "", width, t.notice()));
        }
    }
    out.push(Line::from(""));
    match &st.kernel_reasons {
        None => out.extend(wrap(
            "the kernel's own reasons (skb:kfree_skb): not counted on this run",
            "",
            width,
            t.text(),
        )),
        // Not the host's root: no key turns them on, and a refusal's raw words (tracefs, EPERM)
        // are run.log's.
        Some(KernelView {
            reasons: KernelReasons::NotCounted(_),
            ..
        }) if !app.host_root => out.extend(wrap(NEEDS_ROOT, "", width, t.text())),
        Some(k) => {
            for (i, l) in k.reasons.lines().into_iter().enumerate() {
                // The head wraps; a reason's row keeps its columns.
                if i == 0 {
                    out.extend(wrap(&l, "", width, t.label()));
                } else {
                    out.push(Line::from(Span::styled(l, t.text())));
                }
            }
            // Over HTTP/3 no accept queue: the overflows' cross-check is TCP's, not this load's.
            if quic_load(st) {
                out.extend(wrap(OVER_QUIC, "", width, t.text()));
            } else if let Some(check) = &k.overflow {
                let style = if check.consistent() { t.ok() } else { t.warn() };
                out.extend(wrap(&check.to_string(), "", width, style));
            }
        }
    }
    out
}

/// Why a run that is not the host's root has no kernel's reasons, in place of the offer of a
/// key that would fail.
const NEEDS_ROOT: &str = "the kernel's own reasons (skb:kfree_skb): needs root, the kernel's \
     tracepoints; synlab runs as a plain user here, so Y cannot turn them on. The reasons above \
     are the namespace's TcpExt/Udp counters, which any user may read";

/// Over HTTP/3, in place of the accept queue's cross-check.
const OVER_QUIC: &str = "the load is QUIC (UDP): no accept queue, so no ListenOverflows \
     cross-check; the server's dropped datagrams are in the UDP panel (drops/s port, \
     RcvbufErrors/s)";

/// With SYN cookies at work: "SYN cookies: 1.2k sent/s, 1.1k validated/s: ...".
fn cookies(st: &LabState) -> Option<String> {
    let rate = |col| headline(st, col).unwrap_or(0.0);
    cookies_line(
        rate(c::SYNCOOKIES_SENT_PER_S),
        rate(c::SYNCOOKIES_RECV_PER_S),
    )
}

/// What SYN cookies at `sent`/s and `validated`/s say. The counters do not tell a full SYN
/// queue (tcp_syncookies = 1) from cookies for every SYN (= 2): the kernel counts
/// TCPReqQFullDoCookies for each cookie either way (measured on 6.18 with 2: one per SYN).
pub fn cookies_line(sent: f64, validated: f64) -> Option<String> {
    (sent > 0.0 || validated > 0.0).then(|| {
        format!(
            "SYN cookies: {} sent/s, {} validated/s: the kernel answers SYNs with cookies \
             instead of SYN queue entries (its SYN queue is full, or net.ipv4.tcp_syncookies \
             = 2 answers every SYN so); a validated cookie is a connection made where a SYN \
             would have been dropped",
            num(sent),
            num(validated)
        )
    })
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let inner = panel(
        area,
        buf,
        "what the kernel dropped, and why (y closes)",
        &app.theme,
    );
    Paragraph::new(lines(app, st, inner.width)).render(inner, buf);
}

#[cfg(test)]
mod tests {
    #[test]
    fn cookies_say_sent_and_validated_and_why() {
        assert_eq!(super::cookies_line(0.0, 0.0), None);
        let l = super::cookies_line(1200.0, 1100.0).unwrap();
        assert!(
            l.contains("1.2k sent/s") && l.contains("1.1k validated/s"),
            "{l}"
        );
        assert!(l.contains("tcp_syncookies"), "{l}");
    }
}
