//! Real servers as targets: `kind = "nginx"` and `kind = "apache"` in the lab (server namespace,
//! delay router) and on loopback serve the default workload with no error statuses, their
//! access logs agree with the clients' count, and nothing they started is left running. A
//! command target's `access_log` is counted the same way; a missing log is refused at start.

mod h3_support;
mod lab_support;
mod probe_support;
mod totals_support;

use lab_support::{opts, run_for};
use synlab::lab::controller::Controller;
use synlab::scenario::TargetKind;
use totals_support::assert_identities;

use lab_support::real_server_installed as installed;

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
    let classes = c.core().point_access_counts().expect("access log counted");
    assert!(classes.lines > 200, "{classes:?}");
    assert_eq!(
        classes.lines, classes.s2xx,
        "the log's lines all 2xx: {classes:?}"
    );
    assert!(server_rate.is_some_and(|r| r > 0.0), "{server_rate:?}");
    // Stopping drops the requests in flight (the server logs some the clients never read):
    // the load pauses first and they finish, so the run's two counts cover the same requests.
    c.apply(synlab::lab::knobs::Command::Pause(true))
        .into_result()
        .unwrap();
    run_for(&mut c, 1.0);
    c.shutdown().unwrap();
    let (client, server, diff) = c.core().final_check().expect("server-vs-client check made");
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
    // Its scoreboard was read (mod_status) and kept out of the access log (the counts above
    // agree within 0.5 %).
    let busy = c.state().store.col(synlab::model::col::SERVER_BUSY);
    assert!(
        busy.is_some_and(|v| v.iter().any(|b| b.is_finite())),
        "no busy workers read from Apache's scoreboard"
    );
}

/// issue 47 item 4: Caddy in the lab over TLS (the lab's certificate) answers synlab's load
/// (HTTP/1.1) with every response 2xx, and its JSON access log, counted as the server's own,
/// agrees with the clients: every line HTTP/1.1, one full or resumed handshake per line (no
/// keep-alive). Its admin API is off (nothing listens on 2019) and the config says so.
#[test]
fn caddy_in_the_lab_serves_https_and_its_json_log_agrees() {
    if !probe_support::privileged("Caddy in the lab") || !installed(TargetKind::Caddy) {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let sc = lab_scenario("caddy")
        .replace("workers = 8\nmax_workers = 32\n", "tls = true\n")
        .replace(
            "timeout = \"1s\"",
            "timeout = \"1s\"\n[load.tls]\nresumed = 0.5",
        );
    let c = serves_and_agrees(&sc, 4.0, Some(out.path()));
    assert!(c.target_addr.ip().to_string().starts_with("198.18."));
    let classes = c.core().access_counts().expect("access log counted");
    assert_eq!(classes.http1, classes.lines, "{classes:?}");
    assert_eq!(
        classes.tls_full + classes.tls_resumed,
        classes.lines,
        "{classes:?}"
    );
    let resumed = classes.tls_resumed as f64 / classes.lines as f64;
    assert!((resumed - 0.5).abs() < 0.05, "resumed share {resumed}");
    let dir = c.folder_dir().unwrap().join("caddy");
    let conf = std::fs::read_to_string(dir.join("caddy.conf")).unwrap();
    assert!(
        conf.contains("admin off") && conf.contains("protocols h1 h2 h3"),
        "{conf}"
    );
    // Caddy's homes are its folder: its autosaved config is there.
    assert!(dir.join("config/caddy/autosave.json").exists());
}

/// issue 47: Caddy in the lab answers HTTP/3 from a real QUIC client (quinn, tests/h3_support)
/// and from synlab's own (src/quic) in the client namespace while synlab's HTTP/1.1 load runs: every request 200 with its body,
/// Caddy's log counts the client's HTTP/3 requests by its `request.proto` and the load's
/// responses as HTTP/1.1, and pcap in the server namespace counts one first Initial per QUIC
/// connection the client made.
#[test]
fn caddy_in_the_lab_answers_http3_and_pcap_counts_its_initials() {
    if !probe_support::privileged("Caddy over HTTP/3 in the lab") || !installed(TargetKind::Caddy) {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let out = tempfile::tempdir().unwrap();
    let sc = lab_scenario("caddy")
        .replace("workers = 8\nmax_workers = 32\n", "tls = true\n")
        .replace("rate = 200", "rate = 50");
    let sc = synlab::scenario::parse("h3.toml", &sc).unwrap();
    let mut c = Controller::start(sc, opts(Some(out.path()))).unwrap();
    run_for(&mut c, 1.0);
    let netns = c.first_client_netns().unwrap().to_string();
    let server = c.target_addr;
    let ca = std::fs::read_to_string(c.folder_dir().unwrap().join("tls/ca.pem")).unwrap();
    let (conns, per) = (20u64, 5u64);
    let client = std::thread::spawn(move || {
        synlab::sys::netns::in_netns(&netns, || {
            h3_support::run(
                server,
                synlab::tls::settings::LAB_NAME,
                &ca,
                "/bytes/1294",
                conns,
                per,
            )
        })
    });
    while !client.is_finished() {
        run_for(&mut c, 0.1);
    }
    let h3 = client.join().unwrap().unwrap().unwrap();
    // Then synlab's own QUIC client (src/quic), 8 streams in flight per connection.
    let (own_conns, own_per) = (10u64, 20u64);
    let (netns, ca) = (
        c.first_client_netns().unwrap().to_string(),
        std::fs::read_to_string(c.folder_dir().unwrap().join("tls/ca.pem")).unwrap(),
    );
    let own = std::thread::spawn(move || {
        synlab::sys::netns::in_netns(&netns, || {
            let o = synlab::quic::ClientOptions::new(server, synlab::tls::settings::LAB_NAME, &ca);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            synlab::quic::run_closed(o, own_conns, own_per, 8, "/bytes/1294", deadline)
        })
    });
    while !own.is_finished() {
        run_for(&mut c, 0.1);
    }
    let own = own.join().unwrap().unwrap().unwrap();
    c.apply(synlab::lab::knobs::Command::Pause(true))
        .into_result()
        .unwrap();
    run_for(&mut c, 1.5);
    let first_initials = c
        .state()
        .store
        .last(synlab::model::col::QUIC_FIRST_INITIAL_TOTAL);
    let initials = c
        .state()
        .store
        .last(synlab::model::col::QUIC_INITIAL_IN_TOTAL);
    c.shutdown().unwrap();
    let log = c.core().access_counts().expect("access log counted");
    let (client_h1, server_lines, _) = c.core().final_check().expect("check made");
    eprintln!(
        "h3 client {h3:?}; caddy's log {log:?}; synlab's responses {client_h1}; pcap Initials \
         {initials:?}, first {first_initials:?}"
    );
    assert_eq!(
        h3,
        h3_support::H3Counts {
            connections: conns,
            requests: conns * per,
            ok: conns * per,
            body_bytes: conns * per * 1294,
        }
    );
    assert_eq!(
        own.statuses.get(&200),
        Some(&(own_conns * own_per)),
        "{own:?}"
    );
    assert_eq!(own.stats.body_bytes, own_conns * own_per * 1294);
    assert_eq!(
        own.stats.handshakes_of(synlab::quic::HandshakeKind::Full),
        own_conns
    );
    assert_eq!(own.stats.errors_total(), 0, "{:?}", own.stats.errors);
    assert_eq!(
        log.http3,
        conns * per + own_conns * own_per,
        "Caddy's HTTP/3 lines vs the clients' requests"
    );
    assert_eq!(log.http2, 0);
    assert_eq!(
        log.http1, client_h1,
        "Caddy's HTTP/1.1 lines vs synlab's responses"
    );
    assert_eq!(server_lines, log.lines);
    assert_eq!(
        first_initials,
        Some((conns + own_conns) as f64),
        "pcap's first Initials vs the clients' connections"
    );
    assert!(initials >= first_initials, "{initials:?}");
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

/// issue 42 item 6: a config nginx refuses stops the start with nginx's own `[emerg]` line and
/// the paths of files that exist (with a run folder and without one, whose temporary folder is
/// then kept); `extra_events` reaches nginx's `events {}` block.
#[test]
fn nginx_refusing_its_config_is_echoed_and_extra_events_reach_its_events_block() {
    if !installed(TargetKind::Nginx) {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    let out = tempfile::tempdir().unwrap();
    for folder in [Some(out.path()), None] {
        let sc = "[target]\nkind = \"nginx\"\nworkers = 1\n\
                  extra_config = [\"no_such_directive on;\"]\n[load]\nrate = 100\nmode = \"open\"\n";
        let sc = synlab::scenario::parse("refused.toml", sc).unwrap();
        let e = Controller::start(sc, opts(folder))
            .err()
            .expect("nginx refuses");
        let msg = format!("{e:#}");
        assert!(
            msg.contains("[emerg]") && msg.contains("no_such_directive"),
            "nginx's own line: {msg}"
        );
        assert!(!msg.contains("target.log"), "{msg}");
        let see = msg.lines().find(|l| l.starts_with("see ")).expect(&msg);
        let paths: Vec<&str> = see
            .split_whitespace()
            .map(|w| w.trim_end_matches(','))
            .filter(|w| w.starts_with('/'))
            .collect();
        assert!(paths.len() >= 2, "{msg}");
        for p in &paths {
            assert!(
                std::path::Path::new(p).is_file(),
                "{p} named but missing: {msg}"
            );
        }
        if folder.is_none() {
            // The kept temporary folder: ours to remove.
            let dir = std::path::Path::new(paths[0]).parent().unwrap();
            assert!(dir.starts_with(std::env::temp_dir()), "{msg}");
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
    let sc = "[target]\nkind = \"nginx\"\nworkers = 1\n\
              extra_events = [\"multi_accept on;\", \"worker_connections 2048;\"]\n\
              [load]\nrate = 100\nmode = \"open\"\n";
    let sc = synlab::scenario::parse("events.toml", sc).unwrap();
    let mut c = Controller::start(sc, opts(Some(out.path()))).unwrap();
    let conf = std::fs::read_to_string(c.folder_dir().unwrap().join("nginx/nginx.conf")).unwrap();
    assert!(
        conf.contains("events {\n    multi_accept on;\n    worker_connections 2048;\n}"),
        "{conf}"
    );
    run_for(&mut c, 0.5);
    c.shutdown().unwrap();
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
    let classes = c.core().point_access_counts().unwrap();
    assert!(tot.counts.responses > 200, "{}", tot.counts.responses);
    assert!(classes.s4xx > 0 && classes.s2xx > 0, "{classes:?}");
    assert_eq!(classes.lines, classes.s2xx + classes.s4xx, "{classes:?}");
    c.apply(synlab::lab::knobs::Command::Pause(true))
        .into_result()
        .unwrap();
    run_for(&mut c, 1.0);
    c.shutdown().unwrap();
    let (client, server, diff) = c.core().final_check().unwrap();
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

/// issue 14's truth test: nginx in the lab behind two paths (0 ms, and 100 ms RTT with 1 %
/// loss each way), a few seconds at 200/s. The run's counts are held against nginx's own log,
/// the SYNs pcap saw against the clients' kernels' count of connects, and each path's connect
/// p50 against its RTT.
#[test]
fn nginx_two_paths_run_totals_agree_with_its_log_pcap_and_the_clients_kernels() {
    if !probe_support::privileged("nginx truth test") || !installed(TargetKind::Nginx) {
        return;
    }
    std::env::set_var("SYNLAB_EXE", env!("CARGO_BIN_EXE_synlab"));
    // A 3 s connect timeout leaves room for one SYN retransmission (1 s RTO) plus the RTT,
    // so a lost SYN costs a retry, not an error.
    let sc = r#"
name = "truth-nginx"
duration = "6s"
[target]
kind = "nginx"
workers = 2
keepalive = false
[load]
mode = "open"
rate = 200
timeout = "3s"
[network]
backend = "router"
[[network.path]]
name = "lan"
rtt = "0ms"
[[network.path]]
name = "wan"
rtt = "100ms"
loss = "1%"
"#;
    let sc = synlab::scenario::parse("truth.toml", sc).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, rows, cut) =
        synlab::lab::run::run_scenario(sc, opts(Some(out.path())), false).unwrap();
    assert!(!cut, "not interrupted");
    assert!(rows.iter().all(|r| !r.failed), "{rows:?}");
    let dir = dir.expect("a run folder");
    let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let t = &v["run_totals"];
    let n = |k: &str| {
        t[k].as_u64()
            .unwrap_or_else(|| panic!("run_totals.{k} missing: {t}"))
    };
    let e = |k: &str| t["errors_by_kind"][k].as_u64().unwrap();

    // 1. Responses against nginx's access log (a fresh file in the run folder: every line was
    // written during the run). Each response the clients counted was answered, so logged:
    // responses <= lines. A logged request without a counted response is one whose client
    // gave up or failed after sending it (response timeout, reset, bad response) or that was
    // still open at the drain's bound (in_flight_at_end), so
    // lines <= responses + in_flight_at_end + response_timeouts + resets + bad_responses.
    let log = std::fs::read_to_string(dir.join("nginx/access.log")).unwrap();
    let lines = log.lines().filter(|l| !l.trim().is_empty()).count() as u64;
    let responses = n("responses");
    let after_request =
        n("in_flight_at_end") + e("response_timeouts") + e("resets") + e("bad_responses");
    eprintln!(
        "responses {responses}, access log lines {lines}, in flight at end {}, failed after the request {}",
        n("in_flight_at_end"),
        after_request - n("in_flight_at_end")
    );
    assert!(responses > 500, "{t}");
    assert!(
        responses <= lines && lines <= responses + after_request,
        "responses {responses}, access log lines {lines}, in flight at end / failed after the request {after_request}: {t}"
    );
    assert_eq!(
        n("server_responses"),
        lines,
        "run_totals.server_responses is the log's count"
    );
    assert!(
        v["meta"]["check_responses"]["diff_pct"]
            .as_f64()
            .unwrap()
            .abs()
            <= 0.5
    );

    // 2. SYNs: counted by pcap (never estimated), against the clients' TcpActiveOpens. A
    // connect counts once in ActiveOpens however often its SYN is sent; pcap counts every SYN
    // that reaches the server, and marks a SYN seen again (same 4-tuple and ISN) as a retry.
    // So syn_in - syn_retrans is the connects with a SYN through: all of them but those whose
    // every SYN was lost, which ended as connect timeouts or were open at the end.
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut csv_lines = csv.lines();
    let head: Vec<&str> = csv_lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (est, drops) = (col("syn_in_estimated"), col("pcap_drops"));
    for row in csv_lines {
        let f: Vec<&str> = row.split(',').collect();
        assert!(
            f[est].is_empty() || f[est] == "0",
            "syn_in_estimated 0 (pcap): {row}"
        );
        assert!(
            f[drops].is_empty() || f[drops] == "0",
            "pcap dropped nothing: {row}"
        );
    }
    let (syn, retrans, opens) = (n("syn_in"), n("syn_retrans"), n("client_active_opens"));
    let never_through = e("connect_timeouts") + n("in_flight_at_end");
    eprintln!(
        "pcap SYNs {syn} ({retrans} retries), clients' TcpActiveOpens {opens}, connect timeouts {}",
        e("connect_timeouts")
    );
    assert!(
        syn - retrans <= opens && opens <= syn - retrans + never_through,
        "pcap SYNs {syn} less retries {retrans} against ActiveOpens {opens} (connect timeouts + in flight {never_through}): {t}"
    );
    // An attempt refused a socket or a port (EMFILE, EADDRNOTAVAIL) never reached connect().
    assert_eq!(
        n("attempts") - e("out_of_fds") - e("addr_not_avail"),
        opens,
        "every attempt with a socket and a port is one connect in the clients' kernels: {t}"
    );

    // 3. Per path: connect p50 within 2 ms of the path's RTT.
    let paths = v["points"][0]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{paths:?}");
    for (p, rtt) in paths.iter().zip([0.0, 100.0]) {
        let p50 = p["connect_p50_ms"].as_f64().unwrap();
        eprintln!("path {}: connect p50 {p50:.2} ms, RTT {rtt} ms", p["name"]);
        assert!(
            (p50 - rtt).abs() <= 2.0,
            "path {}: connect p50 {p50} ms, RTT {rtt} ms",
            p["name"]
        );
    }
}

/// issue 27's truth test, on loopback (`lab` false) or in the lab: nginx (one worker, its
/// default keepalive_requests of 1,000, so connections are reopened) under a closed keep-alive
/// point and a fixed request rate over a pool, run as `synlab run`. Exit 0; both identities at
/// each point and for the run; the responses are nginx's access-log lines; the connections
/// are the SYNs pcap saw (and, in the lab, the clients' kernels' TcpActiveOpens); the pool
/// holds its rate within 1 %.
fn nginx_keepalive_truth(lab: bool) {
    let net = if lab {
        "[network]\nbackend = \"router\"\n[[network.path]]\nname = \"lan\"\nrtt = \"1ms\"\n"
    } else {
        ""
    };
    // Closed clients run flat out: a few in the lab, where the delay router carries them.
    let clients: u64 = if lab { 4 } else { 16 };
    let rate = 2000;
    // Room for a few ms of stall on a busy machine (2,000/s x 30 ms = 60 requests).
    const POOL: u64 = 64;
    let sc = format!(
        "name = \"ka-nginx\"\n[target]\nkind = \"nginx\"\nworkers = 1\n\
         [load]\nmode = \"open\"\nrate = {rate}\narrivals = \"constant\"\nclients = {clients}\n\
         connections = {POOL}\nhttp = \"1.1\"\nrequests_per_conn = 1000000\ntimeout = \"1s\"\n\
         [sweep]\nparam = \"load.rate\"\nvalues = [{rate}]\nmodes = [\"closed\", \"open\"]\n\
         warmup = \"1s\"\nhold = \"3s\"\n{net}"
    );
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("ka-nginx.toml");
    std::fs::write(&file, sc).unwrap();
    let res = out.path().join("res");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", file.to_str().unwrap(), "--no-progress", "--out"])
        .arg(&res)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "synlab run exited {}: {text}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = std::fs::read_dir(&res)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run folder");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{text}");
    for p in points {
        assert!(!p["failed"].as_bool().unwrap(), "{p}");
        let (_, sent) = assert_identities(&p["totals"]);
        assert!(sent > 1000, "{}: {sent} requests: {p}", p["mode"]);
    }
    let pool_rate = points[1]["requests_per_s"].as_f64().unwrap();
    assert!(
        (pool_rate / rate as f64 - 1.0).abs() < 0.01,
        "the pool's {pool_rate:.1} requests/s, asked {rate} (client-bound: {}): {}",
        points[1]["client_bound_reason"],
        points[1]["totals"]
    );
    let t = &v["run_totals"];
    let (attempts, sent) = assert_identities(t);
    let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("{k}: {t}"));
    // Responses against nginx's own log: every request was answered before the drain ended.
    let log = std::fs::read_to_string(dir.join("nginx/access.log")).unwrap();
    let lines = log.lines().filter(|l| !l.trim().is_empty()).count() as u64;
    let failed_after_sending = n("in_flight_at_end") + t["requests"]["errors"].as_u64().unwrap();
    eprintln!(
        "{}: {attempts} connections, {sent} requests, {} responses, access log {lines} lines, \
         pcap SYNs {:?}, ActiveOpens {:?}",
        if lab { "lab" } else { "loopback" },
        n("responses"),
        t["syn_in"],
        t["client_active_opens"]
    );
    assert!(
        n("responses") <= lines && lines <= n("responses") + failed_after_sending,
        "responses {} vs access log lines {lines}: {t}",
        n("responses")
    );
    if failed_after_sending == 0 {
        assert_eq!(n("responses"), lines, "responses vs access log lines: {t}");
    }
    // Connections past nginx's keepalive_requests were closed by nginx and reopened.
    assert!(attempts > clients + POOL, "{t}");
    // Connections against the SYNs pcap saw (none lost on these paths) and the kernels' count.
    let syn = n("syn_in") - t["syn_retrans"].as_u64().unwrap_or(0);
    assert_eq!(syn, attempts, "pcap SYNs vs connection attempts: {t}");
    if lab {
        assert_eq!(n("client_active_opens"), attempts, "TcpActiveOpens: {t}");
    }
}

#[test]
fn nginx_keepalive_closed_and_fixed_rate_on_loopback_count_true() {
    if !probe_support::privileged("nginx keep-alive truth test (pcap)")
        || !installed(TargetKind::Nginx)
    {
        return;
    }
    nginx_keepalive_truth(false);
}

#[test]
fn nginx_keepalive_closed_and_fixed_rate_in_the_lab_count_true() {
    if !probe_support::privileged("nginx keep-alive truth test in the lab")
        || !installed(TargetKind::Nginx)
    {
        return;
    }
    nginx_keepalive_truth(true);
}
