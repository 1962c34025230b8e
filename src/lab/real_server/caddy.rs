//! The Caddyfile synlab writes for `kind = "caddy"`: the lab's static files from the document
//! root, over TLS with the lab's certificate on HTTP/1.1, HTTP/2 and HTTP/3 (QUIC on the same
//! port, UDP), its access log as JSON lines (which name each request's protocol), no admin API
//! and nothing written outside the server's folder.

use super::conf::ConfigParams;
use std::path::Path;

/// The Caddyfile for `p`. Over TLS the site serves h1, h2 and h3; plain, HTTP/1.1 only (Caddy
/// has no cleartext HTTP/3). `extra` lines go inside the site block.
pub fn caddyfile(p: &ConfigParams) -> String {
    let d = p.dir.display();
    let (scheme, protocols, tls) = match &p.tls {
        Some(t) => (
            "https",
            "h1 h2 h3",
            format!("\ttls {} {}\n", t.cert.display(), t.key.display()),
        ),
        None => ("http", "h1", String::new()),
    };
    let extra: String = p.extra.iter().map(|l| format!("\t{l}\n")).collect();
    // No host in the site's address (`:port`): a host there becomes a matcher, and a request
    // whose Host is the lab's name would get an empty 200 instead of the file.
    format!(
        "# Written by synlab from the scenario's [target] keys.\n\
         {{\n\
         \t# No admin endpoint: synlab starts and stops Caddy by its pid.\n\
         \tadmin off\n\
         \t# No certificates of its own, no redirect listener on port 80.\n\
         \tauto_https off\n\
         \tstorage file_system {d}/data\n\
         \tservers {{\n\
         \t\tprotocols {protocols}\n\
         \t}}\n\
         }}\n\
         {scheme}://:{port} {{\n\
         \tbind {ip}\n\
         {tls}\
         \troot * {root}\n\
         \tfile_server\n\
         \tlog {{\n\
         \t\toutput file {d}/access.log {{\n\
         \t\t\troll_disabled\n\
         \t\t}}\n\
         \t\tformat json\n\
         \t}}\n\
         {extra}}}\n",
        port = p.listen.port(),
        ip = p.listen.ip(),
        root = p.docroot.display(),
    )
}

/// The command line after the program: `env` with Caddy's config and data homes in `dir` (its
/// autosaved config goes there, not to the user's ~/.config), then `caddy run`.
pub fn caddy_args(caddy: &Path, conf: &Path, dir: &Path) -> Vec<String> {
    vec![
        format!("XDG_CONFIG_HOME={}/config", dir.display()),
        format!("XDG_DATA_HOME={}/data", dir.display()),
        caddy.display().to_string(),
        "run".into(),
        "--config".into(),
        conf.display().to_string(),
        "--adapter".into(),
        "caddyfile".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::conf::TlsParams;
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
            user: None,
            nofile: 20000,
            extra: vec!["header X-Lab 1".into()],
            extra_events: Vec::new(),
            tls: None,
            http2: false,
        }
    }

    #[test]
    fn the_caddyfile_serves_the_docroot_with_a_json_log_and_no_admin() {
        let c = caddyfile(&params());
        for want in [
            "\tadmin off\n",
            "\tauto_https off\n",
            "\t\tprotocols h1\n",
            "http://:8080 {\n\tbind 198.18.0.1\n",
            "\troot * /tmp/root\n\tfile_server\n",
            "\t\toutput file /run/x/access.log {\n\t\t\troll_disabled\n",
            "\t\tformat json\n",
            "\theader X-Lab 1\n}\n",
        ] {
            assert!(c.contains(want), "{want:?} missing in\n{c}");
        }
        assert!(!c.contains("tls "), "{c}");
        let mut p = params();
        p.tls = Some(TlsParams {
            cert: "/run/x/tls/cert.pem".into(),
            key: "/run/x/tls/key.pem".into(),
            session_cache: true,
            tickets: true,
        });
        let c = caddyfile(&p);
        for want in [
            "\t\tprotocols h1 h2 h3\n",
            "https://:8080 {\n\tbind 198.18.0.1\n",
            "\ttls /run/x/tls/cert.pem /run/x/tls/key.pem\n",
        ] {
            assert!(c.contains(want), "{want:?} missing in\n{c}");
        }
        let a = caddy_args(
            Path::new("/usr/bin/caddy"),
            Path::new("/run/x/caddy.conf"),
            Path::new("/run/x"),
        );
        assert_eq!(
            a.join(" "),
            "XDG_CONFIG_HOME=/run/x/config XDG_DATA_HOME=/run/x/data /usr/bin/caddy run --config /run/x/caddy.conf --adapter caddyfile"
        );
    }
}
