#!/usr/bin/env bash
# Issue 2 benchmark: synlab's load generator against the anchors, interleaved in one go on this
# machine (nginx pinned to CPU 0, every generator pinned to CPU 1, 1294-byte file, HTTP/1.0-style
# connection per request, median of N runs):
#   1. connection-per-request rate and generator CPU us per completed connection: synlab vs wrk, ab,
#      httperf (oha too if installed);
#   2. overload: SYN/s offered at T = 0.5 s against the built-in server (capacity ~1,000/s, backlog 16),
#      counted by tcpdump and by TcpActiveOpens, for synlab, httperf and wrk. An S-Client whose
#      connects all time out offers at most D / T, so synlab runs D = 15,000 (up to 30,000/s);
#      D = 10,000 would cap it at exactly 20,000/s;
#   3. worker RSS with 20,000 sockets in flight;
#   4. keep-alive (issue 27), 64 persistent connections to nginx (keepalive_requests 1,000,000):
#      the closed keep-alive loop's requests/s (nginx's own count over a steady window) and CPU us
#      per request (the generator's /proc ticks, same window), synlab vs wrk -c64; and
#      the highest fixed request rate each holds (>= 99 % of the asked rate, no errors), synlab's
#      open mode over a pool of 64 connections vs oha -q R -c 64 --latency-correction, found by
#      a ladder of rates x KA_STEP from KA_START, KA_SECS each (median over runs).
# Usage: sudo bench/load.sh [runs=3] [seconds=10]     (prints a table of figures and ratios)
#        SECTIONS=23 bench/load.sh ...                 (only some sections)
#        KA_START=10000 KA_STEP=1.15 KA_SECS=5 SECTIONS=4 bench/load.sh ...
#        SYN=/tmp/synlab-before bench/load.sh ...      (that binary, not a fresh release build:
#                                                       an A/B of two builds in one session)
#        AB="/tmp/a /tmp/b" bench/load.sh 5 10         (section 1 only, builds interleaved run by
#                                                       run with wrk: each build's conn/s and CPU
#                                                       us/conn, and its ratio to the first)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECTIONS=${SECTIONS:-1234}
SECS=${2:-10}
export PATH="$HOME/.cargo/bin:$PATH"

need=()
for p in nginx-light wrk apache2-utils httperf tcpdump time iproute2 curl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; fi
if [ -z "${SYN:-}" ] && [ -n "${AB:-}" ]; then SYN=${AB%% *}; fi
if [ -z "${SYN:-}" ]; then
  cargo build --release -q
  SYN=$PWD/target/release/synlab
fi
WORK=$(mktemp -d /tmp/synlab-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# --- nginx, one worker on CPU 0 ---
NGX_PORT=18080
. bench/nginx-cpr.sh
start_nginx_cpr $NGX_PORT "$WORK"
PIDS+=("$NGX_PID")

# The machine's load with every figure: rerun on a quiet machine to compare.
loadavg() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"; }
loadavg

cpu_of() { # user+sys seconds from GNU time's output file
  awk '{print $1 + $2}' "$1"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_wrk() {
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 wrk -t1 -c64 -d${SECS}s -H 'Connection: close' "$URL" > "$WORK/o" 2>&1
  local r; r=$(awk '/Requests\/sec/ {print $2}' "$WORK/o")
  echo "$r $(cpu_of "$WORK/t")"
}
run_ab() {
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 ab -q -c 64 -t "$SECS" -n 100000000 "$URL" > "$WORK/o" 2>&1 || true
  local r; r=$(awk '/Requests per second/ {print $4}' "$WORK/o")
  echo "$r $(cpu_of "$WORK/t")"
}
OHA=$(command -v oha || ls "$HOME/.cargo/bin/oha" 2>/dev/null || true)
run_oha() {
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 "$OHA" --no-tui -z ${SECS}s -c 64 --disable-keepalive "$URL" > "$WORK/o" 2>&1 || true
  # Requests/sec counts failures too: scale by the success rate.
  local r; r=$(awk '/Success rate/ {s = $3 + 0} /Requests\/sec/ {print $2 * s / 100}' "$WORK/o")
  echo "${r:-0} $(cpu_of "$WORK/t")"
}
run_httperf() {
  # httperf needs a target rate; ask for more than it can do and read what it achieved.
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 httperf --hog --server 127.0.0.1 --port $NGX_PORT \
    --uri /f.bin --add-header 'Connection: close\n' --rate 40000 --num-conns $((40000 * SECS)) \
    --timeout 1 > "$WORK/o" 2>&1 || true
  local r; r=$(awk '/^Reply rate/ {print $7}' "$WORK/o")
  echo "$r $(cpu_of "$WORK/t")"
}
run_synlab_closed() {
  cpr_scenario $NGX_PORT "$SECS" "$WORK/closed.toml"
  "$SYN" run "$WORK/closed.toml" --no-progress --out "$WORK/res" > "$WORK/o" 2>&1
  local d; d=$(ls -td "$WORK"/res/*/ | head -1)
  python3 - "$d/summary.json" <<'PY'
import json,sys
p=json.load(open(sys.argv[1]))["points"][0]
# whole-run figures: throughput over the hold, worker CPU share over the hold
print(p["throughput_per_s"], p["worker_cpu_pct"]/100.0*p["hold_s"], p["hold_s"])
PY
}

if [ -n "${AB:-}" ]; then
echo "== 1 (A/B). connection-per-request rate, builds interleaved (runs=$RUNS, ${SECS}s each); $(loadavg)"
declare -A ABR ABC
for i in $(seq "$RUNS"); do
  k=0
  for b in $AB; do
    read -r r c < <(SYN=$b run_synlab_closed | awk '{print $1, $2/$3*'"$SECS"'}')
    ABR[$k]+="$r "; ABC[$k]+="$(python3 -c "print($c/($r*$SECS)*1e6)") "; k=$((k + 1))
  done
  read -r r c < <(run_wrk); ABR[wrk]+="$r "; ABC[wrk]+="$(python3 -c "print($c/($r*$SECS)*1e6)") "
  echo "run $i: ${ABR[*]} | $(loadavg)"
done
printf "%-40s %12s %14s %10s\n" build "conn/s (med)" "CPU us/conn" "vs first"
k=0; first=
for b in $AB wrk; do
  key=$k; [ "$b" = wrk ] && key=wrk
  m=$(echo "${ABR[$key]}" | tr ' ' '\n' | grep . | median)
  u=$(echo "${ABC[$key]}" | tr ' ' '\n' | grep . | median)
  [ -z "$first" ] && first=$m
  printf "%-40s %12.0f %14.1f %9.3fx\n" "$b" "$m" "$u" "$(python3 -c "print($m/$first)")"
  echo "  runs: ${ABR[$key]}"
  k=$((k + 1))
done
SECTIONS=""  # A/B runs section 1 only
fi

if [[ $SECTIONS == *1* ]]; then
echo "== 1. connection-per-request rate vs nginx (runs=$RUNS, ${SECS}s each); $(loadavg)"
declare -A RATE CPU
for i in $(seq "$RUNS"); do
  read -r r c < <(run_synlab_closed | awk '{print $1, $2/$3*'"$SECS"'}'); RATE[synlab]+="$r "; CPU[synlab]+="$(python3 -c "print($c/($r*$SECS)*1e6)") "
  read -r r c < <(run_wrk);      RATE[wrk]+="$r ";     CPU[wrk]+="$(python3 -c "print($c/($r*$SECS)*1e6)") "
  read -r r c < <(run_ab);       RATE[ab]+="$r ";      CPU[ab]+="$(python3 -c "print($c/($r*$SECS)*1e6)") "
  read -r r c < <(run_httperf);  RATE[httperf]+="$r "; CPU[httperf]+="$(python3 -c "print($c/(max($r,1)*$SECS)*1e6)") "
  if [ -n "$OHA" ]; then
    read -r r c < <(run_oha);    RATE[oha]+="$r ";     CPU[oha]+="$(python3 -c "print($c/(max($r,1)*$SECS)*1e6)") "
  fi
done
printf "%-10s %12s %14s\n" tool "conn/s (med)" "CPU us/conn"
MED_oha=0; CPUMED_oha=0
TOOLS="synlab wrk ab httperf"; [ -n "$OHA" ] && TOOLS="$TOOLS oha"
for t in $TOOLS; do
  m=$(echo "${RATE[$t]}" | tr ' ' '\n' | grep . | median)
  u=$(echo "${CPU[$t]}" | tr ' ' '\n' | grep . | median)
  printf "%-10s %12.0f %14.1f\n" "$t" "$m" "$u"
  eval "MED_$t=$m; CPUMED_$t=$u"
done
python3 - <<PY
s,w,a,h=$MED_synlab,$MED_wrk,$MED_ab,$MED_httperf
print(f"ratios: synlab/wrk {s/w:.2f}x (goal >= 1.0), synlab/httperf {s/max(h,1):.2f}x (goal >= 1.1), synlab/ab {s/a:.2f}x")
print(f"CPU per connection: synlab/wrk {$CPUMED_synlab/$CPUMED_wrk:.2f}x (goal <= 1.0)")
o=$MED_oha
print(f"synlab/oha {s/o:.2f}x (goal >= 1.2)" if o > 0 else "oha: not installed (cargo install oha --locked), skipped")
PY
fi
kill "${PIDS[0]}" 2>/dev/null || true

if [[ $SECTIONS == *4* ]]; then
echo "== 4. keep-alive: 64 persistent connections to nginx (runs=$RUNS, ${SECS}s each); $(loadavg)"
KA_PORT=18083
mkdir -p "$WORK/ngx-ka"
cat > "$WORK/ngx-ka/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $WORK/ngx-ka/nginx.pid;
error_log $WORK/ngx-ka/error.log;
events { worker_connections 65536; }
http {
  access_log off;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$KA_PORT backlog=4096; root $WORK/www;
    location = /nginx-status { stub_status; }
  }
}
NGX
taskset -c 0 nginx -c "$WORK/ngx-ka/nginx.conf" -p "$WORK/ngx-ka" &
KA_NGX=$!
PIDS+=($KA_NGX)
# Until nginx listens (a busy machine starts it slowly).
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$KA_PORT) 2>/dev/null && break; sleep 0.1; done
KA_URL=http://127.0.0.1:$KA_PORT/f.bin
ka_scenario() { # mode extra-lines... : a keep-alive scenario of 64 connections on CPU 1
  local mode=$1; shift
  cat <<TOML
duration = "${KA_RUN_SECS}s"
[target]
kind = "address"
address = "127.0.0.1:$KA_PORT"
[load]
mode = "$mode"
http = "1.1"
requests_per_conn = 1000000
cpus = [1]
workload = "custom"
$(printf '%s\n' "$@")
[[load.mix]]
path = "/f.bin"
[probe]
interval = "1s"
TOML
}
synlab_point() { # scenario file: prints requests/s, worker CPU s, hold s, errors, p99 ms
  # A run that failed (its table says why, on stderr) counts as 0 requests/s with errors.
  rm -rf "$WORK/res"
  if ! "$SYN" run "$1" --no-progress --out "$WORK/res" > "$WORK/o" 2>&1; then
    tail -5 "$WORK/o" >&2
  fi
  local d; d=$(ls -td "$WORK"/res/*/ 2>/dev/null | head -1)
  python3 - "$d/summary.json" <<'PY'
import json,sys
try:
    p=json.load(open(sys.argv[1]))["points"][0]
    print(p["requests_per_s"], p["worker_cpu_pct"]/100.0*p["hold_s"], p["hold_s"], p["errors_per_s"], p["total_p99_ms"])
except (OSError, KeyError, IndexError, ValueError):
    print(0, 0, 1, 1, "nan")
PY
}
# 4a. Both generators measured the same way, over the same steady window (from 2 s into the run to
# 2 s before its end, so neither's start-up or wind-down counts): requests counted by nginx itself
# (stub_status, the server's count, not the tool's), CPU as the generator's processes' user+sys
# ticks in /proc (synlab: the run and its workers; wrk: wrk). This machine's rate moves by
# +-15 % from second to second (a shared host), so runs alternate and medians are reported.
KA_WIN=$((SECS - 4))
ngx_requests() { # nginx's count of requests served so far
  curl -s "http://127.0.0.1:$KA_PORT/nginx-status" | awk 'NR == 3 {print $3}'
}
tree_ticks() { # user+sys clock ticks of a process and its children (fields after the comm)
  local p
  for p in "$1" $(pgrep -P "$1"); do sed 's/.*) //' "/proc/$p/stat" 2>/dev/null; done |
    awk '{s += $12 + $13} END {print s + 0}'
}
ka_window() { # pid: requests/s and CPU us per request over the window, then waits for the pid
  local r0 t0 r1 t1
  sleep 2; r0=$(ngx_requests); t0=$(tree_ticks "$1")
  sleep "$KA_WIN"; r1=$(ngx_requests); t1=$(tree_ticks "$1")
  # A run that failed counts as 0 requests/s (its output says why), as in synlab_point.
  if ! wait "$1"; then tail -5 "$WORK/o" >&2; echo 0 0; return; fi
  python3 -c "r = $r1 - $r0; print(r / $KA_WIN, ($t1 - $t0) / $(getconf CLK_TCK) / max(r, 1) * 1e6)"
}
run_synlab_ka() {
  KA_RUN_SECS=$SECS ka_scenario closed "clients = 64" > "$WORK/ka-closed.toml"
  rm -rf "$WORK/res"
  "$SYN" run "$WORK/ka-closed.toml" --no-progress --out "$WORK/res" > "$WORK/o" 2>&1 &
  ka_window $!
}
run_wrk_ka() {
  taskset -c 1 wrk -t1 -c64 -d${SECS}s "$KA_URL" > "$WORK/o" 2>&1 &
  ka_window $!
}
declare -A KRATE KCPU
# Each synlab run is also compared with the wrk run right after it: the host drifts between
# minutes more than the tools differ, and a pair's ratio cancels most of that drift.
KPAIR_R=""; KPAIR_C=""
for i in $(seq "$RUNS"); do
  read -r r c < <(run_synlab_ka); KRATE[synlab]+="$r "; KCPU[synlab]+="$c "
  read -r rw cw < <(run_wrk_ka);  KRATE[wrk]+="$rw ";   KCPU[wrk]+="$cw "
  KPAIR_R+="$(python3 -c "print(round($r / max($rw, 1), 3))") "
  KPAIR_C+="$(python3 -c "print(round($c / max($cw, 1e-9), 3))") "
done
printf "%-10s %12s %14s\n" tool "req/s (med)" "CPU us/req"
for t in synlab wrk; do
  m=$(echo "${KRATE[$t]}" | tr ' ' '\n' | grep . | median)
  u=$(echo "${KCPU[$t]}" | tr ' ' '\n' | grep . | median)
  printf "%-10s %12.0f %14.1f\n" "$t" "$m" "$u"
  eval "KMED_$t=$m; KCPUMED_$t=$u"
done
python3 -c "print(f'closed keep-alive: synlab/wrk {$KMED_synlab/max($KMED_wrk,1):.2f}x requests/s (goal >= 1.0), CPU per request {$KCPUMED_synlab/$KCPUMED_wrk:.2f}x (goal <= 1.0)')"
pr=$(echo "$KPAIR_R" | tr ' ' '\n' | grep . | median); pc=$(echo "$KPAIR_C" | tr ' ' '\n' | grep . | median)
echo "  median of the $RUNS paired runs' ratios: requests/s $(printf %.2f "$pr")x, CPU per request $(printf %.2f "$pc")x (pairs: $KPAIR_R)"

# 4b. The highest fixed request rate each holds: >= 99 % of the asked rate, no errors.
KA_START=${KA_START:-10000}; KA_STEP=${KA_STEP:-1.15}; KA_SECS=${KA_SECS:-5}
held_synlab() { # rate: prints "achieved p99_ms" and succeeds when held
  KA_RUN_SECS=$KA_SECS ka_scenario open "rate = $1" 'arrivals = "constant"' "connections = 64" > "$WORK/ka-fixed.toml"
  read -r got cpu hold errs p99 < <(synlab_point "$WORK/ka-fixed.toml")
  echo "$got $p99 $(python3 -c "print(round($cpu / (max($got, 1) * $hold) * 1e6, 1))")"
  python3 -c "import sys; sys.exit(0 if $got >= 0.99 * $1 and $errs == 0 else 1)" ||
    { echo "  synlab stopped at $1/s: $got/s, errors $errs/s, p99 $p99 ms" >&2; return 1; }
}
held_oha() {
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 "$OHA" --no-tui -z ${KA_SECS}s -c 64 -q "$1" --latency-correction "$KA_URL" > "$WORK/o" 2>&1 || true
  local got ok p99
  got=$(awk '/Requests\/sec/ {print $2}' "$WORK/o"); ok=$(awk '/Success rate/ {print $3 + 0}' "$WORK/o")
  p99=$(awk '/99.00% in/ {v = $3; if ($4 == "sec") v *= 1000; print v}' "$WORK/o")
  echo "${got:-0} ${p99:-nan} $(python3 -c "print(round($(cpu_of "$WORK/t") / (max(${got:-0}, 1) * $KA_SECS) * 1e6, 1))")"
  python3 -c "import sys; sys.exit(0 if ${got:-0} >= 0.99 * $1 and ${ok:-0} >= 100 else 1)" ||
    { echo "  oha stopped at $1/s: ${got:-0}/s, success ${ok:-0} %, p99 ${p99:-nan} ms" >&2; return 1; }
}
ladder() { # both tools step by step (each step's noise hits both): prints per tool the highest
           # rate held and its p99, as "synlab_rate synlab_p99 oha_rate oha_p99"
  local r=$KA_START out s_on=1 o_on=1 s_best=0 s_p99=nan s_cpu=nan o_best=0 o_p99=nan o_cpu=nan
  while [ "$r" -le 2000000 ] && [ $((s_on + o_on)) -gt 0 ]; do
    if [ $s_on = 1 ]; then
      if out=$(held_synlab "$r"); then s_best=$r; read -r _ s_p99 s_cpu <<< "$out"; else s_on=0; fi
    fi
    if [ $o_on = 1 ]; then
      if out=$(held_oha "$r"); then o_best=$r; read -r _ o_p99 o_cpu <<< "$out"; else o_on=0; fi
    fi
    r=$(python3 -c "print(int($r * $KA_STEP))")
  done
  echo "$s_best $s_p99 $s_cpu $o_best $o_p99 $o_cpu"
}
if [ -z "$OHA" ]; then
  echo "oha: not installed (cargo install oha --locked), fixed-rate comparison skipped"
else
  declare -A HELD P99 HCPU
  for i in $(seq "$RUNS"); do
    read -r hs ps cs ho po co < <(ladder)
    HELD[synlab]+="$hs "; P99[synlab]+="$ps "; HCPU[synlab]+="$cs "
    HELD[oha]+="$ho "; P99[oha]+="$po "; HCPU[oha]+="$co "
    echo "  ladder $i: synlab held $hs/s (p99 $ps ms, $cs us CPU/req), oha held $ho/s (p99 $po ms, $co us CPU/req); $(loadavg)"
  done
  printf "%-10s %16s %14s %14s   (ladder from %s x %s, %ss a step)\n" tool "held req/s (med)" "p99 ms there" "CPU us/req" "$KA_START" "$KA_STEP" "$KA_SECS"
  for t in synlab oha; do
    m=$(echo "${HELD[$t]}" | tr ' ' '\n' | grep . | median)
    p=$(echo "${P99[$t]}" | tr ' ' '\n' | grep . | median)
    u=$(echo "${HCPU[$t]}" | tr ' ' '\n' | grep . | median)
    printf "%-10s %16.0f %14s %14s\n" "$t" "$m" "$p" "$u"
    eval "HMED_$t=$m; HCPUMED_$t=$u"
  done
  python3 -c "print(f'fixed rate: synlab/oha {$HMED_synlab/max($HMED_oha,1):.2f}x the highest held rate (goal >= 1.0), CPU per request {$HCPUMED_synlab/$HCPUMED_oha:.2f}x')"
fi
kill "$KA_NGX" 2>/dev/null || true
echo "$(loadavg)"
fi
# Sections 2 and 3 share the built-in server; section 1 alone is done here.
[[ $SECTIONS == *2* || $SECTIONS == *3* ]] || exit 0

# Section 1 leaves ~1 M connections' TIME_WAIT sockets on loopback for 60 s; with them the
# kernel's ephemeral-port search in connect() costs far more (measured: 21,000 -> 15,000 SYN/s
# offered), which would measure the leftovers, not the generator. Wait until they are gone.
for _ in $(seq 70); do
  [ "$(awk '/^TCP:/ {print $7}' /proc/net/sockstat)" -lt 1000 ] && break
  sleep 1
done

echo "== 2. overload: SYN/s offered at T = 0.5 s, server capacity ~1,000/s, backlog 16"
SRV_PORT=18081
taskset -c 0 "$SYN" serve --listen 127.0.0.1:$SRV_PORT --arch event --service-time 1ms --service cpu --backlog 16 --duration 600s 2>/dev/null &
PIDS+=($!)
sleep 1
syn_count() { # cmd... ; prints SYNs/s by tcpdump and by TcpActiveOpens
  tcpdump -i lo -n -q -w /dev/null "tcp dst port $SRV_PORT and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn" 2> "$WORK/td" &
  local td=$!
  sleep 0.5
  local a0; a0=$(awk '/^Tcp:/ {n++} n==2 && /^Tcp:/ {print $6; exit}' /proc/net/snmp)
  local t0; t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || true
  local t1; t1=$(date +%s.%N)
  local a1; a1=$(awk '/^Tcp:/ {n++} n==2 && /^Tcp:/ {print $6; exit}' /proc/net/snmp)
  sleep 0.5; kill -INT $td; wait $td 2>/dev/null || true
  local caught; caught=$(awk '/packets captured/ {print $1}' "$WORK/td")
  local dropped; dropped=$(awk '/dropped by kernel/ {print $1}' "$WORK/td")
  python3 -c "d=$t1-$t0; print(f'{$caught/d:.0f} {($a1-$a0)/d:.0f} kernel-drops={$dropped}')"
}
cat > "$WORK/over.toml" <<TOML
duration = "${SECS}s"
[target]
kind = "address"
address = "127.0.0.1:$SRV_PORT"
[load]
mode = "sclient"
sockets = 15000
timeout = "500ms"
cpus = [1]
[probe]
interval = "1s"
TOML
if [[ $SECTIONS == *2* ]]; then
printf "%-10s %14s %18s\n" tool "SYN/s tcpdump" "SYN/s ActiveOpens"
echo "synlab     $(syn_count "$SYN" run "$WORK/over.toml" --no-progress --out "$WORK/res")"
echo "httperf    $(syn_count taskset -c 1 httperf --hog --server 127.0.0.1 --port $SRV_PORT --uri /bytes/1294 --add-header 'Connection: close\n' --rate 20000 --num-conns $((20000 * SECS)) --timeout 0.5)"
echo "wrk        $(syn_count taskset -c 1 timeout $((SECS + 5)) wrk -t1 -c1000 -d${SECS}s -H 'Connection: close' http://127.0.0.1:$SRV_PORT/bytes/1294)"

fi

if [[ $SECTIONS == *3* ]]; then
echo "== 3. worker RSS with 20,000 sockets in flight"
# One worker holds all 20,000 (as root it raises its own RLIMIT_NOFILE, hard limit included).
# T = 3 s, so all 20,000 slots are held at once (at T = 0.5 s a slot spends part of T waiting).
sed -i 's/sockets = 15000/sockets = 20000/; s/timeout = "500ms"/timeout = "3s"/' "$WORK/over.toml"
"$SYN" run "$WORK/over.toml" --no-progress --out "$WORK/res" > /dev/null 2>&1 &
RUNPID=$!
sleep $((SECS / 2 + 1))
tot_rss=0; tot_fd=0
# The run's own workers, whatever the binary is called (SYN=/tmp/synlab-before ...): by name
# they were none under SYN, and the section printed 0 MiB with 0 fds.
WORKERS=$(pgrep -P "$RUNPID" -f ' worker ' || true)
[ -n "$WORKERS" ] || { echo "section 3: no worker process under the run (pid $RUNPID): see $WORK/res" >&2; kill "$RUNPID" 2>/dev/null; wait "$RUNPID" 2>/dev/null; exit 1; }
for W in $WORKERS; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$W/status); hwm=$(awk '/VmHWM/ {print $2}' /proc/$W/status)
  # Anonymous (slots, heap, histograms) apart from file pages (the binary's, the libraries').
  split=$(awk '/RssAnon|RssFile/ {printf "%s %s kB ", $1, $2}' /proc/$W/status)
  fds=$(ls /proc/$W/fd | wc -l)
  echo "worker pid $W: VmRSS ${rss} kB VmHWM ${hwm} kB (${split% }), ${fds} fds open"
  tot_rss=$((tot_rss + rss)); tot_fd=$((tot_fd + fds))
done
echo "all workers: RSS $((tot_rss / 1024)) MiB with ${tot_fd} fds (goal: under 64 MiB with 20,000 sockets)"
wait $RUNPID || true
fi
