//! Real servers as targets: `kind = "nginx"` and `kind = "apache"` in the lab (server namespace,
//! delay router) and on loopback serve the default workload with no error statuses, their
//! access logs agree with the clients' count, and nothing they started is left running. A
//! command target's `access_log` is counted the same way; a missing log is refused at start.

mod probe_support;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::lab::controller::{Controller, RunOptions};
use synlab::scenario::TargetKind;

/// The server's binary, or None (skip, saying why; fail when CI requires every test).
fn installed(kind: TargetKind) -> bool {
    match synlab::lab::real_server::find_binary(kind) {
        Ok(_) => true,
        Err(e) if synlab::sys::privilege::require_privileged() => {
            panic!("SYNLAB_REQUIRE_PRIVILEGED=1 but {e:#}")
        }
        Err(e) => {
            eprintln!("skipped: {e:#}");
            false
        }
    }
}

fn opts(out: Option<&std::path::Path>) -> RunOptions {
    RunOptions {
        out_parent: out.map(|p| p.to_path_buf()),
        interrupted: Arc::new(AtomicBool::new(false)),
        network_fallback: false,
    }
}

fn run_for(c: &mut Controller, secs: f64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        c.pump().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Field 5 of /proc/PID/stat: the process group.
fn pgid_of(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid pgrp ...: comm may hold spaces, so after the ')'.
    let rest = &s[s.rfind(')')? + 2..];
    rest.split(' ').nth(2)?.parse().ok()
}

/// Processes in the process group the lab gave the server: the server and every worker it
/// forked.
fn group_members(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| pgid_of(*pid) == Some(pgid))
        .collect()
}

/// Runs `scenario` for a 1 s warm-up and a `hold_s` hold, stops, and checks: responses with
/// no non-2xx, the server's access-log count within 0.5 % of the clients' over the run, the
/// hold's status classes, and no process of the server's group left.
fn serves_and_agrees(scenario: &str, hold_s: f64, out: Option<&std::path::Path>) -> Controller {
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("real.toml", scenario).unwrap();
    let mut c = Controller::start(sc, opts(out)).unwrap();
    let pid = c.server_pid.expect("the lab started the server");
    let pgid = pgid_of(pid).expect("the server runs");
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(
        !cmdline.starts_with("unshare") && !cmdline.contains("/unshare"),
        "server_pid is the server's own (what the probes watch): {cmdline}"
    );
    run_for(&mut c, 1.0);
    assert!(
        group_members(pgid).len() >= 2,
        "the server runs with its workers: {:?}",
        group_members(pgid)
    );
    c.begin_point();
    run_for(&mut c, hold_s);
    let w = c.end_point().unwrap();
    let (tot, server_rate) = (w.client, w.server_rate);
    assert!(
        tot.counts.responses > 200,
        "responses {}",
        tot.counts.responses
    );
    assert_eq!(tot.counts.responses_non2xx, 0, "every response 2xx");
    assert_eq!(tot.errors(), 0, "no connection errors");
    let classes = c.point_access_counts().expect("access log counted");
    assert!(classes.lines > 200, "{classes:?}");
    assert_eq!(
        classes.lines, classes.s2xx,
        "the log's lines all 2xx: {classes:?}"
    );
    assert!(server_rate.is_some_and(|r| r > 0.0), "{server_rate:?}");
    // Stopping drops the requests in flight (the server logs some the clients never read):
    // the load pauses first and they finish, so the run's two counts cover the same requests.
    c.apply(synlab::lab::state::Command::Pause(true)).unwrap();
    run_for(&mut c, 1.0);
    c.shutdown();
    let (client, server, diff) = c.final_check.expect("server-vs-client check made");
    assert!(client > 200);
    assert!(
        diff.abs() <= 0.5,
        "client counted {client} responses, the server's access log {server} ({diff:+.2} %)"
    );
    let left = group_members(pgid);
    assert!(left.is_empty(), "server processes left: {left:?}");
    c
}

fn lab_scenario(kind: &str) -> String {
    format!(
        r#"
duration = "30s"
[target]
kind = "{kind}"
workers = 8
max_workers = 32
[load]
mode = "open"
rate = 200
timeout = "1s"
[network]
backend = "router"
[[network.path]]
name = "wan"
rtt = "20ms"
"#
    )
}

#[test]
fn nginx_in_the_lab_serves_the_default_workload_and_its_log_agrees() {
    if !probe_support::privileged("nginx in the lab") || !installed(TargetKind::Nginx) {
        return;
    }
    let c = serves_and_agrees(&lab_scenario("nginx"), 4.0, None);
    assert!(c.target_addr.ip().to_string().starts_with("198.18."));
}

#[test]
fn apache_in_the_lab_serves_the_default_workload_and_its_log_agrees() {
    if !probe_support::privileged("Apache in the lab") || !installed(TargetKind::Apache) {
        return;
    }
    let c = serves_and_agrees(&lab_scenario("apache"), 4.0, None);
    assert!(c.target_addr.ip().to_string().starts_with("198.18."));
}

/// Loopback, no namespaces: runs as any user (the server then stays that user). The run
/// folder keeps the generated config and the server's logs.
#[test]
fn nginx_and_apache_on_loopback_keep_config_and_logs_in_the_run_folder() {
    for (kind, name, conf) in [
        (TargetKind::Nginx, "nginx", "nginx.conf"),
        (TargetKind::Apache, "apache", "apache.conf"),
    ] {
        if !installed(kind) {
            continue;
        }
        let out = tempfile::tempdir().unwrap();
        let sc = format!(
            "name = \"lo-{name}\"\n[target]\nkind = \"{name}\"\nworkers = 2\nbacklog = 256\n\
             extra_config = [\"# extra from the scenario\"]\n\
             [load]\nmode = \"open\"\nrate = 300\nworkload = \"specweb96_class1\"\n"
        );
        let c = serves_and_agrees(&sc, 2.0, Some(out.path()));
        assert!(c.target_addr.ip().is_loopback());
        let dir = c.folder_dir().unwrap().join(name);
        let text = std::fs::read_to_string(dir.join(conf)).unwrap();
        assert!(text.contains("# extra from the scenario"), "{text}");
        assert!(text.contains("256"), "backlog in the config: {text}");
        let log = std::fs::read_to_string(dir.join("access.log")).unwrap();
        assert!(
            log.contains("/specweb96/class1_"),
            "{name} served the SPECweb96 files"
        );
        let summary =
            std::fs::read_to_string(c.folder_dir().unwrap().join("summary.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert!(
            v["meta"]["access_log"]["run"]["lines"].as_u64() > Some(200),
            "{}",
            v["meta"]["access_log"]
        );
        assert!(v["meta"]["check_responses"]["agree"].as_bool().unwrap());
    }
}

/// A command target (nginx with a config of the user's) with `access_log`: counted as the
/// server's own responses, 404s in their class.
#[test]
fn a_command_targets_access_log_is_the_servers_count() {
    if !installed(TargetKind::Nginx) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    std::fs::create_dir_all(dir.path().join("root/bytes")).unwrap();
    std::fs::write(dir.path().join("root/bytes/1294"), vec![b'x'; 1294]).unwrap();
    // The config is the user's: it names its port, and the scenario says which.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let user = if nix::unistd::geteuid().is_root() {
        "user root root;\n"
    } else {
        ""
    };
    std::fs::write(
        dir.path().join("nginx.conf"),
        format!(
            "{user}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log {d}/access.log; client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi;\n\
             scgi_temp_path {d}/scgi;\n\
             server {{ listen 127.0.0.1:{port}; root {d}/root; }} }}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("access.log"), "").unwrap();
    let nginx = synlab::lab::real_server::find_binary(TargetKind::Nginx).unwrap();
    let nginx = nginx.display();
    let sc = format!(
        "[target]\nkind = \"command\"\nport = {port}\ncommand = \"{nginx} -p {d}/ -e {d}/error.log -c {d}/nginx.conf -g 'daemon off;'\"\n\
         access_log = \"{d}/access.log\"\n[load]\nmode = \"open\"\nrate = 300\n\
         [[load.mix]]\npath = \"/bytes/1294\"\nweight = 0.9\n[[load.mix]]\npath = \"/missing\"\nweight = 0.1\n"
    );
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let sc = synlab::scenario::parse("cmd.toml", &sc).unwrap();
    let mut c = Controller::start(sc, opts(None)).unwrap();
    run_for(&mut c, 0.5);
    c.begin_point();
    run_for(&mut c, 2.0);
    let tot = c.end_point().unwrap().client;
    let classes = c.point_access_counts().unwrap();
    assert!(tot.counts.responses > 200, "{}", tot.counts.responses);
    assert!(classes.s4xx > 0 && classes.s2xx > 0, "{classes:?}");
    assert_eq!(classes.lines, classes.s2xx + classes.s4xx, "{classes:?}");
    c.apply(synlab::lab::state::Command::Pause(true)).unwrap();
    run_for(&mut c, 1.0);
    c.shutdown();
    let (client, server, diff) = c.final_check.unwrap();
    assert!(
        diff.abs() <= 0.5,
        "client {client}, log {server} ({diff:+.2} %)"
    );
}

#[test]
fn a_missing_access_log_is_refused_at_start_naming_it() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sc = format!(
        "[target]\nkind = \"address\"\naddress = \"{}\"\naccess_log = \"/nonexistent/synlab-test/access.log\"\n",
        l.local_addr().unwrap()
    );
    let sc = synlab::scenario::parse("addr.toml", &sc).unwrap();
    let e = Controller::start(sc, opts(None)).err().expect("refused");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("/nonexistent/synlab-test/access.log") && msg.contains("target.access_log"),
        "{msg}"
    );
}
