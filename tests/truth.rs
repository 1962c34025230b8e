//! Issue 42's truths: the server's own count whatever the log format (nginx as an address
//! target, one `log_format` for HTTP and HTTPS ending in `tls:$ssl_session_reused`: its
//! count equals the log's lines over plain HTTP and over TLS, as root and as a plain user),
//! and a run that measured something broken fails (a TLS run whose CA check fails exits 1 with
//! the reason in words, JUnit failed, the cross-check not "agree" on 0 vs 0).

mod plain_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use synlab::scenario::TargetKind;

/// Two ports nothing listens on: both held until both are known (one bound and closed, the
/// next bind may get the same port).
fn free_ports() -> (u16, u16) {
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, b) = (bind(), bind());
    let port = |l: &std::net::TcpListener| l.local_addr().unwrap().port();
    (port(&a), port(&b))
}

/// The one run folder under `out`, and its summary.json and run.log.
fn run_files(out: &Path) -> (PathBuf, serde_json::Value, String) {
    let dir = plain_support::run_folder(out);
    let s = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    (dir, serde_json::from_str(&s).unwrap(), log)
}

/// nginx started by the test (not by synlab) on two free ports of loopback, plain HTTP and
/// HTTPS, with one log format for both ending in the session-reuse field, as a user's nginx
/// is set up. Stopped when dropped.
struct UsersNginx {
    child: Child,
    dir: tempfile::TempDir,
    plain: u16,
    https: u16,
}

impl UsersNginx {
    fn start() -> Option<UsersNginx> {
        let nginx = match synlab::lab::real_server::find_binary(TargetKind::Nginx) {
            Ok(n) => n,
            Err(e) => {
                synlab::sys::privilege::skip_unless_required(&format!("{e:#}"));
                return None;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let d = p.display();
        std::fs::create_dir_all(p.join("root/bytes")).unwrap();
        std::fs::write(p.join("root/bytes/1294"), vec![b'x'; 1294]).unwrap();
        let cert = synlab::tls::cert::LabCert::generate(synlab::tls::KeyKind::EcdsaP256, None)
            .unwrap()
            .write(&p.join("tls"))
            .unwrap();
        let (plain, https) = free_ports();
        let user = if nix::unistd::geteuid().is_root() {
            "user root root;\n"
        } else {
            ""
        };
        // The format `synlab logformat nginx` prints, as a user would paste it.
        let format = synlab::probe::accesslog::recommended_format(
            synlab::probe::accesslog::LogServer::Nginx,
        );
        let log_format = format
            .lines()
            .find(|l| l.starts_with("log_format"))
            .unwrap()
            .to_string();
        std::fs::write(
            p.join("nginx.conf"),
            format!(
                "{user}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
                 events {{ worker_connections 1024; }}\n\
                 http {{ {log_format}\n access_log {d}/access.log synlab;\n\
                 client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
                 fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
                 server {{ listen 127.0.0.1:{plain}; listen 127.0.0.1:{https} ssl;\n\
                 ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate {cert}; ssl_certificate_key {key};\n\
                 root {d}/root; }} }}\n",
                cert = cert.cert.display(),
                key = cert.key.display(),
            ),
        )
        .unwrap();
        // Readable by a plain user who points target.access_log at it.
        std::fs::write(p.join("access.log"), "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(p.join("access.log"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let child = Command::new(nginx)
            .args(["-p", &format!("{d}/"), "-e", &format!("{d}/error.log")])
            .args(["-c", &format!("{d}/nginx.conf"), "-g", "daemon off;"])
            .spawn()
            .unwrap();
        let n = UsersNginx {
            child,
            dir,
            plain,
            https,
        };
        for port in [plain, https] {
            let up = (0..100).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            });
            let err = std::fs::read_to_string(n.dir.path().join("error.log")).unwrap_or_default();
            assert!(up, "nginx did not come up on {port}: {err}");
        }
        Some(n)
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("access.log")
    }

    /// The log's lines so far.
    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// An address-target scenario against the plain or the HTTPS listener.
    fn scenario(&self, tls: bool) -> String {
        let (port, tls_line) = if tls {
            (self.https, "tls = true\n")
        } else {
            (self.plain, "")
        };
        format!(
            "name = \"users-nginx\"\nduration = \"2s\"\n[target]\nkind = \"address\"\naddress = \"127.0.0.1:{port}\"\n\
             access_log = \"{}\"\n{tls_line}[load]\nmode = \"open\"\nrate = 200\n\
             [[load.mix]]\npath = \"/bytes/1294\"\n",
            self.log().display()
        )
    }
}

impl Drop for UsersNginx {
    fn drop(&mut self) {
        // Its master, by the pid we started: QUIT lets the workers finish.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGQUIT,
        );
        let _ = self.child.wait();
    }
}

/// One run against the user's nginx; the server's count is the log's lines over the run, the
/// clients agree, and nothing warned that the log was not trusted.
fn counts_its_lines(n: &UsersNginx, tls: bool, run: impl Fn(&Path) -> (Output, PathBuf)) {
    let before = n.lines().len();
    let sc = n.scenario(tls);
    let (out, folder) = run(Path::new(&sc));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "tls {tls}: {err}");
    let (_, s, log) = run_files(&folder);
    let lines = n.lines();
    let ours = &lines[before..];
    let field = if tls { " tls:" } else { " tls:-" };
    assert!(
        ours.iter().all(|l| l.contains(field)),
        "one format for both listeners: {ours:?}"
    );
    let c = &s["meta"]["check_responses"];
    let (client, server) = (c["client"].as_u64().unwrap(), c["server"].as_u64().unwrap());
    assert!(client > 200, "{c}");
    assert_eq!(
        server,
        ours.len() as u64,
        "the server's count is the log's lines: {c}"
    );
    assert_eq!(server, client, "drained, every response logged: {c}");
    let verdict = c["verdict"].as_str().unwrap();
    assert!(
        verdict.contains(": agree") && verdict.contains("confirmed by the server's own"),
        "{verdict}"
    );
    assert!(!log.contains("warning: access log"), "{log}");
}

#[test]
fn a_users_nginx_as_an_address_target_its_count_is_its_log_over_http_and_https() {
    let Some(n) = UsersNginx::start() else {
        return;
    };
    let exe = env!("CARGO_BIN_EXE_synlab");
    for tls in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        counts_its_lines(&n, tls, |sc| {
            let file = dir.join("sc.toml");
            std::fs::write(&file, sc.to_str().unwrap()).unwrap();
            let out = Command::new(exe)
                .args(["run", file.to_str().unwrap(), "--no-progress", "--out"])
                .arg(dir.join("out"))
                .output()
                .unwrap();
            (out, dir.join("out"))
        });
    }
}

#[test]
fn a_users_nginx_as_an_address_target_counts_as_a_plain_user_too() {
    let Some(n) = UsersNginx::start() else {
        return;
    };
    let Some(user) = plain_support::plain_user() else {
        return;
    };
    for tls in [false, true] {
        let name = format!("sc-{tls}.toml");
        let out_dir = format!("out-{tls}");
        counts_its_lines(&n, tls, |sc| {
            let file = user.write(&name, sc.to_str().unwrap());
            let out = user
                .synlab(&[
                    "run",
                    file.to_str().unwrap(),
                    "--out",
                    &out_dir,
                    "--no-progress",
                ])
                .output()
                .unwrap();
            (out, user.dir.path().join(&out_dir))
        });
    }
    user.assert_none_left();
}

#[test]
fn a_tls_run_whose_ca_check_fails_exits_1_in_words_and_junit_fails() {
    let dir = tempfile::tempdir().unwrap();
    // A self-signed certificate as `openssl req -x509` makes it: CA:TRUE, not the server's CA.
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(vec!["synlab.test".to_string()]).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, p.self_signed(&key).unwrap().pem()).unwrap();
    let sc = dir.path().join("bad-ca.toml");
    std::fs::write(
        &sc,
        format!(
            "name = \"bad-ca\"\nduration = \"2s\"\n[target]\ntls = true\n[load]\nmode = \"open\"\nrate = 200\n\
             [load.tls]\nverify = true\nca = \"{}\"\n",
            ca.display()
        ),
    )
    .unwrap();
    let junit = dir.path().join("junit.xml");
    let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
        .args(["run", sc.to_str().unwrap(), "--no-progress", "--junit"])
        .arg(&junit)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let words = "the server's certificate is not signed by a CA in the trusted roots";
    let (_, s, log) = run_files(&dir.path().join("out"));
    let p = &s["points"][0];
    assert_eq!(p["failed"], true, "{p}");
    let error = p["error"].as_str().unwrap();
    assert!(
        error.starts_with("none of the ")
            && error.contains("bad_certificates")
            && error.contains(words),
        "{error}"
    );
    assert!(p["bad_certificates_per_s"].as_f64().unwrap() > 50.0, "{p}");
    assert!(log.contains(words) && !log.contains("OtherError"), "{log}");
    // The cross-check does not agree on 0 vs 0.
    let c = &s["meta"]["check_responses"];
    assert_eq!(c["agree"], false, "{c}");
    assert!(
        c["verdict"]
            .as_str()
            .unwrap()
            .contains("nothing was answered"),
        "{c}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<failure")
            && xml.contains("point measured")
            && xml.contains("is not signed by a CA in the trusted roots"),
        "{xml}"
    );
}

#[test]
fn logformat_prints_the_formats_synlab_reads_best() {
    for (server, want) in [
        ("nginx", "tls:$ssl_session_reused';"),
        ("apache", "tls:%{SSL_SESSION_RESUMED}x\" synlab"),
        ("caddy", "\tformat json\n"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_synlab"))
            .args(["logformat", server])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains(want), "{text}");
    }
}
