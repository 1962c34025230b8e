//! `load.http = "3"` (issue 47) against what the target serves and the clients' TLS: HTTP/3 is
//! QUIC, which is TLS 1.3 always, served here by the built-in server with `http3 = true` or
//! by Caddy over TLS; 0-RTT early data is a share of the resumptions, so it needs some.

use super::{Got, Limit, Need, ProblemKind, Problems};
use crate::scenario::model::{HttpVersion, Scenario, TargetKind};

pub(super) fn check_http3(s: &Scenario, bad: &mut Problems) {
    let t = &s.target;
    let h3 = s.load.http == HttpVersion::Http3;
    let early = s.load.tls.as_ref().map_or(0.0, |l| l.early_data);
    if !(0.0..=1.0).contains(&early) {
        bad.add(
            "load.tls.early_data",
            ProblemKind::limit(
                Limit::Range("0".into(), "1".into()),
                Got::of(early),
                ": a share",
            ),
        );
    }
    if early > 0.0 && !h3 {
        bad.add("load.tls.early_data", Need::Http3Load);
    }
    if !h3 {
        return;
    }
    let serves = match t.kind {
        TargetKind::Builtin => t.http3 && t.tls,
        TargetKind::Caddy => t.tls,
        // A server synlab does not configure: the start-up QUIC handshake decides.
        TargetKind::Address | TargetKind::Command => t.tls,
        _ => false,
    };
    if !serves {
        let (key, what) = match t.kind {
            TargetKind::Builtin if !t.tls => (
                "target.tls",
                "the built-in server serves HTTP/3 over TLS only: set tls = true, arch = \"event\" and http3 = true in [target]",
            ),
            TargetKind::Builtin => (
                "target.http3",
                "the built-in server serves HTTP/3 only when asked: set http3 = true in [target] (with arch = \"event\")",
            ),
            TargetKind::Caddy => (
                "target.tls",
                "Caddy serves HTTP/3 over TLS only: set tls = true in [target]",
            ),
            TargetKind::Address | TargetKind::Command => (
                "target.tls",
                "HTTP/3 is QUIC, which is always TLS: set tls = true in [target] (the server must serve HTTP/3 on the UDP side of its port; the start-up handshake checks it)",
            ),
            _ => (
                "target.kind",
                "this target does not serve HTTP/3 here: use kind = \"builtin\" with http3 = true, or kind = \"caddy\" with tls = true",
            ),
        };
        bad.add(key, Need::Http3Target(what));
    }
    let own_cert = !matches!(t.kind, TargetKind::Address | TargetKind::Command);
    let ca = s.load.tls.as_ref().is_some_and(|l| !l.ca.trim().is_empty());
    if serves && !own_cert && !ca {
        bad.add(
            "load.tls.ca",
            Need::Http3Target(
                "the QUIC clients always verify the server's certificate, and the lab did not make this one: name the file of the CA that signed it",
            ),
        );
    }
    if let Some(l) = &s.load.tls {
        if l.version == crate::tls::TlsVersion::V12 {
            bad.add("load.tls.version", Need::QuicTls13);
        }
        if early > 0.0 && l.resumed == 0.0 {
            bad.add("load.tls.early_data", Need::EarlyDataResumed);
        }
        if early > 0.0 && t.kind == TargetKind::Builtin && !t.quic_early_data {
            bad.add("load.tls.early_data", Need::EarlyDataServer);
        }
    }
    if s.load.mode == crate::load::protocol::Mode::Sclient && s.load.timeout.secs() < 0.005 {
        bad.add(
            "load.timeout",
            ProblemKind::limit(
                Limit::AtLeast("5ms".into()),
                Got::of(s.load.timeout),
                ": over HTTP/3, T bounds the whole QUIC handshake (a round trip and the TLS work)",
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::model::Scenario;

    fn problems(toml: &str) -> Vec<String> {
        let s: Scenario = toml::from_str(toml).unwrap();
        crate::scenario::validate::validate(&s)
            .into_iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn http3_needs_a_target_that_serves_it() {
        let p = problems(
            "name = \"t\"\nduration = \"2s\"\n[target]\nkind = \"builtin\"\n[load]\nhttp = \"3\"\n",
        );
        assert!(
            p.iter()
                .any(|l| l.contains("`target.tls`") && l.contains("HTTP/3 over TLS only")),
            "{p:?}"
        );
        let p = problems(
            "name = \"t\"\nduration = \"2s\"\n[target]\nkind = \"builtin\"\narch = \"event\"\ntls = true\n[load]\nhttp = \"3\"\n",
        );
        assert!(p.iter().any(|l| l.contains("`target.http3`")), "{p:?}");
    }

    /// A server synlab does not start may serve HTTP/3: the start-up handshake decides; the
    /// clients verify its certificate, so they need its CA.
    #[test]
    fn a_server_already_running_may_serve_http3_with_its_ca() {
        let head = "name = \"t\"\nduration = \"2s\"\n[target]\nkind = \"address\"\naddress = \"127.0.0.1:8443\"\n";
        let p = problems(&format!(
            "{head}tls = true\n[load]\nhttp = \"3\"\n[load.tls]\nca = \"ca.pem\"\n"
        ));
        assert!(p.is_empty(), "{p:?}");
        let p = problems(&format!("{head}[load]\nhttp = \"3\"\n"));
        assert!(
            p.iter()
                .any(|l| l.contains("`target.tls`") && l.contains("always TLS")),
            "{p:?}"
        );
        let p = problems(&format!("{head}tls = true\n[load]\nhttp = \"3\"\n"));
        assert!(p.iter().any(|l| l.contains("`load.tls.ca`")), "{p:?}");
    }

    #[test]
    fn early_data_needs_resumption_and_http3() {
        let p = problems(
            "name = \"t\"\nduration = \"2s\"\n[target]\nkind = \"builtin\"\narch = \"event\"\ntls = true\nhttp3 = true\nquic_early_data = true\ntls_session_cache = true\n[load]\nhttp = \"3\"\n[load.tls]\nearly_data = 0.5\n",
        );
        assert!(
            p.iter()
                .any(|l| l.contains("`load.tls.early_data`") && l.contains("resumed = 0")),
            "{p:?}"
        );
        let p = problems(
            "name = \"t\"\nduration = \"2s\"\n[target]\nkind = \"builtin\"\narch = \"event\"\ntls = true\n[load]\nhttp = \"2\"\n[load.tls]\nresumed = 0.5\nearly_data = 0.5\n",
        );
        assert!(
            p.iter()
                .any(|l| l.contains("`load.tls.early_data`") && l.contains("needs http = \"3\"")),
            "{p:?}"
        );
    }

    #[test]
    fn a_good_http3_scenario_passes() {
        let p = problems(
            "name = \"t\"\nduration = \"2s\"\n[target]\nkind = \"builtin\"\narch = \"event\"\ntls = true\nhttp3 = true\nquic_early_data = true\ntls_session_cache = true\n[load]\nhttp = \"3\"\nstreams = 4\n[load.tls]\nresumed = 0.5\nearly_data = 1\n",
        );
        assert!(p.is_empty(), "{p:?}");
    }
}
