#!/usr/bin/env bash
# Soak (issue 15): the lab at a steady load with bursts and live knob changes for MINUTES
# (default 60), sampling every synlab process's open fds and RSS once a minute. Goals: fd counts
# flat, RSS within 10 % of its value after warm-up (minute 2), the run's client-counted responses
# agreeing with the server's own count within 0.1 %.
# Usage: bench/soak.sh [minutes=60]   (root: the lab on the host; a user: the rootless lab)
# Prints the series (also in $OUT/soak.csv) and a verdict per goal; exits 1 if one is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN=${1:-60}
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -q
BIN=$PWD/target/release/synlab
OUT=$(mktemp -d /tmp/synlab-soak.XXXXXX)
SC=$OUT/soak.toml

# Steady 500/s with bursts on, every 5 minutes a live change: the rate, the RTT, bursts.
{
  cat <<EOF
name = "soak"
duration = "${MIN}m"
[target]
arch = "event"
service_time = "500us"
service = "cpu"
backlog = 128
[load]
mode = "open"
rate = 500
arrivals = "poisson"
sockets = 20000
timeout = "1s"
[load.burst]
ratio = 2.0
fraction = "10%"
period = "10s"
enabled = true
[probe]
interval = "500ms"
[network]
backend = "auto"
[[network.path]]
name = "wan"
rtt = "20ms"
EOF
  for ((m = 5; m < MIN; m += 5)); do
    case $(( (m / 5) % 4 )) in
      1) printf '[[step]]\nat = "%dm"\nrate = 700\n' "$m" ;;
      2) printf '[[step]]\nat = "%dm"\npath = "wan"\nrtt = "50ms"\n' "$m" ;;
      3) printf '[[step]]\nat = "%dm"\nburst = false\nrate = 400\n' "$m" ;;
      0) printf '[[step]]\nat = "%dm"\nburst = true\nrate = 500\npath = "wan"\nrtt = "20ms"\n' "$m" ;;
    esac
  done
} > "$SC"

"$BIN" run "$SC" --out "$OUT/runs" --no-progress > "$OUT/run.out" 2>&1 &
CTRL=$!
trap 'kill -INT $CTRL 2>/dev/null || true' INT TERM
echo "minute,pid,role,fds,rss_kb" > "$OUT/soak.csv"
sample() {
  local m=$1
  for p in $CTRL $(pgrep -P "$CTRL" || true); do
    [ -r /proc/$p/status ] || continue
    local role fds rss
    role=$(tr '\0' ' ' < /proc/$p/cmdline | awk '{print $2}')
    fds=$(ls /proc/$p/fd 2>/dev/null | wc -l)
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/$p/status)
    echo "$m,$p,$role,$fds,$rss" >> "$OUT/soak.csv"
  done
}
for ((m = 1; m <= MIN; m++)); do
  sleep 60
  kill -0 $CTRL 2>/dev/null || break
  sample "$m"
done
wait $CTRL || { echo "the soak run failed:"; tail -20 "$OUT/run.out"; exit 1; }

echo "series (minute, pid, role, fds, RSS kB): $OUT/soak.csv"
column -s, -t < "$OUT/soak.csv" | awk 'NR == 1 || $1 % 5 == 0 || $1 == 2'
fail=0
# fd counts flat: a process's descriptors at its quietest moment (the floor) must not rise from
# one 20-minute knob cycle to the next (a leak raises the floor; the server's and workers' counts
# also follow the connections in flight, which follow the knobs and bursts, so their peaks vary).
# RSS within 10 % of its minute-2 value.
awk -F, 'NR > 1 && $1 >= 2 {
    k = $2 " " $3; c = int(($1 - 2) / 20); if (c > last) last = c
    if (!(k in r0)) r0[k] = $5
    if (!((k, c) in lo) || $4 < lo[k, c]) lo[k, c] = $4
    if (!((k, c) in hi) || $4 > hi[k, c]) hi[k, c] = $4
    d = ($5 - r0[k]) / r0[k]; if (d < 0) d = -d; if (d > rdev[k]) rdev[k] = d
    rlast[k] = $5
  }
  END {
    bad = 0
    for (k in r0) {
      cyc = ""; ok_f = 1
      for (c = 0; c <= last; c++) {
        if (!((k, c) in lo)) continue
        cyc = cyc sprintf(" %d/%d", lo[k, c], hi[k, c])
        if (c > 0 && ((k, c - 1) in lo) && lo[k, c] > lo[k, c - 1] + 2) ok_f = 0
      }
      ok_r = (rdev[k] <= 0.10)
      printf "%-16s fd floor/peak per 20 min:%s %s; RSS %d -> %d kB, max deviation %.1f%% %s\n", k, cyc, ok_f ? "flat" : "RISING", r0[k], rlast[k], rdev[k] * 100, ok_r ? "ok" : "OVER 10%"
      if (!ok_f || !ok_r) bad = 1
    }
    exit bad
  }' "$OUT/soak.csv" || fail=1
RUN=$(ls -d "$OUT"/runs/*/ | head -1)
python3 - "$RUN/summary.json" <<'EOF' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
t = s["run_totals"]
c, sv = t["responses"], t.get("server_responses")
d = abs(sv - c) / c * 100 if c and sv is not None else float("nan")
print(f"totals: client {c} responses, server {sv} ({d:.3f} %), in flight at the end {t['in_flight_at_end']}: {'ok' if d <= 0.1 else 'OFF BY MORE THAN 0.1 %'}")
sys.exit(0 if d <= 0.1 else 1)
EOF
exit $fail
