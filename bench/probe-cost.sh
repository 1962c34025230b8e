#!/bin/sh
# Probe cost per source at 0 / 10k / 100k TIME_WAIT sockets (private netns each), total probe
# CPU at 200 ms, and `ss -tan` for comparison. Needs root. Usage: bench/probe-cost.sh [counts...]
# The machine may be shared: read the figures as orders of magnitude, run when it is quiet.
set -eu
cd "$(dirname "$0")/.."
counts="${*:-0 10000 100000}"
# PROFILE=dev reuses the debug build (deps at opt-level 2, ours at 1); release is the default.
profile="--profile ${PROFILE:-release}"
cargo test $profile --test probe_cost --no-run
for n in $counts; do
    SYNLAB_BENCH_TW="$n" cargo test $profile --test probe_cost -- --ignored --nocapture --test-threads 1 2>&1 |
        grep -v -E '^(running|test |$|   Compiling|    Finished|     Running)' || true
done
