//! The config files synlab writes for nginx and Apache from the scenario's `[target]` keys.

use crate::probe::accesslog;
use crate::scenario::ApacheMpm;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// What the generated config says, from the scenario's `[target]` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigParams {
    pub listen: SocketAddr,
    pub workers: u32,
    pub max_workers: u32,
    pub backlog: u32,
    pub keepalive: bool,
    pub dir: PathBuf,
    pub docroot: PathBuf,
    /// Worker user and group when the server starts as root (None: stays who started it).
    pub user: Option<(String, String)>,
    /// Descriptors per worker: the hard limit the server inherits (a worker that has left
    /// root cannot raise it).
    pub nofile: u64,
    pub extra: Vec<String>,
    /// nginx: lines inside `events {}` (a `worker_connections` there replaces synlab's).
    pub extra_events: Vec<String>,
    /// HTTPS on the listen address, with the lab's certificate.
    pub tls: Option<TlsParams>,
    /// HTTP/2 on the listener (`load.http = "2"`): h2 by ALPN over TLS, h2c in the clear.
    pub http2: bool,
}

/// A real server's TLS: the lab's certificate and its session cache and tickets.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsParams {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub session_cache: bool,
    pub tickets: bool,
}

/// nginx's config: `worker_processes` = workers, the listen backlog, keep-alive on or off, the
/// combined access log; `extra` lines go inside `http {}`, `extra_events` inside `events {}`.
pub fn nginx_conf(p: &ConfigParams) -> String {
    let d = p.dir.display();
    // The combined format with nginx's time for each request (`rt:$request_time`, the
    // latency split's service); over TLS also the session's reuse (`tls:r` / `tls:.`), so
    // the access log counts full and resumed handshakes (per request). The tls field stays
    // last, where scripts that read the lines by their end find it.
    let (log_format, format, ssl, tls) = match &p.tls {
        None => (
            format!(
                "\x20   log_format synlab '{}{}';\n",
                accesslog::NGINX_COMBINED,
                accesslog::NGINX_TIME_FIELD
            ),
            "synlab",
            "",
            String::new(),
        ),
        Some(t) => (
            format!(
                "\x20   log_format synlab_tls '{}{}{}';\n",
                accesslog::NGINX_COMBINED,
                accesslog::NGINX_TIME_FIELD,
                accesslog::NGINX_TLS_FIELD
            ),
            "synlab_tls",
            " ssl",
            format!(
                "\x20       ssl_certificate {cert};\n\
                 \x20       ssl_certificate_key {key};\n\
                 \x20       ssl_protocols TLSv1.2 TLSv1.3;\n\
                 \x20       ssl_session_cache {cache};\n\
                 \x20       ssl_session_tickets {tickets};\n\
                 \x20       ssl_session_timeout 10m;\n",
                cert = t.cert.display(),
                key = t.key.display(),
                cache = if t.session_cache {
                    "shared:SSL:10m"
                } else {
                    "off"
                },
                tickets = if t.tickets { "on" } else { "off" },
            ),
        ),
    };
    let user = p
        .user
        .as_ref()
        .map(|(u, g)| format!("user {u} {g};\n"))
        .unwrap_or_default();
    let extra: String = p.extra.iter().map(|l| format!("    {l}\n")).collect();
    // nginx 1.22's `http2` on a plain listen line is h2c only (an HTTP/1.x request there is
    // not answered), so it is on only when the load speaks HTTP/2.
    let http2 = if p.http2 { " http2" } else { "" };
    // nginx refuses a directive given twice: the scenario's worker_connections wins.
    let own_connections = p
        .extra_events
        .iter()
        .any(|l| l.trim_start().starts_with("worker_connections"));
    let events: String = (!own_connections)
        .then(|| "    worker_connections 16384;\n".to_string())
        .into_iter()
        .chain(p.extra_events.iter().map(|l| format!("    {l}\n")))
        .collect();
    format!(
        "# Written by synlab from the scenario's [target] keys.\n\
         {user}worker_processes {workers};\n\
         worker_rlimit_nofile {nofile};\n\
         pid {d}/nginx.pid;\n\
         error_log {d}/error.log warn;\n\
         events {{\n{events}}}\n\
         http {{\n\
         {log_format}\
         \x20   access_log {d}/access.log {format};\n\
         \x20   default_type application/octet-stream;\n\
         \x20   sendfile on;\n\
         \x20   keepalive_timeout {ka};\n\
         \x20   client_body_temp_path {d}/tmp/body;\n\
         \x20   proxy_temp_path {d}/tmp/proxy;\n\
         \x20   fastcgi_temp_path {d}/tmp/fastcgi;\n\
         \x20   uwsgi_temp_path {d}/tmp/uwsgi;\n\
         \x20   scgi_temp_path {d}/tmp/scgi;\n\
         \x20   server {{\n\
         \x20       listen {listen}{ssl}{http2} backlog={backlog};\n\
         {tls}\
         \x20       root {root};\n\
         \x20       index index.html;\n\
         \x20   }}\n\
         {extra}}}\n",
        workers = p.workers,
        nofile = p.nofile,
        ka = if p.keepalive { "65s" } else { "0" },
        listen = p.listen,
        backlog = p.backlog,
        root = p.docroot.display(),
    )
}

/// Apache's config: the MPM's process/thread limits from workers and max_workers
/// (MaxRequestWorkers), ListenBacklog, KeepAlive, the combined access log; only the modules a
/// static server needs; `extra` lines at the end.
pub fn apache_conf(p: &ConfigParams, mpm: ApacheMpm, modules: &Path) -> String {
    let d = p.dir.display();
    let m = modules.display();
    let mpm_name = match mpm {
        ApacheMpm::Prefork => "prefork",
        ApacheMpm::Worker => "worker",
        ApacheMpm::Event => "event",
    };
    let mut c = format!("# Written by synlab from the scenario's [target] keys.\nServerRoot \"{d}\"\nServerName synlab\n");
    c.push_str(&format!(
        "LoadModule mpm_{mpm_name}_module {m}/mod_mpm_{mpm_name}.so\n"
    ));
    for (name, file) in [
        ("authz_core_module", "mod_authz_core.so"),
        ("mime_module", "mod_mime.so"),
        ("dir_module", "mod_dir.so"),
        // Compiled in on Debian; loaded where they are modules.
        ("log_config_module", "mod_log_config.so"),
        ("unixd_module", "mod_unixd.so"),
        // The scoreboard (busy workers, seed 000 Fig. 10), kept out of the access log.
        ("status_module", "mod_status.so"),
        ("setenvif_module", "mod_setenvif.so"),
    ] {
        if modules.join(file).exists() {
            c.push_str(&format!(
                "<IfModule !{name}>\n    LoadModule {name} {m}/{file}\n</IfModule>\n"
            ));
        }
    }
    if let Some((u, g)) = &p.user {
        c.push_str(&format!("User {u}\nGroup {g}\n"));
    }
    if let Some(t) = &p.tls {
        // mod_ssl, loaded by synlab itself (no a2enmod): its session cache needs socache_shmcb.
        for (name, file) in [
            ("socache_shmcb_module", "mod_socache_shmcb.so"),
            ("ssl_module", "mod_ssl.so"),
        ] {
            c.push_str(&format!(
                "<IfModule !{name}>\n    LoadModule {name} {m}/{file}\n</IfModule>\n"
            ));
        }
        c.push_str(&format!(
            "SSLEngine on\n\
             SSLCertificateFile \"{cert}\"\n\
             SSLCertificateKeyFile \"{key}\"\n\
             SSLProtocol -all +TLSv1.2 +TLSv1.3\n\
             SSLSessionCache {cache}\n\
             SSLSessionCacheTimeout 600\n\
             SSLSessionTickets {tickets}\n",
            cert = t.cert.display(),
            key = t.key.display(),
            cache = if t.session_cache {
                format!("\"shmcb:{d}/run/ssl_scache(5120000)\"")
            } else {
                "none".into()
            },
            tickets = if t.tickets { "on" } else { "off" },
        ));
    }
    // HTTP/2 by mod_http2 (loaded by synlab itself), beside HTTP/1.1: over TLS h2 by ALPN,
    // in the clear h2c (prior knowledge or Upgrade). The prefork MPM refuses it (`check` says so).
    if p.http2 {
        c.push_str(&format!(
            "<IfModule !http2_module>\n    LoadModule http2_module {m}/mod_http2.so\n</IfModule>\nProtocols {} http/1.1\n",
            if p.tls.is_some() { "h2" } else { "h2c" }
        ));
    }
    // The combined format with Apache's time for each request (`rt_us:%D`, the latency
    // split's service); over TLS also the session's reuse (`tls:Resumed` / `tls:Initial`).
    let (log_tls, listen_proto) = match p.tls {
        Some(_) => (accesslog::APACHE_TLS_FIELD, " https"),
        None => ("", ""),
    };
    c.push_str(&format!(
        "DefaultRuntimeDir \"{d}/run\"\n\
         PidFile \"{d}/apache2.pid\"\n\
         Mutex file:{d}/run default\n\
         ErrorLog \"{d}/error.log\"\n\
         LogLevel warn\n\
         Listen {listen}{listen_proto}\n\
         ListenBacklog {backlog}\n\
         TypesConfig \"{d}/mime.types\"\n\
         DocumentRoot \"{root}\"\n\
         <Directory />\n    Options None\n    AllowOverride None\n    Require all denied\n</Directory>\n\
         <Directory \"{root}\">\n    Options None\n    AllowOverride None\n    Require all granted\n</Directory>\n\
         DirectoryIndex index.html\n\
         EnableSendfile On\n\
         KeepAlive {ka}\n\
         LogFormat \"{combined}{log_time}{log_tls}\" combined\n\
         <IfModule status_module>\n    ExtendedStatus Off\n    <Location \"/server-status\">\n        SetHandler server-status\n        Require all granted\n    </Location>\n</IfModule>\n\
         <IfModule setenvif_module>\n    SetEnvIf Request_URI \"^/server-status\" synlab_status\n</IfModule>\n\
         CustomLog \"{d}/access.log\" combined env=!synlab_status\n",
        listen = p.listen,
        backlog = p.backlog,
        root = p.docroot.display(),
        ka = if p.keepalive { "On" } else { "Off" },
        combined = accesslog::APACHE_COMBINED,
        log_time = accesslog::APACHE_TIME_FIELD,
    ));
    let (w, max) = (p.workers.max(1), p.max_workers.max(p.workers).max(1));
    match mpm {
        ApacheMpm::Prefork => c.push_str(&format!(
            // `workers` processes from the start and kept idle: prefork adds at most 32 a
            // second, so a server that starts small refuses the first seconds of a load.
            "StartServers {w}\nMinSpareServers {w}\nMaxSpareServers {max}\n\
             ServerLimit {max}\nMaxRequestWorkers {max}\nMaxConnectionsPerChild 0\n",
        )),
        ApacheMpm::Worker | ApacheMpm::Event => {
            // Threads come 25 to a process; MaxRequestWorkers is a whole number of processes.
            let procs = max.div_ceil(25);
            c.push_str(&format!(
                "ThreadsPerChild 25\nStartServers {start}\nServerLimit {procs}\n\
                 MaxRequestWorkers {threads}\nMinSpareThreads 25\nMaxSpareThreads {threads}\n\
                 MaxConnectionsPerChild 0\n",
                start = w.min(procs),
                threads = procs * 25,
            ))
        }
    }
    for l in &p.extra {
        c.push_str(l);
        c.push('\n');
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> ConfigParams {
        ConfigParams {
            listen: "198.18.0.1:8080".parse().unwrap(),
            workers: 4,
            max_workers: 150,
            backlog: 511,
            keepalive: false,
            dir: "/run/x".into(),
            docroot: "/tmp/root".into(),
            user: Some(("www-data".into(), "www-data".into())),
            nofile: 20000,
            extra: vec!["# extra line".into()],
            extra_events: Vec::new(),
            tls: None,
            http2: false,
        }
    }

    #[test]
    fn nginx_config_carries_the_scenario_keys() {
        let c = nginx_conf(&params());
        for want in [
            "user www-data www-data;",
            "worker_processes 4;",
            "worker_rlimit_nofile 20000;",
            "listen 198.18.0.1:8080 backlog=511;",
            "keepalive_timeout 0;",
            "access_log /run/x/access.log synlab;",
            "\"$http_user_agent\" rt:$request_time';",
            "root /tmp/root;",
            "    # extra line\n}",
        ] {
            assert!(c.contains(want), "{want} missing in\n{c}");
        }
        let mut p = params();
        p.keepalive = true;
        p.user = None;
        let c = nginx_conf(&p);
        // No `user` directive (the log format's `$remote_user` is not one).
        assert!(c.contains("keepalive_timeout 65s;") && !c.contains("\nuser "));
        // events {}: synlab's worker_connections, unless the scenario sets its own.
        assert!(
            c.contains("events {\n    worker_connections 16384;\n}"),
            "{c}"
        );
        p.extra_events = vec!["multi_accept on;".into()];
        let c = nginx_conf(&p);
        assert!(
            c.contains("events {\n    worker_connections 16384;\n    multi_accept on;\n}"),
            "{c}"
        );
        p.extra_events = vec!["worker_connections 512;".into()];
        let c = nginx_conf(&p);
        assert!(
            c.contains("events {\n    worker_connections 512;\n}") && !c.contains("16384"),
            "{c}"
        );
    }

    #[test]
    fn apache_prefork_caps_processes_at_max_workers() {
        let c = apache_conf(
            &params(),
            ApacheMpm::Prefork,
            Path::new("/usr/lib/apache2/modules"),
        );
        for want in [
            "LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so",
            "Listen 198.18.0.1:8080",
            "ListenBacklog 511",
            "StartServers 4",
            "MaxRequestWorkers 150",
            "ServerLimit 150",
            "KeepAlive Off",
            "User www-data",
            "CustomLog \"/run/x/access.log\" combined env=!synlab_status",
            "SetHandler server-status",
            "LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b",
            "\\\"%{User-Agent}i\\\" rt_us:%D\" combined",
            "# extra line\n",
        ] {
            assert!(c.contains(want), "{want} missing in\n{c}");
        }
    }

    #[test]
    fn over_tls_the_servers_get_the_certificate_and_log_session_reuse() {
        let mut p = params();
        p.tls = Some(TlsParams {
            cert: "/run/x/tls/cert.pem".into(),
            key: "/run/x/tls/key.pem".into(),
            session_cache: false,
            tickets: true,
        });
        let c = nginx_conf(&p);
        for want in [
            "listen 198.18.0.1:8080 ssl backlog=511;",
            "ssl_certificate /run/x/tls/cert.pem;",
            "ssl_certificate_key /run/x/tls/key.pem;",
            "ssl_session_cache off;",
            "ssl_session_tickets on;",
            "\"$http_user_agent\" rt:$request_time tls:$ssl_session_reused';",
            "access_log /run/x/access.log synlab_tls;",
        ] {
            assert!(c.contains(want), "{want} missing in\n{c}");
        }
        let c = apache_conf(&p, ApacheMpm::Prefork, Path::new("/m"));
        for want in [
            "LoadModule ssl_module /m/mod_ssl.so",
            "Listen 198.18.0.1:8080 https",
            "SSLEngine on",
            "SSLCertificateFile \"/run/x/tls/cert.pem\"",
            "SSLSessionCache none",
            "SSLSessionTickets on",
            "rt_us:%D tls:%{SSL_SESSION_RESUMED}x\" combined",
        ] {
            assert!(c.contains(want), "{want} missing in\n{c}");
        }
        // Plain HTTP keeps the plain combined format.
        assert!(!nginx_conf(&params()).contains("ssl"));
    }

    #[test]
    fn http2_is_on_the_listen_line_and_in_apaches_protocols_only_when_asked() {
        let mut p = params();
        assert!(!nginx_conf(&p).contains("http2"));
        assert!(!apache_conf(&p, ApacheMpm::Event, Path::new("/m")).contains("http2"));
        p.http2 = true;
        assert!(nginx_conf(&p).contains("listen 198.18.0.1:8080 http2 backlog=511;"));
        let c = apache_conf(&p, ApacheMpm::Event, Path::new("/m"));
        for want in [
            "LoadModule http2_module /m/mod_http2.so",
            "Protocols h2c http/1.1\n",
        ] {
            assert!(c.contains(want), "{want} missing in\n{c}");
        }
        p.tls = Some(TlsParams {
            cert: "/c".into(),
            key: "/k".into(),
            session_cache: true,
            tickets: true,
        });
        assert!(nginx_conf(&p).contains("listen 198.18.0.1:8080 ssl http2 backlog=511;"));
        let c = apache_conf(&p, ApacheMpm::Event, Path::new("/m"));
        assert!(c.contains("Protocols h2 http/1.1\n"), "{c}");
    }

    #[test]
    fn apache_threaded_mpms_round_to_whole_processes() {
        let c = apache_conf(&params(), ApacheMpm::Event, Path::new("/m"));
        assert!(c.contains("mod_mpm_event.so"));
        assert!(c.contains("ServerLimit 6\n") && c.contains("MaxRequestWorkers 150\n"));
        let mut p = params();
        p.max_workers = 60;
        let c = apache_conf(&p, ApacheMpm::Worker, Path::new("/m"));
        assert!(c.contains("ServerLimit 3\n") && c.contains("MaxRequestWorkers 75\n"));
    }
}
