#!/usr/bin/env bash
# `synlab ab` checked against long runs (issue 43, "What must be shown"): nginx in two
# configurations with a clear difference (B: a map of K regular expressions tried on every
# request, as bench/ci-noise.sh's slowdown, K large), first `synlab ab A B --repeat PAIRS` with
# short holds, then B/A measured by hand: PAIRS_LONG interleaved pairs of single runs with a
# long hold (A B, B A ...), the ratio of the summed responses/s. Passes (exit 0) when the ab
# interval of throughput's B/A contains the long runs' ratio; exit 1 when it does not.
#
#   bench/ab-check.sh [K=150] [PAIRS=6] [HOLD=3] [LONG=20] [PAIRS_LONG=2]
# Environment: SYNLAB (default the release build), OUT. Loopback only.
set -euo pipefail
K=${1:-150}
PAIRS=${2:-6}
HOLD=${3:-3}
LONG=${4:-20}
PAIRS_LONG=${5:-2}
SYNLAB=${SYNLAB:-${CARGO_TARGET_DIR:-target}/release/synlab}
OUT=${OUT:-$(mktemp -d /tmp/synlab-ab-check.XXXXXX)}
mkdir -p "$OUT"
[ -x "$SYNLAB" ] || { echo "no synlab binary at $SYNLAB" >&2; exit 2; }
command -v jq > /dev/null || { echo "jq is needed" >&2; exit 2; }

scenario() { # $1 name, $2 K, $3 hold seconds
  local rules="" i
  for ((i = 1; i <= $2; i++)); do rules+="\"  \\\"~^/rule$i/([a-z]+)/x\$\\\" $i;\", "; done
  cat > "$OUT/$1.toml" <<TOML
name = "$1"
[target]
kind = "nginx"
workers = 1
extra_config = ["map \$request_uri \$synlab_rule {", $rules"  default 0;", "}",
  "add_header X-Rule \$synlab_rule;"]
[load]
mode = "closed"
http = "1.1"
clients = 32
requests_per_conn = 1000
timeout = "1s"
[[load.mix]]
path = "/bytes/4000"
[sweep]
param = "load.clients"
values = [32]
warmup = "1s"
hold = "${3}s"
TOML
}

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
scenario a 0 "$HOLD"
scenario b "$K" "$HOLD"
set +e
"$SYNLAB" ab "$OUT/a.toml" "$OUT/b.toml" --repeat "$PAIRS" --on throughput_per_s \
  --max-regression 100% --out "$OUT/ab" --json "$OUT/ab.json" > "$OUT/ab.log" 2>&1
code=$?
set -e
grep -E 'throughput|verdict' "$OUT/ab.log" || true
[ "$code" = 0 ] || [ "$code" = 3 ] || { echo "synlab ab exited $code: $OUT/ab.log" >&2; exit 2; }
read -r lo hi est < <(jq -r '[.figures[] | select(.metric == "throughput_per_s")][0]
  | "\(1 + .ci_lo / 100) \(1 + .ci_hi / 100) \(1 + .change / 100)"' "$OUT/ab.json")

scenario a "0" "$LONG"
scenario b "$K" "$LONG"
sum_a=0
sum_b=0
for ((p = 1; p <= PAIRS_LONG; p++)); do
  if ((p % 2)); then order="a b"; else order="b a"; fi
  for s in $order; do
    mkdir -p "$OUT/long-$s-$p"
    "$SYNLAB" run --no-progress --out "$OUT/long-$s-$p" "$OUT/$s.toml" > "$OUT/long-$s-$p.log" 2>&1 || true
    t=$(jq '.points[0].throughput_per_s' "$OUT"/long-"$s"-"$p"/*/summary.json)
    echo "long run $s $p: $t responses/s"
    if [ "$s" = a ]; then sum_a=$(echo "$sum_a + $t" | bc -l); else sum_b=$(echo "$sum_b + $t" | bc -l); fi
  done
done
hand=$(echo "$sum_b / $sum_a" | bc -l)
printf 'ab (%d pairs, %d s holds): B/A %.4f [%.4f .. %.4f]\n' "$PAIRS" "$HOLD" "$est" "$lo" "$hi"
printf 'by hand (%d pairs of %d s runs): B/A %.4f\n' "$PAIRS_LONG" "$LONG" "$hand"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg); results in $OUT"
if (($(echo "$lo <= $hand && $hand <= $hi" | bc -l))); then
  echo "PASS: the ab interval contains the long runs' ratio"
else
  echo "FAIL: the long runs' ratio is outside the ab interval"
  exit 1
fi
