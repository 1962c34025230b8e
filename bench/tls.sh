#!/usr/bin/env bash
# Issue 30 benchmark: TLS handshakes, synlab against the anchors, interleaved in one go on this
# machine: nginx (one worker, pinned to CPU 0; TLS 1.3, X25519, ECDSA P-256; connection per
# request, a 1294-byte file), every client pinned to CPU 1:
#   1. full handshakes (nginx's session cache and tickets off): handshakes/s and client CPU us per
#      handshake, synlab (CLIENTS closed clients, connection per request) vs h2load (--h1 -c CLIENTS,
#      Connection: close) vs `openssl s_time -new` (one connection at a time);
#   2. resumed handshakes (tickets on): synlab with resumed = 1 vs `openssl s_time -reuse`
#      (h2load resumes only from 1.57's --tls-session-file: the Debian package here has not);
#   3. the server's CPU per full and per resumed handshake: nginx's worker (its /proc CPU time
#      over synlab's runs of 1 and 2) and the built-in event server (`synlab serve` over TLS);
#   4. the handshake flood's capacity against the same nginx's plain-HTTP capacity: synlab's
#      S-Client flat out (D = 2,000, T = 1 s) over TLS (full handshakes) and over plain HTTP.
# Every figure comes with the load average; runs are interleaved so noise hits all alike.
# Usage: sudo bench/tls.sh [runs=3] [seconds=10]
#        CLIENTS=256 bench/tls.sh ...          (concurrent connections of synlab and h2load, default 64)
#        SYN=/path/to/synlab bench/tls.sh ...   (that binary, not a fresh release build)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-10}
export PATH="$HOME/.cargo/bin:$PATH"
need=()
for p in nginx nghttp2-client openssl time; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; fi
if [ -z "${SYN:-}" ]; then
  cargo build --release -q
  SYN=$PWD/target/release/synlab
fi
WORK=$(mktemp -d /tmp/synlab-tls-bench.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
loadavg() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# user+sys seconds of a process (all its threads) from /proc
proc_cpu() { awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat"; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" \
  -out "$WORK/cert.pem" -days 2 -subj /CN=synlab.test 2>/dev/null
mkdir -p "$WORK/www"
head -c 1294 /dev/zero | tr '\0' 'x' > "$WORK/www/f.bin"

# nginx on CPU 0: $1 port, $2 "on"/"off" (session tickets), $3 "ssl" or "" (plain)
start_nginx() {
  local port=$1 tickets=$2 ssl=$3 d="$WORK/ngx-$1"
  mkdir -p "$d"
  local tls=""
  [ -n "$ssl" ] && tls="ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;
    ssl_protocols TLSv1.3; ssl_ecdh_curve X25519; ssl_session_cache off; ssl_session_tickets $tickets;"
  cat > "$d/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 65536; }
http {
  access_log off;
  keepalive_timeout 0;
  server { listen 127.0.0.1:$port $ssl backlog=4096; root $WORK/www; $tls }
}
NGX
  taskset -c 0 nginx -c "$d/nginx.conf" -p "$d" &
  PIDS+=($!)
  sleep 1
}
nginx_worker() { pgrep -P "$(cat "$WORK/ngx-$1/nginx.pid")" | head -1; }
FULL=18443; RESUME=18444; PLAIN=18080
start_nginx $FULL off ssl
start_nginx $RESUME on ssl
start_nginx $PLAIN off ""

# synlab against an address: $1 port, $2 mode block (TOML lines of [load]), $3 [load.tls] or ""
# prints: handshakes/s, responses/s, client CPU seconds, hold seconds
run_synlab() {
  local port=$1 load=$2 tls=$3 tgt_tls=""
  [ -n "$tls" ] && tgt_tls="tls = true"
  cat > "$WORK/s.toml" <<TOML
duration = "${SECS}s"
[target]
kind = "address"
address = "127.0.0.1:$port"
$tgt_tls
[load]
cpus = [1]
timeout = "1s"
$load
[[load.mix]]
path = "/f.bin"
$tls
[probe]
interval = "1s"
TOML
  rm -rf "$WORK/res"
  "$SYN" run "$WORK/s.toml" --no-progress --out "$WORK/res" > "$WORK/o" 2>&1 || { echo "synlab run failed:" >&2; cat "$WORK/o" >&2; }
  local d; d=$(ls -td "$WORK"/res/*/ | head -1)
  python3 - "$d/summary.json" <<'PY'
import json,sys
p=json.load(open(sys.argv[1]))["points"][0]
hs=p["handshakes_per_s"] or 0
print(hs, p["throughput_per_s"], p["worker_cpu_pct"]/100.0*p["hold_s"], p["hold_s"])
PY
}
CLIENTS=${CLIENTS:-64}
CLOSED="mode = \"closed\"
clients = $CLIENTS"
# h2load: connection per request over HTTP/1.1 (a count, not -D: with -D its reconnecting clients
# never stop); prints handshakes/s and client CPU seconds per handshake x rate, as the others
H2N=${H2N:-1000}
run_h2load() {
  local n=$((H2N * SECS))
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 timeout $((SECS * 6)) h2load --h1 -t 1 -c "$CLIENTS" \
    -n $n -H 'Connection: close' "https://127.0.0.1:$1/f.bin" > "$WORK/o" 2>&1 || true
  # finished in X s, R req/s; succeeded requests are full handshakes (one per connection)
  local ok secs; ok=$(awk '/^requests:/ {print $8}' "$WORK/o"); secs=$(awk '/^finished in/ {print $3+0}' "$WORK/o")
  # h2load that did not finish (killed by the timeout, or refused) has no rate: say what it printed
  [ -n "$secs" ] || { echo "h2load did not finish within $((SECS * 6)) s; its output:" >&2; tail -n 15 "$WORK/o" >&2; }
  # CPU scaled to the same SECS the others report over
  python3 -c "r=${ok:-0}/max(${secs:-1},1e-9); c=$(awk '{print $1+$2}' "$WORK/t"); print(r, c/max(${secs:-1},1e-9)*$SECS)"
}
# openssl s_time: $1 port, $2 -new | -reuse; prints connections/s and client CPU seconds
run_stime() {
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 1 openssl s_time -connect "127.0.0.1:$1" "$2" \
    -time "$SECS" -www /f.bin > "$WORK/o" 2>&1 || true
  local n t; read -r n t < <(awk '/connections in [0-9.]+ real seconds/ {print $1, $4}' "$WORK/o" | tail -1)
  echo "$(python3 -c "print(${n:-0}/max(${t:-1},1e-9))") $(awk '{print $1+$2}' "$WORK/t")"
}
us_per() { python3 -c "print($1/max($2*$3,1)*1e6)"; } # cpu_s / (rate * secs) in us

declare -A RATE CPU SRV
echo "== 1-3. full and resumed TLS 1.3 handshakes against nginx (runs=$RUNS, ${SECS}s each); $(loadavg)"
for i in $(seq "$RUNS"); do
  echo "   run $i: $(loadavg)"
  w=$(nginx_worker $FULL); c0=$(proc_cpu "$w")
  read -r hs _ c h < <(run_synlab $FULL "$CLOSED" '[load.tls]
resumed = 0')
  RATE[synlab_full]+="$hs "; CPU[synlab_full]+="$(python3 -c "print($c/max($hs*$h,1)*1e6)") "
  SRV[nginx_full]+="$(python3 -c "print(($(proc_cpu "$w")-$c0)/max($hs*$h,1)*1e6)") "
  read -r r c < <(run_h2load $FULL); RATE[h2load_full]+="$r "; CPU[h2load_full]+="$(us_per "$c" "$r" "$SECS") "
  read -r r c < <(run_stime $FULL -new); RATE[stime_full]+="$r "; CPU[stime_full]+="$(us_per "$c" "$r" "$SECS") "
  w=$(nginx_worker $RESUME); c0=$(proc_cpu "$w")
  read -r hs _ c h < <(run_synlab $RESUME "$CLOSED" '[load.tls]
resumed = 1')
  RATE[synlab_resumed]+="$hs "; CPU[synlab_resumed]+="$(python3 -c "print($c/max($hs*$h,1)*1e6)") "
  SRV[nginx_resumed]+="$(python3 -c "print(($(proc_cpu "$w")-$c0)/max($hs*$h,1)*1e6)") "
  read -r r c < <(run_stime $RESUME -reuse); RATE[stime_resumed]+="$r "; CPU[stime_resumed]+="$(us_per "$c" "$r" "$SECS") "
done
med() { echo "$1" | tr ' ' '\n' | grep . | median; }
printf "%-16s %14s %18s\n" "client" "handshakes/s" "client CPU us/hs"
for k in synlab_full h2load_full stime_full synlab_resumed stime_resumed; do
  printf "%-16s %14.0f %18.1f\n" "$k" "$(med "${RATE[$k]}")" "$(med "${CPU[$k]}")"
done
python3 - <<PY
sf,hf,tf=$(med "${RATE[synlab_full]}"),$(med "${RATE[h2load_full]}"),$(med "${RATE[stime_full]}")
cs,ch,ct=$(med "${CPU[synlab_full]}"),$(med "${CPU[h2load_full]}"),$(med "${CPU[stime_full]}")
def ratio(a, b):  # an anchor that measured nothing (it failed: its output is above) has no ratio
    return f"{a/b:.2f}x" if b > 0 else "n/a (the anchor measured nothing)"
print(f"full handshakes: synlab/h2load {ratio(sf, hf)} handshakes/s (goal >= 1.5 when client-bound), "
      f"client CPU per handshake {ratio(cs, ch)} h2load's (goal <= 0.6), {ratio(cs, ct)} s_time's")
print(f"resumed: synlab {$(med "${CPU[synlab_resumed]}"):.1f} us vs s_time -reuse {$(med "${CPU[stime_resumed]}"):.1f} us per handshake")
PY
echo "nginx worker CPU per handshake (us): full $(med "${SRV[nginx_full]}"), resumed $(med "${SRV[nginx_resumed]}")"

echo "== 3b. the built-in event server over TLS (CPU 0): its CPU per full and resumed handshake; $(loadavg)"
for mode in full resumed; do
  share=0; [ $mode = resumed ] && share=1
  taskset -c 0 "$SYN" serve --listen 127.0.0.1:18445 --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" \
    --service-time 0ms --stats-interval 60s > "$WORK/serve.o" 2>&1 &
  sp=$!; PIDS+=($sp); sleep 1
  c0=$(proc_cpu $sp)
  read -r hs _ _ h < <(run_synlab 18445 "$CLOSED" "[load.tls]
resumed = $share")
  echo "built-in $mode: $(python3 -c "print(f'{$hs:.0f} handshakes/s, server CPU {($(proc_cpu $sp)-$c0)/max($hs*$h,1)*1e6:.1f} us per handshake')")"
  kill $sp; wait $sp 2>/dev/null || true
done

echo "== 4. handshake flood capacity vs plain-HTTP capacity of the same nginx (S-Client flat out, D = 2000); $(loadavg)"
SC='mode = "sclient"
sockets = 2000'
for i in $(seq "$RUNS"); do
  read -r hs resp _ _ < <(run_synlab $FULL "$SC" '[load.tls]
resumed = 0
handshake_timeout = "2s"')
  RATE[flood_tls]+="$resp "
  read -r _ resp _ _ < <(run_synlab $PLAIN "$SC" "")
  RATE[flood_plain]+="$resp "
done
python3 - <<PY
t,p=$(med "${RATE[flood_tls]}"),$(med "${RATE[flood_plain]}")
print(f"nginx served {t:.0f} full TLS handshakes (responses)/s vs {p:.0f} plain responses/s: "
      + (f"TLS capacity {t/p:.2f}x plain" if p > 0 else "no plain responses: no ratio"))
PY
echo "done; $(loadavg)"
