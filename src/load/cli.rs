//! `synlab worker` (hidden): a load worker started by the controller. Thin: checks the
//! configuration, raises the descriptor limit, starts the stdin control reader, runs the engine.

use super::engine::Engine;
use super::protocol::{BadControl, Control, WorkerConfig, WorkerNotice};
use super::{rates, validate};
use crate::sys::client_io::{raise_nofile, EventFd};
use anyhow::Context;
use std::io::BufRead;
use std::sync::Arc;

/// Runs a worker from its JSON configuration until Stop, stdin EOF or its duration bound.
pub fn worker_main(config_json: &str) -> anyhow::Result<()> {
    let cfg: WorkerConfig = serde_json::from_str(config_json)
        .context("worker config is not valid JSON for WorkerConfig")?;
    validate::check_target(cfg.target)?;
    // Where this worker's namespace would route the target from, before any socket connects.
    let source = crate::sys::route::source_for(cfg.target)
        .with_context(|| format!("no route to the target {} here", cfg.target))?;
    validate::check_route(cfg.target, source)?;
    validate::check_config(&cfg)?;
    let mut notices = Vec::new();
    let want = rates::fds_needed(&cfg);
    match raise_nofile(want) {
        Ok(c) => {
            if c.new_soft > c.old_soft {
                notices.push(WorkerNotice::RaisedNofile {
                    from: c.old_soft,
                    to: c.new_soft,
                    needs: want,
                });
            }
            if c.new_soft < want {
                let nr_open = crate::sys::procfs::nr_open().unwrap_or(c.hard);
                notices.push(WorkerNotice::NofileShort {
                    soft: c.new_soft,
                    hard: c.hard,
                    needs: want,
                    nr_open,
                    sys_resource: crate::sys::privilege::Privileges::current().sys_resource,
                    host_root: crate::sys::userns::host_root(),
                });
            }
        }
        Err(e) => notices.push(WorkerNotice::NofileFailed {
            needs: want,
            error: e.to_string(),
        }),
    }
    let (tx, rx) = crossbeam_channel::unbounded();
    let wake = Arc::new(EventFd::new()?);
    let waker = Arc::clone(&wake);
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || read_controls(tx, &waker))?;
    Engine::new(cfg, rx, wake, notices)?.run()
}

/// Reads Control lines from stdin; EOF (the controller closed the pipe or died) means Stop.
fn read_controls(tx: crossbeam_channel::Sender<Result<Control, BadControl>>, wake: &EventFd) {
    let notify = || wake.notify();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let msg = Control::parse(&line);
        if tx.send(msg).is_err() {
            return;
        }
        notify();
    }
    let _ = tx.send(Ok(Control::Stop));
    notify();
}
