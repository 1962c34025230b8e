//! Measurement windows (a sweep point's hold, a TUI stretch of settings): opened, peeked at
//! and closed, with the client's, the paths', the server's and the access log's figures.

use super::{Effect, LabCore, OpenWindow};
use crate::lab::client_agg::ClientTotals;
use crate::metrics::window::SampleWindow;

/// Named shares of the client figures (paths, classes) over a window.
type Shares = Vec<(String, ClientTotals)>;

/// The shortest stretch of one setting a TUI session summarises.
pub const MIN_STRETCH_S: f64 = 3.0;

/// A measurement window once it has ended.
#[derive(Debug, Clone)]
pub struct Window {
    /// Start and end, seconds since the run started (controller clock).
    pub t0: f64,
    pub t1: f64,
    /// The workers' reports that arrived in it.
    pub client: ClientTotals,
    /// The same, per `[[network.path]]` (name, totals); empty on loopback.
    pub paths: Vec<(String, ClientTotals)>,
    /// The same, per request class (label, totals): the classes that reported in it.
    pub classes: Vec<(String, ClientTotals)>,
    /// The server's own responses/s and count in it (built-in server), when it reported.
    pub server_rate: Option<f64>,
    pub server_responses: Option<u64>,
    /// The server's own count of its TLS handshakes in it (full, resumed), when it counts them.
    pub server_tls: Option<(u64, u64)>,
    /// Over HTTP/3, the server's own count of its QUIC handshakes and Retry packets sent in it.
    pub server_quic: Option<(u64, u64)>,
    /// What the built-in server measured of the latency split in it (accept-queue waits,
    /// service), when it reported.
    pub server_times: Option<crate::model::latency_split::ServerTimes>,
    /// The sample rows in it: their means and maxima, and the values at its opening edge.
    pub rows: SampleWindow,
}

impl LabCore {
    /// Starts counting a measurement window at `now_s`.
    pub(super) fn begin_window(&mut self, now_s: f64) {
        for p in &mut self.paths {
            p.window.reset();
        }
        self.open_class_windows();
        self.access.at_point = self.access.last;
        self.point = Some(OpenWindow {
            t0: now_s,
            client: ClientTotals::default(),
            server_at_open: self.server_last.clone(),
            rows: SampleWindow::open(now_s, &self.state.store),
        });
    }

    /// Ends the window at `now_s` and returns it. The server's rate is taken between its own
    /// reports (every 100 ms), over the time they say passed, so it does not depend on where
    /// the window's edges fell.
    pub(super) fn end_window(&mut self, now_s: f64) -> Option<Window> {
        let open = self.point.take()?;
        self.access.point = self
            .access
            .last
            .map(|b| b.since(&self.access.at_point.unwrap_or_default()));
        let paths = self
            .paths
            .iter_mut()
            .map(|p| (p.name.clone(), std::mem::take(&mut p.window)))
            .collect();
        let classes = self.take_class_windows();
        Some(self.window(open, (paths, classes), now_s))
    }

    /// The open window as it stands at `now_s`, left open (the TUI's live verdicts).
    pub fn peek_window(&self, now_s: f64) -> Option<Window> {
        let open = self.point.clone()?;
        let paths = self
            .paths
            .iter()
            .map(|p| (p.name.clone(), p.window.clone()))
            .collect();
        let classes = self.class_windows();
        Some(self.window(open, (paths, classes), now_s))
    }

    /// The start of the open window, if one is open.
    pub fn window_start(&self) -> Option<f64> {
        self.point.as_ref().map(|p| p.t0)
    }

    fn window(&self, open: OpenWindow, (paths, classes): (Shares, Shares), t1: f64) -> Window {
        // An access log synlab cannot trust (lines it cannot read, the server's own, a lag)
        // gives no server's count at all: not a figure, not a cross-check that agrees.
        let server_last = self
            .server_last
            .as_ref()
            .filter(|_| self.access_log_issue().is_none());
        let since = match (&open.server_at_open, server_last) {
            (Some(a), Some(b)) => b.responses_since(a),
            _ => None,
        };
        let (server_responses, server_rate) = since.unzip();
        let (server_tls, server_quic) =
            self.server_handshakes(open.server_at_open.as_ref(), server_last);
        let server_times =
            super::latency_split::server_times(open.server_at_open.as_ref(), server_last);
        Window {
            server_times,
            t0: open.t0,
            t1,
            client: open.client,
            paths,
            classes,
            server_rate,
            server_responses,
            server_tls,
            server_quic,
            rows: open.rows,
        }
    }

    /// Closes the TUI's current stretch of settings into a summary row and opens the next.
    pub(super) fn end_stretch(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        self.close_stretch(now_s, fx);
        self.begin_window(now_s);
    }

    /// Closes the session's last stretch, and says the short ones not yet said.
    pub fn end_stretch_now(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        self.close_stretch(now_s, fx);
        fx.extend(self.unsummarised.take_line().map(Effect::Log));
    }

    /// Closes the open window into a summary row (numbered by the runtime), under the settings
    /// it ran with. A stretch shorter than `MIN_STRETCH_S` (keys pressed in a row) is too short
    /// to summarise and a paused one measured nothing: only logged, the short ones of a burst
    /// in one line (a burst of keys once wrote 150 lines).
    fn close_stretch(&mut self, now_s: f64, fx: &mut Vec<Effect>) {
        let Some(t0) = self.window_start() else {
            return;
        };
        let len = now_s - t0;
        let Some(window) = self.end_window(now_s) else {
            return;
        };
        let paused = self.state.knobs.paused;
        if len < MIN_STRETCH_S {
            self.unsummarised.add(t0, now_s, paused);
            return;
        }
        fx.extend(self.unsummarised.take_line().map(Effect::Log));
        if paused {
            fx.push(Effect::Log(format!(
                "[{now_s:.1}s] a stretch of {len:.1} s with the load paused is not summarised"
            )));
        } else {
            let row = self.summary_row(0, window);
            fx.push(Effect::Summary(Box::new(row)));
        }
    }
}

/// Stretches shorter than `MIN_STRETCH_S` closed one after another (a burst of keys, a pause
/// toggled): said in one run.log line once a longer stretch ends or the session does.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Unsummarised {
    from_s: f64,
    to_s: f64,
    n: u32,
    /// Those with the load paused among them.
    paused: u32,
}

impl Unsummarised {
    fn add(&mut self, t0: f64, t1: f64, paused: bool) {
        if self.n == 0 {
            self.from_s = t0;
        }
        self.to_s = t1;
        self.n += 1;
        self.paused += u32::from(paused);
    }

    /// The run.log line for the burst (None: there was none); the next one starts afresh.
    fn take_line(&mut self) -> Option<String> {
        let b = std::mem::take(self);
        let (from, to) = (b.from_s, b.to_s);
        match (b.n, b.paused) {
            (0, _) => None,
            (1, 1) => Some(format!(
                "[{to:.1}s] a stretch of {} s with the load paused is not summarised",
                short_len(to - from)
            )),
            (1, _) => Some(format!(
                "[{to:.1}s] a stretch of {} s is too short to summarise (under {MIN_STRETCH_S} s); its samples are in timeseries.csv",
                short_len(to - from)
            )),
            (n, p) => Some(format!(
                "[{from:.1}s to {to:.1}s] {n} stretches in a row were too short to summarise (each under {MIN_STRETCH_S} s{}); their samples are in timeseries.csv",
                if p > 0 { format!(", {p} with the load paused") } else { String::new() }
            )),
        }
    }
}

/// A stretch's length under `MIN_STRETCH_S` as run.log says it: to 0.01 s, rounded down so
/// that it never reads as the minimum itself ("a stretch of 3.0 s is ... under 3 s").
pub fn short_len(len_s: f64) -> String {
    let down = (len_s * 100.0).floor() / 100.0;
    format!("{:.2}", down.min(MIN_STRETCH_S - 0.01))
}
