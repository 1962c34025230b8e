//! CPU split on the real kernel: a busy loop pinned to one core shows as (nearly) all busy
//! on that core, and that core's user-mode time is at least the loop's own, as the kernel
//! counts it per thread (/proc/self/task/<tid>/stat), over the same samples; the machine's
//! user-mode time at least the loop's share of all cores. The machine is shared: other
//! processes on the core may take part of it, so the loop's own count is the reference, not
//! 100 %. User mode is user + nice: the kernel counts a niced process's user time as nice, and
//! the test may itself run under `nice`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::probe::{spawn, ProbeConfig};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// User-mode CPU time of thread `tid` of this process, in seconds.
fn thread_user_s(tid: i32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let st = synlab::sys::pidstat::PidStat::parse(&text).unwrap();
    st.utime as f64 / synlab::sys::procfs::clock_ticks() as f64
}

/// The dt-weighted mean of `f` over samples with rates.
fn mean_over(
    samples: &[&synlab::probe::ProbeSample],
    f: impl Fn(&synlab::probe::ProbeSample) -> f64,
) -> f64 {
    let total: f64 = samples.iter().map(|s| s.dt_s.unwrap()).sum();
    samples.iter().map(|s| f(s) * s.dt_s.unwrap()).sum::<f64>() / total
}

#[test]
fn pinned_busy_loop_shows_on_its_core() {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let core = ncpu - 1;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let busy = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(core, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
        let mut x = 0u64;
        while !s.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        x
    });
    std::thread::sleep(Duration::from_millis(200));
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut cfg = ProbeConfig::new(0);
    cfg.pcap = false;
    cfg.interval = Duration::from_millis(400);
    let handle = spawn(cfg, tx).unwrap();
    let tid = tid_rx.recv().unwrap();
    let end = Instant::now() + Duration::from_millis(2500);
    // Each sample with the loop thread's own user time when it arrived.
    let mut samples = Vec::new();
    while Instant::now() < end {
        let s = rx.recv_timeout(Duration::from_secs(3)).unwrap();
        samples.push((s, Instant::now(), thread_user_s(tid)));
    }
    drop(handle);
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();

    // From the first sample (the base) to the last: the samples with rates cover it.
    let (first, last) = (&samples[0], &samples[samples.len() - 1]);
    let loop_user = (last.2 - first.2) / last.1.duration_since(first.1).as_secs_f64() * 100.0;
    let with_rates: Vec<_> = samples[1..]
        .iter()
        .map(|(s, _, _)| s)
        .filter(|s| s.dt_s.is_some())
        .collect();
    assert!(with_rates.len() >= 4, "{} samples", with_rates.len());
    let core_user = mean_over(&with_rates, |s| {
        let c = s.per_cpu[core].unwrap();
        c.user + c.nice
    });
    let core_busy = median(
        with_rates
            .iter()
            .map(|s| s.per_cpu[core].unwrap().busy())
            .collect(),
    );
    let total_user = mean_over(&with_rates, |s| {
        s.m.cpu_user_pct.unwrap() + s.m.cpu_nice_pct.unwrap_or(0.0)
    });
    eprintln!(
        "core {core}: user {core_user:.1} %, busy {core_busy:.1} % (the loop's own user time: \
         {loop_user:.1} % of it); total user {total_user:.1} % on {ncpu} CPUs"
    );
    // The loop is always runnable on its core: the core is never idle.
    assert!(core_busy >= 85.0, "core {core} only {core_busy:.1} % busy");
    // Tick-sampled per-CPU time against the thread's own count: a few points apart at most.
    assert!(
        core_user >= loop_user - 5.0,
        "core {core} user {core_user:.1} %, below the busy loop's own {loop_user:.1} %"
    );
    assert!(
        loop_user >= 10.0,
        "the busy loop ran only {loop_user:.1} % of its core: the test measured nothing"
    );
    assert!(
        total_user >= (loop_user - 5.0) / ncpu as f64,
        "total user {total_user:.1} %, below the loop's {:.1} % of the machine",
        loop_user / ncpu as f64
    );
    let probe = median(
        with_rates
            .iter()
            .filter_map(|s| s.m.probe_cpu_pct)
            .collect(),
    );
    assert!(probe < 20.0, "probes used {probe:.1} % of a core");
}
