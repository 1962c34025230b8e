#!/usr/bin/env bash
# Issue 47 benchmark: synlab's HTTP/3 load against the anchors that run here, the servers on
# CPU 0 (the built-in server's HTTP/3, then caddy), every client on CPU 1:
#   1. requests: closed loop, 16 connections x 10 streams, a 1294-byte file: requests/s (the
#      client's own count) and client CPU us per request (user + sys of the client process);
#   2. handshakes: S-Client, 64 slots, each connection a full QUIC handshake and one request:
#      handshakes/s and client CPU us per handshake.
# Anchors: h2load if its build speaks HTTP/3 (--npn-list=h3), oha if installed with its http3
# feature (--http-version 3, closed loop -c 16 -p 10, good responses only); the script says
# which ran and prints synlab/oha ratios. Usage: bench/h3.sh [runs=3] [seconds=10]
#        SYN=path/to/synlab bench/h3.sh ...   (that binary, not a fresh release build)
#        SERVE_SYN=path/to/synlab ...  (the built-in server from that binary, the clients from SYN:
#        a before/after of the server alone); SERVERS="builtin" (or "caddy") runs only that one.
#        SERVE_SIZES="" leaves out the server's --sizes 1294 (a build older than it: every
#        request is then a 404, the same for both sides of an A/B).
# The server's own CPU per request and per handshake (its process's user + sys ticks over each
# client run, the built-in server's or caddy's) is printed too: the server's side of the runs.
# The machine must be quiet: the figures are CPU-bound on two cores (the load is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-10}
if [ -z "${SYN:-}" ]; then
  cargo build --release -q
  SYN=${CARGO_TARGET_DIR:-target}/release/synlab
fi
SERVE_SYN=${SERVE_SYN:-$SYN}
SERVERS=${SERVERS:-builtin caddy}
CLK=$(getconf CLK_TCK)
# A process's user + sys CPU so far, in clock ticks (every thread's).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
DIR=$(mktemp -d /tmp/synlab-h3bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
mkdir -p "$DIR/www/file" "$DIR/caddy"
head -c 1294 /dev/zero | tr '\0' x > "$DIR/www/file/1294"
# A CA and a leaf it signs (webpki takes no CA certificate as the server's own).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=synlab-ca \
  -keyout "$DIR/ca.key" -out "$DIR/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=synlab.test \
  -keyout "$DIR/key.pem" -out "$DIR/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:synlab.test\nbasicConstraints=CA:FALSE\n' > "$DIR/leaf.ext"
openssl x509 -req -in "$DIR/leaf.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial \
  -days 1 -extfile "$DIR/leaf.ext" -out "$DIR/cert.pem" 2>/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
echo "machine load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The worker's config (closed N x M, or S-Client), as JSON.
worker_cfg() { # port mode
  python3 - "$1" "$2" "$SECS" "$DIR/ca.pem" <<'EOF'
import json, sys
port, mode, secs, ca = sys.argv[1], sys.argv[2], float(sys.argv[3]), open(sys.argv[4]).read()
closed = mode == "closed"
print(json.dumps({
  "id": 0, "target": f"127.0.0.1:{port}", "mode": mode, "rate": None, "arrivals": "constant",
  "sockets": 64, "clients": 16 if closed else 0, "think_s": 0.0, "timeout_s": 1.0,
  "response_timeout_s": 5.0, "burst": None,
  "mix": [{"class": "f", "path": "/file/1294", "weight": 1.0}],
  "keepalive": False, "requests_per_conn": 1, "connections": 0, "host_header": "synlab.test",
  "duration_s": secs, "stats_interval_ms": 500, "seed": 1, "paused": False,
  "tls": {"version": "1.3", "group": "x25519", "resumed": 0.0, "resume_by": "tickets",
          "sni": "synlab.test", "verify": True, "ca_pem": ca, "handshake_timeout_s": 2.0},
  "good_statuses": [], "streams": 10 if closed else 1, "http3": True}))
EOF
}
# Runs the worker on CPU 1; prints "requests/s us/request handshakes/s us/handshake".
synlab_run() { # port mode
  # The worker stops at stdin's end: a sleep keeps it open past the run's bound.
  sleep $((SECS + 2)) | taskset -c 1 "$SYN" worker --config-json "$(worker_cfg "$1" "$2")" | python3 -c '
import json, sys
r = h = cpu = t = 0.0
for l in sys.stdin:
    d = json.loads(l)
    r += d.get("responses", 0); h += d.get("handshakes_full", 0) + d.get("handshakes_resumed", 0)
    cpu += d["cpu_user_s"] + d["cpu_sys_s"]; t = d["t_s"]
print(f"{r/t:.0f} {cpu/max(r,1)*1e6:.1f} {h/t:.0f} {cpu/max(h,1)*1e6:.1f}")'
}
# h2load over HTTP/3 if its build has it: "requests/s us/request" or nothing.
h2load_run() { # port
  local out
  out=$( { /usr/bin/time -f 'CPU %U %S' taskset -c 1 h2load --npn-list=h3 -D "$SECS" -c 16 -m 10 \
           "https://127.0.0.1:$1/file/1294"; } 2>&1 ) || true
  if ! grep -q 'Application protocol: h3' <<<"$out"; then return 0; fi
  python3 - "$out" <<'EOF'
import re, sys
o = sys.argv[1]
ok = int(re.search(r"(\d+) succeeded", o).group(1))
rps = float(re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", o).group(1))
u, s = map(float, re.search(r"CPU ([\d.]+) ([\d.]+)", o).groups())
print(f"{rps:.0f} {(u+s)/max(ok,1)*1e6:.1f}")
EOF
}

# oha over HTTP/3 if its build has it (--http-version 3, the `http3` feature): the same closed
# loop, 16 connections x 10 requests each at once, certificate not verified (--insecure);
# "requests/s us/request" (good responses only) or nothing.
oha_h3() {
  command -v oha >/dev/null && oha --help 2>/dev/null | grep -q 'Available values.* 3$'
}
oha_run() { # port
  oha_h3 || return 0
  local out
  out=$( { /usr/bin/time -f 'CPU %U %S' taskset -c 1 oha --http-version 3 --insecure --no-tui \
           -z "${SECS}s" -c 16 -p 10 --output-format json "https://127.0.0.1:$1/file/1294" \
           > "$DIR/oha.json"; } 2>&1 ) || return 0
  python3 - "$out" "$DIR/oha.json" <<'EOF2'
import json, re, sys
d = json.load(open(sys.argv[2]))
ok = sum(n for code, n in d.get("statusCodeDistribution", {}).items() if code.startswith("2"))
u, s = map(float, re.search(r"CPU ([\d.]+) ([\d.]+)", sys.argv[1]).groups())
secs = d["summary"]["total"]
print(f"{ok/secs:.0f} {(u+s)/max(ok,1)*1e6:.1f}")
EOF2
}

serve_builtin() { # port
  taskset -c 0 "$SERVE_SYN" serve --listen "127.0.0.1:$1" --arch event --workers 1 \
    --tls-cert "$DIR/cert.pem" --tls-key "$DIR/key.pem" --http3 ${SERVE_SIZES---sizes 1294} > "$DIR/serve.log" 2>&1 &
  PIDS+=($!)
}
serve_caddy() { # port
  cat > "$DIR/Caddyfile" <<EOF
{
	admin off
	auto_https off
	storage file_system $DIR/caddy
	servers {
		protocols h1 h2 h3
	}
}
https://:$1 {
	bind 127.0.0.1
	tls $DIR/cert.pem $DIR/key.pem
	root * $DIR/www
	file_server
}
EOF
  HOME=$DIR/caddy XDG_DATA_HOME=$DIR/caddy XDG_CONFIG_HOME=$DIR/caddy \
    taskset -c 0 caddy run --config "$DIR/Caddyfile" --adapter caddyfile > "$DIR/caddy.log" 2>&1 &
  PIDS+=($!)
}

h2load_h3=no
for server in $SERVERS; do
  if [ "$server" = caddy ] && ! command -v caddy >/dev/null; then echo "caddy: not installed"; continue; fi
  PORT=$(free_port)
  "serve_$server" "$PORT"
  sleep 1.5
  for i in $(seq "$RUNS"); do
    t0=$(ticks "${PIDS[-1]}")
    read -r rps usr _ _ < <(synlab_run "$PORT" closed)
    t1=$(ticks "${PIDS[-1]}")
    read -r _ _ hps ush < <(synlab_run "$PORT" sclient)
    t2=$(ticks "${PIDS[-1]}")
    echo "$server run $i: synlab $rps req/s, $usr us CPU/request; $hps handshakes/s, $ush us CPU/handshake"
    python3 -c "import sys; c,s,a,b,d,r,h=map(float,sys.argv[1:]); print(f'$server run $i: server CPU {(b-a)/c/max(r*s,1)*1e6:.1f} us/request, {(d-b)/c/max(h*s,1)*1e6:.1f} us/handshake')" "$CLK" "$SECS" "$t0" "$t1" "$t2" "$rps" "$hps"
    h=$(h2load_run "$PORT")
    if [ -n "$h" ]; then h2load_h3=yes; echo "$server run $i: h2load (h3) ${h% *} req/s, ${h#* } us CPU/request"; fi
    o=$(oha_run "$PORT")
    if [ -n "$o" ] && [ "${o% *}" != 0 ]; then
      echo "$server run $i: oha (h3) ${o% *} req/s, ${o#* } us CPU/request"
      python3 -c "import sys; a,b,c,d=map(float,sys.argv[1:]); print(f'$server run $i: synlab/oha requests/s {a/c:.2f}x, CPU per request {b/d:.2f}x (goal <= 0.7x)')" "$rps" "$usr" "${o% *}" "${o#* }"
    fi
  done
  kill "${PIDS[-1]}" 2>/dev/null || true
  wait "${PIDS[-1]}" 2>/dev/null || true
done
[ "$h2load_h3" = yes ] || echo "h2load ($(h2load --version 2>/dev/null | head -1)): this build has no HTTP/3 (no 'Application protocol: h3'): not an anchor here"
if oha_h3; then echo "oha ($(oha --version)): HTTP/3 anchor (closed loop only: it has no handshake-per-request mode)"
elif command -v oha >/dev/null; then echo "oha: installed without HTTP/3 (cargo install oha --features http3)"
else echo "oha: not installed (cargo install oha --features http3)"; fi
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
