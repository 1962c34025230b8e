//! CPU split on the real kernel: a busy loop pinned to one core shows as (nearly) all busy,
//! mostly user-mode time, on that core, and about half the machine's user-mode time on 2
//! cores. Margins are loose: the machine is shared. User mode is user + nice: the kernel counts
//! a niced process's user time as nice, and the test may itself run under `nice`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use synlab::probe::{spawn, ProbeConfig};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[test]
fn pinned_busy_loop_shows_on_its_core() {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let core = ncpu - 1;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let busy = std::thread::spawn(move || {
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
    let end = Instant::now() + Duration::from_millis(2500);
    let mut samples = Vec::new();
    while Instant::now() < end {
        samples.push(rx.recv_timeout(Duration::from_secs(3)).unwrap());
    }
    drop(handle);
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();

    let with_rates: Vec<_> = samples.iter().filter(|s| s.dt_s.is_some()).collect();
    assert!(with_rates.len() >= 4, "{} samples", with_rates.len());
    let core_user = median(
        with_rates
            .iter()
            .map(|s| {
                let c = s.per_cpu[core].unwrap();
                c.user + c.nice
            })
            .collect(),
    );
    let core_busy = median(
        with_rates
            .iter()
            .map(|s| s.per_cpu[core].unwrap().busy())
            .collect(),
    );
    let total_user = median(
        with_rates
            .iter()
            .map(|s| s.m.cpu_user_pct.unwrap() + s.m.cpu_nice_pct.unwrap_or(0.0))
            .collect(),
    );
    eprintln!("core {core}: user {core_user:.1} %, busy {core_busy:.1} %; total user {total_user:.1} % on {ncpu} CPUs");
    assert!(core_busy >= 85.0, "core {core} only {core_busy:.1} % busy");
    assert!(core_user >= 60.0, "core {core} only {core_user:.1} % user");
    let expect_total = 100.0 / ncpu as f64;
    assert!(
        total_user >= expect_total * 0.6,
        "total user {total_user:.1} %, expected about {expect_total:.0} %"
    );
    let probe = median(
        with_rates
            .iter()
            .filter_map(|s| s.m.probe_cpu_pct)
            .collect(),
    );
    assert!(probe < 20.0, "probes used {probe:.1} % of a core");
}
