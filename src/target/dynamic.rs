//! Dynamic endpoints of the built-in server, for seed 003's e-commerce workloads:
//! - `/cgi/{us}`: fork+exec of a CGI program per request (`synlab cgi-child --work us`, which
//!   burns `us` microseconds of CPU and prints a page); `/cgi/0` is a "light" CGI that costs
//!   only the process. The response carries the child's pid in `X-Synlab-Pid`.
//! - `/inproc/{us}`: the same work done by a handler inside the server (a servlet).
//! - `/db/{rows}`: an aggregate with a join over `rows` rows of an embedded SQLite database the
//!   server creates at start (tables of 100 to 20,000 rows, as in seed 003's BOOKS/EMPLOYEE).
//!
//! Blocking architectures run every endpoint in the worker (an Apache child waits for its CGI
//! too). The event loop runs `inproc` and `db` inline (CPU work blocks the loop, as service
//! time does) but hands CGI children to [`CgiPool`] threads, so waiting for a child's output
//! never stalls the other connections.

use super::core::{Counters, Response};
use super::http::{self, Method, Parse};
use crate::sys::cgi_spawn;
use anyhow::Context;
use rand::{Rng, SeedableRng};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Largest amount of work a `/cgi` or `/inproc` request may ask for (1 s of CPU).
pub const MAX_WORK_US: u64 = 1_000_000;
/// Row counts of the database's tables (`items_{n}`).
pub const DB_TABLE_ROWS: [u32; 7] = [100, 500, 1_000, 2_000, 5_000, 10_000, 20_000];
/// Largest `/db/{rows}`.
pub const MAX_DB_ROWS: u32 = 20_000;
/// Most CGI children the event server runs at once (more requests wait in a queue, like
/// Apache's MaxClients).
pub const CGI_THREADS: usize = 16;
/// A CGI child's output beyond this is dropped.
const MAX_CGI_OUTPUT: usize = 1 << 20;
/// Product categories joined to the item tables.
const CATEGORIES: u32 = 20;

/// A dynamic endpoint and its amount of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Cgi { work_us: u64 },
    Inproc { work_us: u64 },
    Db { rows: u32 },
}

fn number(s: &str) -> Option<u64> {
    // Digits only, as for /bytes/: `+5`, `-1`, `1e3` are not amounts.
    (!s.is_empty() && s.len() <= 12 && s.bytes().all(|c| c.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// The endpoint a path names, if any (a query string is ignored). Out-of-range amounts are
/// not endpoints (they fall through to 404).
pub fn route(path: &str) -> Option<Endpoint> {
    let path = path.split('?').next().unwrap_or(path);
    if let Some(n) = path.strip_prefix("/cgi/") {
        return number(n)
            .filter(|&w| w <= MAX_WORK_US)
            .map(|work_us| Endpoint::Cgi { work_us });
    }
    if let Some(n) = path.strip_prefix("/inproc/") {
        return number(n)
            .filter(|&w| w <= MAX_WORK_US)
            .map(|work_us| Endpoint::Inproc { work_us });
    }
    if let Some(n) = path.strip_prefix("/db/") {
        return number(n)
            .filter(|&r| (1..=MAX_DB_ROWS as u64).contains(&r))
            .map(|r| Endpoint::Db { rows: r as u32 });
    }
    None
}

/// A parsed request for a dynamic endpoint, with what its response needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest {
    pub endpoint: Endpoint,
    pub minor: u8,
    pub keep: bool,
    pub head_only: bool,
}

/// The dynamic request in a parse result (None: a static path or a bad request).
pub fn request_of(parse: &Parse, keepalive: bool) -> Option<DynRequest> {
    let Parse::Done(req) = parse else {
        return None;
    };
    Some(DynRequest {
        endpoint: route(&req.path)?,
        minor: req.minor,
        keep: keepalive && req.wants_keepalive,
        head_only: req.method == Method::Head,
    })
}

/// What an endpoint produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub status: u16,
    pub body: Vec<u8>,
    /// The CGI child's pid.
    pub pid: Option<u32>,
}

impl Output {
    fn failed(why: String) -> Output {
        Output {
            status: 500,
            body: format!("{why}\n").into_bytes(),
            pid: None,
        }
    }
}

/// Counts a finished dynamic request and builds its response.
pub fn finish(req: &DynRequest, out: Output, counters: &Counters) -> Response {
    let c = match (out.status, req.endpoint) {
        (200, Endpoint::Cgi { .. }) => &counters.dyn_cgi,
        (200, Endpoint::Inproc { .. }) => &counters.dyn_inproc,
        (200, Endpoint::Db { .. }) => &counters.dyn_db,
        _ => &counters.dyn_errors,
    };
    c.fetch_add(1, Relaxed);
    let keep = req.keep && out.status == 200;
    let mut head = http::response_head(
        out.status,
        req.minor,
        out.body.len() as u64,
        "text/html",
        keep,
    );
    if let Some(pid) = out.pid {
        // Before the blank line that ends the head.
        let at = head.len() - 2;
        head.splice(at..at, format!("X-Synlab-Pid: {pid}\r\n").into_bytes());
    }
    if !req.head_only {
        head.extend_from_slice(&out.body);
    }
    Response {
        status: out.status,
        head,
        body_len: 0,
        keep,
    }
}

/// The page a CGI child or in-process handler returns after `work_us` of CPU.
pub fn work_page(kind: &str, work_us: u64, pid: u32) -> Vec<u8> {
    let mut s = format!(
        "<html><head><title>synlab {kind}</title></head><body>\n<h1>{kind}</h1>\n\
         <p>pid {pid}, {work_us} us of CPU</p>\n<ul>\n"
    );
    // A few lines of generated content, as a small dynamic page would have.
    for i in 0..8 {
        s.push_str(&format!(
            "<li>item {i}: {:016x}</li>\n",
            (work_us + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i
        ));
    }
    s.push_str("</ul></body></html>\n");
    s.into_bytes()
}

/// `synlab cgi-child --work N`: the CGI program. Burns N us of CPU, prints the page, exits.
pub fn cgi_child_main(work_us: u64) -> anyhow::Result<()> {
    super::work::burn(work_us.min(MAX_WORK_US) * 1000);
    let mut out = std::io::stdout().lock();
    out.write_all(&work_page("cgi", work_us, std::process::id()))?;
    out.flush()?;
    Ok(())
}

/// Runs one CGI request: fork+exec `exe cgi-child --work N` and read its page.
pub fn run_cgi(exe: &Path, work_us: u64) -> Output {
    let args = [
        "cgi-child".to_string(),
        "--work".into(),
        work_us.to_string(),
        "--ns-per-iter".into(),
        super::work::speed().to_string(),
    ];
    match cgi_spawn::fork_exec_capture(exe, &args, MAX_CGI_OUTPUT) {
        Ok(r) if r.ok && !r.stdout.is_empty() => Output {
            status: 200,
            body: r.stdout,
            pid: Some(r.pid),
        },
        Ok(r) => Output::failed(format!("cgi child {} failed", r.pid)),
        Err(e) => Output::failed(format!("cannot start cgi child {}: {e}", exe.display())),
    }
}

/// What the workers need to run dynamic requests (read-only, shared by forked workers).
#[derive(Debug, Clone)]
pub struct Dynamic {
    /// The program CGI requests exec (our own binary, or SYNLAB_EXE).
    pub exe: PathBuf,
    /// The SQLite file (None: the database could not be made; /db answers 500).
    pub db: Option<PathBuf>,
}

impl Dynamic {
    /// Runs any endpoint to completion on this thread.
    pub fn execute(&self, ep: Endpoint) -> Output {
        match ep {
            Endpoint::Cgi { work_us } => run_cgi(&self.exe, work_us),
            Endpoint::Inproc { work_us } => {
                super::work::burn(work_us * 1000);
                Output {
                    status: 200,
                    body: work_page("inproc", work_us, std::process::id()),
                    pid: None,
                }
            }
            Endpoint::Db { rows } => match &self.db {
                Some(path) => match query_db(path, rows) {
                    Ok(body) => Output {
                        status: 200,
                        body,
                        pid: None,
                    },
                    Err(e) => Output::failed(format!("db query failed: {e}")),
                },
                None => Output::failed("the server has no database".into()),
            },
        }
    }
}

/// The SQLite database file; removed when dropped.
#[derive(Debug)]
pub struct DbFile {
    pub path: PathBuf,
}

impl DbFile {
    /// Creates `synlab-db-{pid}-{n}.sqlite` in the temp dir with a `categories` table and one
    /// `items_{n}` table per entry of [`DB_TABLE_ROWS`] (seeded, so every run has the same data).
    pub fn create() -> anyhow::Result<DbFile> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "synlab-db-{}-{}.sqlite",
            std::process::id(),
            SEQ.fetch_add(1, Relaxed)
        ));
        let _ = std::fs::remove_file(&path);
        remove_orphans(&std::env::temp_dir());
        let guard = DbFile { path };
        fill_db(&guard.path)
            .with_context(|| format!("creating the database {}", guard.path.display()))?;
        Ok(guard)
    }
}

/// Removes the database files of this user's servers that are gone (killed, so their Drop
/// never ran): `synlab-db-{pid}-{n}.sqlite` whose pid has no process. A pid reused since keeps
/// its file until that process is gone too.
fn remove_orphans(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = crate::sys::privilege::effective_uid();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("synlab-db-"))
            .and_then(|n| n.strip_suffix(".sqlite"))
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let mine = e
            .metadata()
            .is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == me);
        if mine && !crate::sys::process::running(pid) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for DbFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn fill_db(path: &Path) -> rusqlite::Result<()> {
    let mut conn = rusqlite::Connection::open(path)?;
    // Nothing here needs to survive a crash: skip the journal and fsyncs.
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
         CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    )?;
    let tx = conn.transaction()?;
    {
        let mut ins = tx.prepare("INSERT INTO categories (id, name) VALUES (?1, ?2)")?;
        for c in 1..=CATEGORIES {
            ins.execute(rusqlite::params![c, format!("category-{c:02}")])?;
        }
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    for n in DB_TABLE_ROWS {
        tx.execute_batch(&format!(
            "CREATE TABLE items_{n} (id INTEGER PRIMARY KEY, category INTEGER NOT NULL,
             title TEXT NOT NULL, price REAL NOT NULL, qty INTEGER NOT NULL);"
        ))?;
        let mut ins = tx.prepare(&format!(
            "INSERT INTO items_{n} (id, category, title, price, qty) VALUES (?1, ?2, ?3, ?4, ?5)"
        ))?;
        for id in 1..=n {
            ins.execute(rusqlite::params![
                id,
                rng.gen_range(1..=CATEGORIES),
                format!("item {id} of {n}: a product title of typical length"),
                rng.gen_range(1.0..200.0f64),
                rng.gen_range(1..50u32),
            ])?;
        }
    }
    tx.commit()
}

/// The smallest table holding `rows` rows.
pub fn table_for(rows: u32) -> u32 {
    DB_TABLE_ROWS
        .into_iter()
        .find(|&n| n >= rows)
        .unwrap_or(MAX_DB_ROWS)
}

thread_local! {
    /// This thread's read-only connection: (pid that opened it, file, connection). A forked
    /// worker must not use its parent's connection, so a pid change opens a new one.
    static CONN: RefCell<Option<(u32, PathBuf, rusqlite::Connection)>> = const { RefCell::new(None) };
}

/// Sales per category over the first `rows` items: a join and a grouped aggregate that reads
/// exactly `rows` rows, so its cost grows with `rows`. Returns the result as an HTML table.
pub fn query_db(path: &Path, rows: u32) -> rusqlite::Result<Vec<u8>> {
    let table = table_for(rows);
    CONN.with(|cell| {
        let mut slot = cell.borrow_mut();
        let pid = std::process::id();
        let fresh = !matches!(&*slot, Some((p, f, _)) if *p == pid && f == path);
        if fresh {
            if let Some((p, _, old)) = slot.take() {
                if p != pid {
                    // Inherited across fork: never close (or use) the parent's handle here.
                    std::mem::forget(old);
                }
            }
            let c = rusqlite::Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            *slot = Some((pid, path.to_path_buf(), c));
        }
        let conn = &slot.as_ref().expect("opened above").2;
        let mut st = conn.prepare_cached(&format!(
            "SELECT c.name, count(*), sum(i.price * i.qty), avg(i.price)
             FROM items_{table} i JOIN categories c ON c.id = i.category
             WHERE i.id <= ?1 GROUP BY c.id ORDER BY 3 DESC"
        ))?;
        let mut body =
            format!("<html><body><h1>sales over {rows} items (items_{table})</h1>\n<table>\n");
        let mut q = st.query([rows])?;
        while let Some(r) = q.next()? {
            let (name, n, total, avg): (String, i64, f64, f64) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
            body.push_str(&format!(
                "<tr><td>{name}</td><td>{n}</td><td>{total:.2}</td><td>{avg:.2}</td></tr>\n"
            ));
        }
        body.push_str("</table></body></html>\n");
        Ok(body.into_bytes())
    })
}

/// A CGI request handed to the pool; `token` comes back with its result.
struct Job {
    token: (usize, u64),
    work_us: u64,
}

/// A finished CGI request.
pub struct Done {
    pub token: (usize, u64),
    pub out: Output,
}

/// Threads that run CGI children for the event loop. They start on demand (up to
/// [`CGI_THREADS`]), so an event server that never serves CGI stays one thread. Each finished
/// child's result goes on a channel and a byte on `wake` makes the loop's epoll return.
pub struct CgiPool {
    exe: PathBuf,
    jobs: Option<crossbeam_channel::Sender<Job>>,
    jobs_rx: crossbeam_channel::Receiver<Job>,
    done_tx: crossbeam_channel::Sender<Done>,
    done: crossbeam_channel::Receiver<Done>,
    wake_tx: Arc<UnixStream>,
    wake: UnixStream,
    idle: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl CgiPool {
    pub fn new(exe: PathBuf) -> std::io::Result<CgiPool> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (dtx, drx) = crossbeam_channel::unbounded();
        let (wake, wake_tx) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        wake_tx.set_nonblocking(true)?;
        Ok(CgiPool {
            exe,
            jobs: Some(tx),
            jobs_rx: rx,
            done_tx: dtx,
            done: drx,
            wake_tx: Arc::new(wake_tx),
            wake,
            idle: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        })
    }

    /// The descriptor to poll for finished children.
    pub fn wake_fd(&self) -> &UnixStream {
        &self.wake
    }

    /// Queues a CGI request, starting another thread if none is idle.
    pub fn submit(&mut self, token: (usize, u64), work_us: u64) {
        if self.idle.load(Relaxed) == 0 && self.threads.len() < CGI_THREADS {
            self.spawn_thread();
        }
        if let Some(tx) = &self.jobs {
            let _ = tx.send(Job { token, work_us });
        }
    }

    fn spawn_thread(&mut self) {
        let (exe, rx, tx) = (self.exe.clone(), self.jobs_rx.clone(), self.done_tx.clone());
        let (wake, idle, stop) = (self.wake_tx.clone(), self.idle.clone(), self.stop.clone());
        idle.fetch_add(1, Relaxed);
        let h = std::thread::Builder::new()
            .name(format!("cgi-{}", self.threads.len()))
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    if stop.load(Relaxed) {
                        break;
                    }
                    idle.fetch_sub(1, Relaxed);
                    let out = run_cgi(&exe, job.work_us);
                    idle.fetch_add(1, Relaxed);
                    let _ = tx.send(Done {
                        token: job.token,
                        out,
                    });
                    // A full wake pipe already holds a wake-up: WouldBlock is fine.
                    let _ = (&*wake).write(&[1]);
                }
            });
        match h {
            Ok(h) => self.threads.push(h),
            // No thread: the job waits for an existing one (there is at least one unless
            // this was the first, in which case run_cgi's failure shows as 500s).
            Err(_) => {
                self.idle.fetch_sub(1, Relaxed);
            }
        }
    }

    /// Finished requests since the last call (drains the wake-ups too).
    pub fn finished(&mut self) -> Vec<Done> {
        let mut b = [0u8; 256];
        while matches!(self.wake.read(&mut b), Ok(n) if n > 0) {}
        self.done.try_iter().collect()
    }
}

impl Drop for CgiPool {
    fn drop(&mut self) {
        // Running children finish (their work is bounded); queued ones are dropped.
        self.stop.store(true, Relaxed);
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_servers_database_file_is_removed_by_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        // pid 0 is never a process: its file is an orphan; ours is alive.
        let orphan = dir.path().join("synlab-db-0-3.sqlite");
        let alive = dir
            .path()
            .join(format!("synlab-db-{}-0.sqlite", std::process::id()));
        let other = dir.path().join("notes.sqlite");
        for f in [&orphan, &alive, &other] {
            std::fs::write(f, b"x").unwrap();
        }
        remove_orphans(dir.path());
        assert!(!orphan.exists());
        assert!(alive.exists() && other.exists());
    }

    #[test]
    fn routes_take_digits_in_range_only() {
        assert_eq!(route("/cgi/0"), Some(Endpoint::Cgi { work_us: 0 }));
        assert_eq!(
            route("/inproc/2500?x=1"),
            Some(Endpoint::Inproc { work_us: 2500 })
        );
        assert_eq!(route("/db/20000"), Some(Endpoint::Db { rows: 20_000 }));
        for p in [
            "/cgi/",
            "/cgi/-1",
            "/cgi/1e3",
            "/cgi/1000001",
            "/db/0",
            "/db/20001",
            "/inproc/x",
            "/bytes/10",
        ] {
            assert_eq!(route(p), None, "{p}");
        }
    }

    #[test]
    fn tables_cover_every_row_count() {
        assert_eq!(table_for(1), 100);
        assert_eq!(table_for(100), 100);
        assert_eq!(table_for(101), 500);
        assert_eq!(table_for(20_000), 20_000);
    }

    #[test]
    fn finish_adds_pid_header_counts_and_drops_body_for_head() {
        let c = Counters::default();
        let req = DynRequest {
            endpoint: Endpoint::Cgi { work_us: 0 },
            minor: 1,
            keep: true,
            head_only: false,
        };
        let out = Output {
            status: 200,
            body: b"hi\n".to_vec(),
            pid: Some(42),
        };
        let r = finish(&req, out.clone(), &c);
        let text = String::from_utf8(r.head.clone()).unwrap();
        assert!(text.contains("\r\nX-Synlab-Pid: 42\r\n\r\nhi\n"), "{text}");
        assert!(text.contains("Content-Length: 3\r\n"), "{text}");
        assert!(r.keep);
        let head = finish(
            &DynRequest {
                head_only: true,
                ..req
            },
            out,
            &c,
        );
        assert!(head.head.ends_with(b"\r\n\r\n"));
        assert_eq!(c.dyn_cgi.load(Relaxed), 2);
        let bad = finish(&req, Output::failed("x".into()), &c);
        assert_eq!((bad.status, bad.keep), (500, false));
        assert_eq!(c.dyn_errors.load(Relaxed), 1);
    }

    #[test]
    fn database_answers_per_category_and_reads_the_asked_rows() {
        let db = DbFile::create().unwrap();
        let page = String::from_utf8(query_db(&db.path, 150).unwrap()).unwrap();
        assert!(page.contains("items_500"), "{page}");
        // Counts per category add up to the rows asked for.
        let total: i64 = page
            .lines()
            .filter_map(|l| l.strip_prefix("<tr><td>"))
            .map(|l| l.split("</td><td>").nth(1).unwrap().parse::<i64>().unwrap())
            .sum();
        assert_eq!(total, 150);
        let path = db.path.clone();
        drop(db);
        assert!(!path.exists());
    }
}
