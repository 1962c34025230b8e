//! The one inbox and the core's effects: messages folded with the time, rows written, knob
//! changes sent to the workers and the network lab, windows opened and closed, marks and
//! steps, the TUI's live verdicts.

use super::*;

/// What a batch of effects left for its caller.
#[derive(Default)]
pub(super) struct Done {
    /// A command's reply.
    pub reply: Option<Reply>,
    /// A window that ended.
    pub window: Option<Window>,
    /// The first row that could not be written (every effect after it was still carried out).
    pub error: Option<anyhow::Error>,
}

impl Done {
    /// The batch as a result: its first error, else what it left.
    pub fn result(mut self) -> anyhow::Result<Self> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }
}

impl Controller {
    /// Folds every message waiting in the inbox.
    pub(super) fn pump_messages(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            self.fold_msg(m);
        }
    }

    /// Sleeps until a message arrives, the core has something due ([`LabCore::next_due_s`]) or
    /// `at_most` passes, and folds the message that woke it. A headless run waits here, not
    /// in a 10 ms poll of the inbox: its thread shares the load's CPUs (issue 26), where 100
    /// wake-ups a second cost the load 0.4 % of a CPU (issue 44). The inbox is std's channel,
    /// not crossbeam's: crossbeam's blocking receive yields the CPU four times before it
    /// sleeps, and on the load's busy CPU each yield is a context switch and a wait of a time
    /// slice (measured: 42 wake-ups/s where the messages come 10 times a second).
    pub fn wait_for_input(&mut self, at_most: std::time::Instant) {
        let now_s = self.elapsed();
        let due_in = (self.core.next_due_s(now_s) - now_s).clamp(0.0, 3600.0);
        let until = at_most.min(self.rt.clock.now() + std::time::Duration::from_secs_f64(due_in));
        if let Some(m) = self.rt.clock.recv_until(&self.rx, until) {
            self.fold_msg(m);
        }
    }

    /// Folds an input that writes no row (so nothing can fail; a failure would only be logged).
    pub(super) fn fold_msg(&mut self, m: Input) {
        let done = self.fold(m);
        if let Some(e) = done.error {
            self.log(&format!("{e:#}"));
        }
    }

    /// Folds an input now and carries out its effects.
    pub(super) fn fold(&mut self, input: Input) -> Done {
        let now = self.elapsed();
        self.fold_at(input, now)
    }

    pub(super) fn fold_at(&mut self, input: Input, now_s: f64) -> Done {
        let mut fx = Vec::new();
        self.core.fold(input, now_s, &mut fx);
        let mut done = Done::default();
        self.carry_out_into(fx, now_s, &mut done);
        done
    }

    /// Carries out the core's effects in order, every one of them: a row that cannot be
    /// written (the only error) does not drop what follows it (a deadline's pause), and the
    /// first such error is returned once all are done.
    pub(super) fn carry_out(&mut self, fx: Vec<Effect>) -> anyhow::Result<Done> {
        let mut done = Done::default();
        let now = self.elapsed();
        self.carry_out_into(fx, now, &mut done);
        done.result()
    }

    fn carry_out_into(&mut self, fx: Vec<Effect>, now_s: f64, done: &mut Done) {
        for e in fx {
            match e {
                Effect::Send { worker, msgs } => {
                    if let Some(w) = self.workers.get_mut(worker) {
                        for m in msgs {
                            let _ = w.send_line(&serde_json::to_string(&m).expect("serializes"));
                        }
                    }
                }
                Effect::Path(profiles) => {
                    // The core holds the change once the lab has it, or keeps the knobs.
                    let applied = self.apply_paths(&profiles);
                    // A key's refusal goes only to the message line in the core: the lab's
                    // (the router's answer, a failed `tc`) is the run's record too.
                    if let Err(f) = &applied {
                        self.log(&format!(
                            "[{now_s:.1}s] path {} unchanged: {}",
                            f.path, f.why
                        ));
                    }
                    let mut then = Vec::new();
                    self.core
                        .fold(Input::PathApplied(applied), now_s, &mut then);
                    self.carry_out_into(then, now_s, done);
                }
                Effect::Row { t, cols } => {
                    if let Err(e) = self.recorder.row(t, &cols) {
                        done.error.get_or_insert(e);
                    }
                }
                Effect::Log(line) => self.log(&line),
                Effect::Window(w) => done.window = Some(*w),
                Effect::Summary(mut row) => {
                    row.point = self.recorder.points().len() + 1;
                    self.keep_point_access(row.point);
                    self.recorder.summary_point(*row);
                }
                Effect::Reply(r) => done.reply = Some(r),
                // The step goes on with the setting as it was: run.log says why.
                Effect::Syncookies(n) => {
                    if let Err(e) = self.set_syncookies(n) {
                        self.log(&format!(
                            "[{now_s:.1}s] net.ipv4.tcp_syncookies = {n} not set: {e:#}"
                        ));
                    }
                }
            }
        }
    }

    /// Starts counting a measurement window (a sweep point's hold).
    pub fn begin_point(&mut self) {
        self.pump_messages();
        self.fold_msg(Input::BeginWindow);
    }

    /// Ends the window and returns it: its start and end, the client totals, and the server's
    /// responses in it.
    pub fn end_point(&mut self) -> Option<Window> {
        self.pump_messages();
        self.fold(Input::EndWindow).window
    }

    /// The open window as it stands now, left open (the TUI's live threshold verdicts).
    pub fn peek_point(&self) -> Option<Window> {
        self.core.peek_window(self.elapsed())
    }

    pub fn mark(&mut self, label: &str) {
        self.fold_msg(Input::Mark(label.to_string()));
    }

    /// Jumps to the scenario's next step.
    pub fn skip_to_next_step(&mut self) -> Option<String> {
        // The stretch the step's change may close holds every report that came before it.
        self.pump_messages();
        let mut fx = Vec::new();
        let now = self.elapsed();
        let caption = self.core.next_step(now, &mut fx);
        if let Err(e) = self.carry_out(fx) {
            self.log(&format!("{e:#}"));
        }
        caption
    }

    /// Every 2 s in the TUI: the scenario's thresholds judged on the session so far, for the
    /// status line (the final verdicts are taken when the session ends).
    pub(super) fn live_verdicts(&mut self, now_s: f64) {
        if !self.core.verdicts_due(now_s) {
            return;
        }
        let gate = &self.gate;
        if gate.is_empty() {
            return;
        }
        if let Some(w) = self.peek_point() {
            // This stretch of settings as a point, the session's earlier stretches with it for
            // the thresholds over the whole run.
            let mut rows = self.recorder.points().to_vec();
            let row = self.core.summary_row(rows.len() + 1, w);
            let mut v = gate.judge_point(&row);
            rows.push(row);
            v.extend(gate.judge_run(&rows));
            self.fold_msg(Input::Verdicts(v));
        }
    }

    /// The clients' kernels' count of connects: `Tcp: ActiveOpens` of /proc/net/snmp summed
    /// over the lab's client namespaces (read from a thread inside each). None without a lab
    /// or when one cannot be read (said in run.log).
    pub(super) fn client_active_opens(&mut self) -> Option<u64> {
        match self.net.as_ref()?.client_active_opens() {
            Ok(n) => Some(n),
            Err(e) => {
                self.log(&format!("client TcpActiveOpens unreadable: {e:#}"));
                None
            }
        }
    }
}
