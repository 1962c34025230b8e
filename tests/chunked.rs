//! Chunked responses over HTTP/1.1 keep-alive: nginx with `sub_filter` (which streams every
//! response it rewrites, chunked) answers every request, and the clients' count of responses is
//! nginx's access log, line for line.

mod lab_support;
mod totals_support;

use lab_support::real_server_installed as installed;
use std::os::unix::fs::PermissionsExt;
use synlab::scenario::TargetKind;
use totals_support::assert_identities;

#[test]
fn nginx_sub_filter_chunked_keepalive_every_request_answered_and_counted() {
    if !installed(TargetKind::Nginx) {
        eprintln!("skipped: nginx is not installed");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    // A second log of nginx's own, of the Transfer-Encoding it sent: the responses were chunked.
    // Open to all: nginx's workers run as www-data when the test runs as root.
    let te_dir = out.path().join("te");
    std::fs::create_dir(&te_dir).unwrap();
    std::fs::set_permissions(&te_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let te_log = te_dir.join("te.log");
    let sc = format!(
        "name = \"chunked-nginx\"\n[target]\nkind = \"nginx\"\nworkers = 1\n\
         extra_config = [\"sub_filter_types *;\", \"sub_filter 'a' 'b';\", \
         \"log_format te '$sent_http_transfer_encoding';\", \
         \"access_log {} te;\"]\n\
         [load]\nmode = \"closed\"\nclients = 8\nhttp = \"1.1\"\nrequests_per_conn = 1000\n\
         timeout = \"1s\"\n[[load.mix]]\npath = \"/bytes/4000\"\n\
         [sweep]\nparam = \"load.clients\"\nvalues = [8]\nwarmup = \"1s\"\nhold = \"2s\"\n",
        te_log.display()
    );
    let file = out.path().join("chunked-nginx.toml");
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
    let p = &v["points"][0];
    assert_eq!(p["failed"], false, "{p}");
    let t = &v["run_totals"];
    let (_, sent) = assert_identities(t);
    let r = &t["requests"];
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k}: {r}"));
    assert_eq!(n("errors"), 0, "no request failed: {r}");
    assert!(n("responses") > 1000, "{r}");
    // Every request sent was answered (none left in flight at the end of the drain).
    assert_eq!(n("responses"), sent - n("in_flight_at_end"), "{r}");
    assert_eq!(n("in_flight_at_end"), 0, "{r}");
    let lines = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let log = lines(&dir.join("nginx/access.log"));
    assert_eq!(
        n("responses"),
        log.len() as u64,
        "responses vs access log lines: {r}"
    );
    // nginx sent each of them chunked.
    let te = lines(&te_log);
    assert_eq!(te.len(), log.len());
    assert!(
        te.iter().all(|l| l == "chunked"),
        "not every response was chunked: {:?}",
        te.iter().find(|l| *l != "chunked")
    );
}
