#!/usr/bin/env bash
# Issue 44: what synlab's own threads cost the load's CPU. A closed connection-per-request load
# (64 clients on CPU 1) against nginx on CPU 0, as bench/load.sh section 1 runs it; the lab's
# threads run on the load's CPU (issue 26), so every millisecond they take is the load's.
# For each build, interleaved run by run: each thread's CPU (ms per second, from
# /proc/<pid>/task/<tid>/schedstat) and wake-ups per second (context switches from its status),
# over the run's seconds 3 to SECS-1, the medians over the runs.
# Usage: sudo bench/lab-threads.sh [runs=3] [seconds=12] BUILD...   (default: a fresh release build)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-12}
shift $(($# < 2 ? $# : 2))
BUILDS=("$@")
if [ ${#BUILDS[@]} -eq 0 ]; then
  cargo build --release -q
  BUILDS=("$PWD/target/release/synlab")
fi
command -v nginx >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light; }
WORK=$(mktemp -d /tmp/synlab-threads.XXXXXX)
NGX_PID=""
cleanup() { [ -n "$NGX_PID" ] && kill "$NGX_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
PORT=18081
. bench/nginx-cpr.sh
start_nginx_cpr $PORT "$WORK"
cpr_scenario $PORT "$SECS" "$WORK/closed.toml"

# One line per thread of synlab's processes: "tid process-role cpu_ns switches", the role
# "lab" for the controller's process (its threads: the controller, probes, readers) and "load"
# for its children (the workers).
snap() {
  for pid in "$1" $(pgrep -P "$1"); do
    role=load; [ "$pid" = "$1" ] && role=lab
    for t in /proc/"$pid"/task/*; do
      printf '%s %s %s %s\n' "$(basename "$t")" "$role" \
        "$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)" \
        "$(awk '/ctxt_switches/ {s += $2} END {print s}' "$t/status" 2>/dev/null)"
    done
  done 2>/dev/null | awk 'NF == 4'
}

declare -A OUT
for i in $(seq "$RUNS"); do
  for b in "${BUILDS[@]}"; do
    "$b" run "$WORK/closed.toml" --no-progress --out "$WORK/res" > "$WORK/o" 2>&1 &
    p=$!
    # Over the time between the snapshots' midpoints (reading every thread takes a while).
    sleep 3; a=$(date +%s%N); snap $p > "$WORK/s1"; b1=$(date +%s%N)
    sleep $((SECS - 4)); c=$(date +%s%N); snap $p > "$WORK/s2"; d=$(date +%s%N)
    wait $p || { echo "$b failed: $(tail -3 "$WORK/o")" >&2; exit 1; }
    secs=$(awk -v a="$a" -v b="$b1" -v c="$c" -v d="$d" 'BEGIN {print ((c + d) - (a + b)) / 2e9}')
    OUT[$b]+=$(LC_ALL=C join <(LC_ALL=C sort "$WORK/s1") <(LC_ALL=C sort "$WORK/s2") | awk -v s="$secs" '
      { ms[$2] += ($6 - $3) / 1e6 / s; sw[$2] += ($7 - $4) / s }
      END { printf "%.2f %.1f %.1f %.0f;", ms["lab"], sw["lab"], ms["load"], sw["load"] }')
  done
  echo "run $i done: $(cut -d' ' -f1-3 /proc/loadavg)"
done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-34s %14s %14s %14s %14s\n' build "lab ms/s" "lab wake/s" "load ms/s" "load wake/s"
for b in "${BUILDS[@]}"; do
  row=$(echo "${OUT[$b]}" | tr ';' '\n' | grep .)
  printf '%-34s' "$b"
  for f in 1 2 3 4; do printf ' %14s' "$(echo "$row" | cut -d' ' -f$f | median)"; done
  echo
done
