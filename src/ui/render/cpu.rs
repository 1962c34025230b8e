//! Panel: CPU of the host: total user/system/irq/softirq/idle as a stacked bar, the server's
//! own CPUs and the load's as one bar each (when the lab split them), the server's processes'
//! and the load's (workers, router, controller) own CPU, then one bar per core (user, system,
//! irq+softirq).

use super::common::{line_chart, num, num_or_na, pack, panel, Series, Window};
use crate::lab::state::LabState;
use crate::model::{col as c, Col};
use crate::ui::app::App;
use crate::ui::theme::{Theme, CPU_GLYPHS};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

/// A stacked bar of `parts` (percent) in `width` cells; the rest is idle.
fn bar(parts: &[f64], glyph_of: &[usize], width: usize, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut used = 0usize;
    let mut acc = 0.0;
    for (p, &g) in parts.iter().zip(glyph_of) {
        acc += p.max(0.0);
        // Cumulative rounding so the parts add up to the total exactly.
        let end = ((acc / 100.0) * width as f64).round().min(width as f64) as usize;
        let n = end.saturating_sub(used);
        if n > 0 {
            spans.push(Span::styled(
                CPU_GLYPHS[g].to_string().repeat(n),
                theme.cpu(g),
            ));
        }
        used += n;
    }
    spans.push(Span::styled(
        CPU_GLYPHS[4].to_string().repeat(width - used),
        theme.frame(),
    ));
    spans
}

/// A share in percent, "n/a" when never measured.
fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |v| format!("{}%", num(v)))
}

/// The processes' own CPU (each in % of one CPU, from their pids; the bars above are the
/// CPUs'): "procs: server 51%  load 28% (workers 12%)  probes 0.4%". Packed in groups,
/// so a narrow panel wraps between figures rather than cutting one. The server's reads why it
/// is missing: the probe has no pid to read (an address target).
fn procs_lines(st: &LabState, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let last = |k: Col| super::common::headline(st, k);
    let measured = st.store.col(c::SERVER_CPU_USER_PCT).is_some();
    let srv = match (last(c::SERVER_CPU_USER_PCT), last(c::SERVER_CPU_SYS_PCT)) {
        (Some(u), Some(s)) => pct(Some(u + s)),
        _ if measured => "-".into(),
        _ => "n/a (no pid)".into(),
    };
    let kv = |k: &str, v: String| {
        vec![
            Span::styled(format!("{k} "), theme.text()),
            Span::styled(v, theme.label()),
        ]
    };
    let mut server = vec![Span::styled("procs: ", theme.label())];
    server.extend(kv("server", srv));
    let mut load = kv("load", pct(last(c::LOAD_CPU)));
    load.extend(kv(" (workers", format!("{})", pct(last(c::WORKER_CPU)))));
    pack(
        vec![server, load, kv("probes", pct(last(c::PROBE_CPU)))],
        "  ",
        width,
    )
}

pub fn render(area: Rect, buf: &mut Buffer, app: &App, st: &LabState) {
    let theme = &app.theme;
    let inner = panel(area, buf, "CPU %", theme);
    // Headline figures: the mean of the last second's rows (the bars too).
    let last = |k: Col| super::common::headline(st, k);
    let label_w = 7usize;
    let bar_w = (inner.width as usize).saturating_sub(label_w + 6).max(4);
    let mut lines = Vec::new();
    let legend = ["usr", "sys", "irq", "sirq"]
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            [
                Span::styled(CPU_GLYPHS[i].to_string(), theme.cpu(i)),
                Span::styled(format!("{n} "), theme.text()),
                Span::raw(format!(
                    "{} ",
                    num_or_na(last(
                        [c::CPU_USER, c::CPU_SYSTEM, c::CPU_IRQ, c::CPU_SOFTIRQ][i]
                    ))
                )),
            ]
        })
        .chain([Span::styled(
            format!("idle {}", num_or_na(last(c::CPU_IDLE))),
            theme.text(),
        )])
        .collect::<Vec<_>>();
    lines.push(Line::from(legend));
    let total = [c::CPU_USER, c::CPU_SYSTEM, c::CPU_IRQ, c::CPU_SOFTIRQ].map(last);
    let mut all = vec![Span::styled(format!("{:<label_w$}", "all"), theme.label())];
    if total.iter().all(Option::is_none) {
        all.push(Span::raw("n/a"));
    } else {
        let parts = total.map(|v| v.unwrap_or(0.0));
        all.extend(bar(&parts, &[0, 1, 2, 3], bar_w, theme));
        all.push(Span::raw(format!("{:>5.0}", parts.iter().sum::<f64>())));
    }
    lines.push(Line::from(all));
    // The server's CPUs and the load's, each as one bar: irq and softirq apart here, since
    // the server's softirq is what it pays for the packets it receives.
    for (label, cols) in [
        (
            "server",
            [
                c::SERVER_CORES_USER,
                c::SERVER_CORES_SYSTEM,
                c::SERVER_CORES_IRQ,
                c::SERVER_CORES_SOFTIRQ,
            ],
        ),
        (
            "load",
            [
                c::LOAD_CORES_USER,
                c::LOAD_CORES_SYSTEM,
                c::LOAD_CORES_IRQ,
                c::LOAD_CORES_SOFTIRQ,
            ],
        ),
    ] {
        let v = cols.map(last);
        if v.iter().all(Option::is_none) {
            continue;
        }
        let parts = v.map(|x| x.unwrap_or(0.0));
        let mut l = vec![Span::styled(format!("{label:<label_w$}"), theme.label())];
        l.extend(bar(&parts, &[0, 1, 2, 3], bar_w, theme));
        l.push(Span::raw(format!("{:>5.0}", parts.iter().sum::<f64>())));
        lines.push(Line::from(l));
    }
    lines.extend(procs_lines(st, inner.width, theme));
    // Per core, as many as fit; the last line says how many were folded away.
    let room = (inner.height as usize).saturating_sub(lines.len());
    let n = st.cpu_cores.len();
    let shown = if n <= room { n } else { room.saturating_sub(1) };
    for (i, core) in st.cpu_cores.iter().take(shown).enumerate() {
        let mut l = vec![Span::styled(
            format!("{:<label_w$}", format!("cpu{i}")),
            theme.label(),
        )];
        l.extend(bar(&core[..3], &[0, 1, 2], bar_w, theme));
        l.push(Span::raw(format!("{:>5.0}", core[..3].iter().sum::<f64>())));
        lines.push(Line::from(l));
    }
    if shown < n && room > 0 {
        lines.push(Line::from(Span::styled(
            format!("+{} cores (enlarge to see)", n - shown),
            theme.text(),
        )));
    }
    let used = (lines.len() as u16).min(inner.height);
    Paragraph::new(lines).render(inner, buf);
    // Spare rows: the CPU split over time.
    let rest = Rect {
        y: inner.y + used,
        height: inner.height - used,
        ..inner
    };
    if rest.height >= 8 {
        let w = Window::of(app, st);
        let series = [
            Series::column(st, "usr", c::CPU_USER, w),
            Series::column(st, "sys", c::CPU_SYSTEM, w),
            Series::sum(st, "irq+sirq", c::CPU_IRQ, c::CPU_SOFTIRQ, w),
        ];
        line_chart(rest, buf, st, w, &series, theme);
    }
}
