#!/bin/sh
# The cost of counting the kernel's drop reasons (skb:kfree_skb per reason, perf_event_open):
# CPU per drop of a UDP flood to a port without a socket (one NO_SOCKET kfree_skb per
# datagram), without and with the counters, alternated in the same run, as a ratio and as a
# share of a core at 100k drops/s. Needs root. Usage: bench/kreasons-cost.sh [shapes...]
# (all: one event; overflow: all + TCP_LISTEN_OVERFLOW, what `kernel_reasons` opens; full: a
# filter per reason of interest; started: whatever ReasonCounters::start opens).
# The machine may be shared: run when it is quiet; read the ratio, not the nanoseconds.
set -eu
cd "$(dirname "$0")/.."
profile="--profile ${PROFILE:-release}"
cargo test $profile --test kreasons --no-run
SYNLAB_BENCH_SHAPES="${*:-all overflow full started}" \
    cargo test $profile --test kreasons cost_of_the_reason_counters -- --ignored --nocapture --test-threads 1 2>&1 |
    grep -v -E '^(running|test |$|   Compiling|    Finished|     Running)' || true
