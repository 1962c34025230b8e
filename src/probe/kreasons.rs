//! The kernel's own drop reasons for a run (issue 48 item 2): one counter of `skb:kfree_skb`
//! per reason of interest (filter `reason == N`, N from this kernel's format file) and one of
//! all drops, machine-wide, opened when the run starts. Without root: which view the user
//! gets, and why. The kernel calls are behind `Opener` (sys::tracepoint for real), so this
//! logic is tested without root.

use crate::model::kreasons::{
    parse_reason_names, KernelReasons, KernelView, NotCounted, OverflowCheck, ReasonCount,
    LISTEN_OVERFLOW, OF_INTEREST,
};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Whether the kernel's reasons are counted: off by default (their cost, `OFF_COST`), turned
/// on by the scenario's `probe.kernel_reasons`, `synlab probe --kernel-reasons` or the TUI's
/// `Y`; the sampler opens or closes the counters at its next sample.
#[derive(Debug, Clone, Default)]
pub struct Switch(Arc<AtomicBool>);

impl Switch {
    pub fn new(on: bool) -> Self {
        Switch(Arc::new(AtomicBool::new(on)))
    }
    pub fn on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed)
    }
    /// Flips it; the new state.
    pub fn toggle(&self) -> bool {
        !self.0.fetch_xor(true, Ordering::Relaxed)
    }
}

/// Two switches are equal when they say the same (a config's equality is of its values).
impl PartialEq for Switch {
    fn eq(&self, other: &Self) -> bool {
        self.on() == other.on()
    }
}

/// The sampler's counters as the switch wants them: opened when it turns on (the
/// namespace's ListenOverflows read then is the cross-check's base), closed when it turns off.
pub struct Counting {
    pub counters: Result<ReasonCounters, NotCounted>,
    pub overflows_base: Option<u64>,
}

impl Counting {
    pub fn off() -> Self {
        Counting {
            counters: Err(NotCounted::Off),
            overflows_base: None,
        }
    }

    /// Follows `want`: a line for the run's notes when it changed (opened, refused, closed).
    /// A refusal is not retried until the switch goes off and on again.
    pub fn follow(
        &mut self,
        want: bool,
        start: impl FnOnce() -> Result<ReasonCounters, NotCounted>,
        overflows_now: Option<u64>,
    ) -> Option<String> {
        let off = matches!(self.counters, Err(NotCounted::Off));
        if want && off {
            self.counters = start();
            self.overflows_base = overflows_now;
            Some(match &self.counters {
                Ok(r) => r.note.clone(),
                Err(why) => why.to_string(),
            })
        } else if !want && !off {
            *self = Counting::off();
            Some("the kernel's own reasons: counting stopped (off)".into())
        } else {
            None
        }
    }
}

/// A started counter: its count since it opened.
pub trait Counter: Send {
    fn read(&self) -> io::Result<u64>;
}

/// Opens counters of the tracepoint, all of its hits or those that pass a filter.
pub trait Opener {
    fn open(&self, filter: Option<&str>) -> io::Result<Box<dyn Counter>>;
}

/// The counters of one run.
pub struct ReasonCounters {
    reasons: Vec<(String, Box<dyn Counter>)>,
    all: Box<dyn Counter>,
    started: Instant,
    /// A line for the run's notes: where the names came from, whether synlab mounted tracefs.
    pub note: String,
}

/// The reasons of interest this kernel has, with their filters (`reason == 40`): those of
/// `OF_INTEREST` its format file names, in that order.
pub fn plan(format: &str) -> Result<Vec<(String, String)>, String> {
    let names = parse_reason_names(format)?;
    Ok(OF_INTEREST
        .iter()
        .filter_map(|want| {
            names
                .iter()
                .find(|(_, n)| n == want)
                .map(|(n, name)| (name.clone(), format!("reason == {n}")))
        })
        .collect())
}

impl ReasonCounters {
    /// Opens the counters through `opener` for the reasons `format` names.
    pub fn open_with(opener: &dyn Opener, format: &str) -> Result<Self, NotCounted> {
        let refused = |e: io::Error| NotCounted::Refused(e.to_string());
        let plan = plan(format).map_err(NotCounted::Refused)?;
        let all = opener.open(None).map_err(refused)?;
        let mut reasons = Vec::with_capacity(plan.len());
        for (name, filter) in plan {
            reasons.push((name, opener.open(Some(&filter)).map_err(refused)?));
        }
        Ok(ReasonCounters {
            reasons,
            all,
            started: Instant::now(),
            note: String::new(),
        })
    }

    /// The real counters on this machine: root only (`root` as the caller found it).
    pub fn start(root: bool) -> Result<Self, NotCounted> {
        if !root {
            return Err(NotCounted::NotRoot);
        }
        let (tp, mounted) = crate::sys::tracepoint::read_tracepoint("skb", "kfree_skb")
            .map_err(|e| NotCounted::Refused(format!("tracefs: {e}")))?;
        let cpus = crate::sys::machine::online_cpus();
        let opener = Real { id: tp.id, cpus };
        let mut c = Self::open_with(&opener, &tp.format)?;
        c.note = format!(
            "the kernel's own drop reasons: skb:kfree_skb (id {}) counted per reason on {} CPUs, \
             machine-wide{}",
            tp.id,
            opener.cpus.len(),
            if mounted {
                "; tracefs mounted for the read and unmounted"
            } else {
                ""
            }
        );
        Ok(c)
    }

    /// The counts so far. A counter that fails to read is a refusal (said, not zero).
    pub fn read(&self) -> KernelReasons {
        let secs = self.started.elapsed().as_secs_f64();
        let all = match self.all.read() {
            Ok(n) => n,
            Err(e) => return KernelReasons::NotCounted(NotCounted::Refused(e.to_string())),
        };
        let mut counts = Vec::with_capacity(self.reasons.len());
        for (name, c) in &self.reasons {
            match c.read() {
                Ok(count) => counts.push(ReasonCount {
                    name: name.clone(),
                    count,
                }),
                Err(e) => return KernelReasons::NotCounted(NotCounted::Refused(e.to_string())),
            }
        }
        KernelReasons::counted(counts, all, secs)
    }
}

/// The namespace's counter TCP_LISTEN_OVERFLOW is checked against.
pub const LISTEN_OVERFLOWS: &str = "TcpExt.ListenOverflows";

/// A sample's view: the counts so far (or why not) and, while counted, TCP_LISTEN_OVERFLOW
/// against the namespace's ListenOverflows since the counters opened (`base`, `now`).
pub fn view(
    counters: &Result<ReasonCounters, NotCounted>,
    base: Option<u64>,
    now: Option<u64>,
) -> KernelView {
    match counters {
        Err(why) => KernelView {
            reasons: KernelReasons::NotCounted(why.clone()),
            overflow: None,
        },
        Ok(c) => {
            let reasons = c.read();
            let overflow = match (reasons.count(LISTEN_OVERFLOW), base, now) {
                (Some(kernel), Some(b), Some(n)) => Some(OverflowCheck {
                    counter: n.saturating_sub(b),
                    kernel,
                }),
                _ => None,
            };
            KernelView { reasons, overflow }
        }
    }
}

/// The kernel's counters (sys::tracepoint), one per reason, each on every online CPU.
struct Real {
    id: u64,
    cpus: Vec<usize>,
}

impl Counter for crate::sys::tracepoint::TracepointCounter {
    fn read(&self) -> io::Result<u64> {
        crate::sys::tracepoint::TracepointCounter::read(self)
    }
}

impl Opener for Real {
    fn open(&self, filter: Option<&str>) -> io::Result<Box<dyn Counter>> {
        Ok(Box::new(crate::sys::tracepoint::TracepointCounter::open(
            self.id, filter, &self.cpus,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    const FORMAT: &str = "print fmt: \"reason: %s\", __print_symbolic(REC->reason, { 2, \"NOT_SPECIFIED\" }, { 3, \"NO_SOCKET\" }, { 29, \"SOCKET_BACKLOG\" }, { 40, \"TCP_LISTEN_OVERFLOW\" }, { 128, \"MAX\" })";

    /// A fake kernel: each filter's counter reads what the test sets; opening `refuse` fails.
    #[derive(Default)]
    struct Fake {
        counts: std::sync::Mutex<Vec<(Option<String>, Arc<AtomicU64>)>>,
        refuse: Option<String>,
    }
    struct FakeCounter(Arc<AtomicU64>);
    impl Counter for FakeCounter {
        fn read(&self) -> io::Result<u64> {
            Ok(self.0.load(Ordering::Relaxed))
        }
    }
    impl Opener for Fake {
        fn open(&self, filter: Option<&str>) -> io::Result<Box<dyn Counter>> {
            if filter.is_some() && self.refuse.as_deref() == filter {
                return Err(io::Error::from_raw_os_error(libc_eacces()));
            }
            let a = Arc::new(AtomicU64::new(0));
            self.counts
                .lock()
                .unwrap()
                .push((filter.map(String::from), a.clone()));
            Ok(Box::new(FakeCounter(a)))
        }
    }
    fn libc_eacces() -> i32 {
        13
    }
    impl Fake {
        fn set(&self, filter: Option<&str>, n: u64) {
            let c = self.counts.lock().unwrap();
            let (_, a) = c.iter().find(|(f, _)| f.as_deref() == filter).unwrap();
            a.store(n, Ordering::Relaxed);
        }
    }

    #[test]
    fn plan_filters_the_reasons_of_interest_this_kernel_names_by_its_numbers() {
        let p = plan(FORMAT).unwrap();
        assert_eq!(
            p,
            [
                (
                    "TCP_LISTEN_OVERFLOW".to_string(),
                    "reason == 40".to_string()
                ),
                ("SOCKET_BACKLOG".into(), "reason == 29".into()),
                ("NO_SOCKET".into(), "reason == 3".into()),
            ]
        );
    }

    #[test]
    fn counts_read_per_reason_with_the_rest_as_other() {
        let fake = Fake::default();
        let c = ReasonCounters::open_with(&fake, FORMAT).unwrap();
        fake.set(None, 130);
        fake.set(Some("reason == 40"), 100);
        fake.set(Some("reason == 3"), 20);
        let k = c.read();
        assert_eq!(k.count("TCP_LISTEN_OVERFLOW"), Some(100));
        assert_eq!(k.count("SOCKET_BACKLOG"), Some(0));
        let lines = k.lines();
        assert!(lines[0].contains("130 drops"), "{lines:?}");
        assert!(lines.last().unwrap().contains("other reasons"), "{lines:?}");
        let v = view(&Ok(c), Some(1000), Some(1130));
        assert_eq!(
            v.overflow,
            Some(OverflowCheck {
                counter: 130,
                kernel: 100
            })
        );
        let v = view(&Err(NotCounted::NotRoot), Some(1), Some(2));
        assert_eq!(v.overflow, None);
        assert!(v.reasons.lines()[0].contains("plain user"));
    }

    #[test]
    fn without_root_or_when_refused_the_user_is_told_which_view_and_why() {
        let e = ReasonCounters::start(false).err().unwrap();
        assert_eq!(e, NotCounted::NotRoot);
        assert!(e.to_string().contains("TcpExt/Udp counters"), "{e}");
        let fake = Fake {
            refuse: Some("reason == 29".into()),
            ..Default::default()
        };
        let e = ReasonCounters::open_with(&fake, FORMAT).err().unwrap();
        assert!(
            matches!(&e, NotCounted::Refused(m) if m.contains("denied")),
            "{e:?}"
        );
        let e = ReasonCounters::open_with(&Fake::default(), "no format")
            .err()
            .unwrap();
        assert!(e.to_string().contains("__print_symbolic"), "{e}");
    }

    #[test]
    fn counting_follows_the_switch_off_by_default_and_says_how_to_turn_it_on() {
        let fake = Fake::default();
        let sw = Switch::default();
        assert!(!sw.on());
        let mut c = Counting::off();
        assert_eq!(c.follow(sw.on(), || unreachable!(), Some(5)), None);
        let v = view(&c.counters, c.overflows_base, Some(9));
        assert!(v.reasons.lines()[0].contains("turn on with Y"), "{v:?}");
        assert!(
            v.reasons.lines()[0].contains("kernel_reasons = true"),
            "{v:?}"
        );
        assert!(sw.toggle());
        let line = c.follow(
            sw.on(),
            || ReasonCounters::open_with(&fake, FORMAT),
            Some(1000),
        );
        assert_eq!(line, Some(String::new()), "the counters' note");
        assert_eq!(c.overflows_base, Some(1000));
        // On: no reopening at the next sample (the counts run on).
        assert_eq!(c.follow(true, || unreachable!(), Some(2000)), None);
        fake.set(Some("reason == 40"), 7);
        let v = view(&c.counters, c.overflows_base, Some(1010));
        assert_eq!(v.reasons.count(LISTEN_OVERFLOW), Some(7));
        assert!(!sw.toggle());
        let line = c.follow(sw.on(), || unreachable!(), None).unwrap();
        assert!(line.contains("stopped"), "{line}");
        assert!(matches!(c.counters, Err(NotCounted::Off)));
        // A refusal is said once and not retried while the switch stays on.
        let line = c.follow(true, || Err(NotCounted::NotRoot), None).unwrap();
        assert!(line.contains("plain user"), "{line}");
        assert_eq!(c.follow(true, || unreachable!(), None), None);
        assert_eq!(Switch::new(true), Switch::new(true));
        assert_ne!(Switch::new(true), Switch::default());
    }
}
