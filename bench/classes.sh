#!/usr/bin/env bash
# What per-class results cost (issue 31): the controller's CPU and peak RSS and the load
# workers' CPU, for a mix of 4 request classes over 2 network paths, against the anchor: the
# same requests labelled as one class (no per-class counting), in the same session, runs
# interleaved, medians reported with the machine's load average. Needs root (network lab).
# Usage: sudo bench/classes.sh [runs=3] [hold_s=20] [rate=2000]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
HOLD=${2:-20}
RATE=${3:-2000}
cargo build --release -q
SYN=$PWD/target/release/synlab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The SPECweb96 shares (35/50/14/1 %) over four sizes, labelled per class or all alike.
scenario() { # $1: name, $2..$5: the four classes' labels
  cat <<EOF
name = "$1"
duration = "$((HOLD + 4))s"
[target]
arch = "event"
service_time = "50us"
backlog = 1024
[load]
mode = "open"
rate = $RATE
sockets = 20000
timeout = "1s"
workers = 2
[[load.mix]]
class = "$2"
path = "/bytes/500"
weight = 35
[[load.mix]]
class = "$3"
path = "/bytes/5000"
weight = 50
[[load.mix]]
class = "$4"
path = "/bytes/50000"
weight = 14
[[load.mix]]
class = "$5"
path = "/bytes/200000"
weight = 1
[network]
backend = "router"
[[network.path]]
name = "near"
rtt = "2ms"
[[network.path]]
name = "far"
rtt = "20ms"
EOF
}
scenario classes4 class0 class1 class2 class3 >"$TMP/classes4.toml"
scenario classes1 all all all all >"$TMP/classes1.toml"

# One run: the controller's CPU seconds (utime + stime of its own process, from /proc before
# it exits) per second of run, its peak RSS (VmHWM, MB), and the workers' mean CPU (% of a
# core, summary.json), tab-separated.
measure() {
  local toml=$1 out=$TMP/out-$RANDOM
  "$SYN" run "$toml" --no-progress --out "$out" >/dev/null 2>&1 &
  local pid=$! t0 cpu=0 hwm=0
  t0=$(date +%s.%N)
  local tck; tck=$(getconf CLK_TCK)
  while kill -0 "$pid" 2>/dev/null; do
    if read -r -a st <"/proc/$pid/stat" 2>/dev/null; then
      # Fields after the command: utime and stime are 14 and 15 (1-based).
      cpu=$(( st[13] + st[14] ))
      hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "$hwm")
    fi
    sleep 0.2
  done
  wait "$pid" || true
  local t1; t1=$(date +%s.%N)
  local dir; dir=$(ls -td "$out"/*/ | head -1)
  local wcpu; wcpu=$(python3 -c "import json,sys; p=json.load(open('$dir/summary.json'))['points'][0]; print(p['worker_cpu_pct'], p['throughput_per_s'])")
  echo -e "$(python3 -c "print(f'{$cpu/$tck/($t1-$t0)*100:.2f}')")\t$((hwm / 1024))\t$wcpu"
}

echo "per-class cost: 4 classes x 2 paths vs 1 class, $RUNS runs of ${HOLD}s at $RATE/s, interleaved"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
  for v in classes4 classes1; do
    echo -e "$v\t$(measure "$TMP/$v.toml")" | tee -a "$TMP/results"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, cpu, rss, wcpu, thr = line.split()
    rows.setdefault(v, []).append((float(cpu), float(rss), float(wcpu), float(thr)))
med = {v: [statistics.median(c) for c in zip(*r)] for v, r in rows.items()}
for v, (cpu, rss, wcpu, thr) in med.items():
    print(f"{v}: controller CPU {cpu:.2f} % of a core, peak RSS {rss:.0f} MB, workers {wcpu:.1f} % of a core, {thr:.0f} responses/s")
a, b = med["classes4"], med["classes1"]
print(f"ratio 4 classes / 1: controller CPU {a[0] / b[0]:.2f}x, RSS {a[1] / b[1]:.2f}x, workers' CPU {a[2] / b[2]:.2f}x")
EOF
