#!/usr/bin/env bash
# The CI gate's false-alarm and detection figures (issue 43, docs/06-ci-gating.md): one nginx
# configuration measured as a baseline (--repeat N), then RUNS more repeated runs of the same,
# unchanged configuration compared against it at a 5 % limit (every exit 3 is a false alarm),
# then RUNS repeated runs of a slower configuration (nginx's sub_filter rewriting each response)
# compared likewise (every exit 3 is a detection). Prints the counts, each compare's verdict
# line and the time a repeated run cost. Loopback only; every run bounded by its scenario.
#
#   bench/ci-noise.sh [RUNS=10] [N=5] [RATE=1000]
set -euo pipefail
RUNS=${1:-10}
N=${2:-5}
RATE=${3:-1000}
SYNLAB=${SYNLAB:-${CARGO_TARGET_DIR:-target}/debug/synlab}
OUT=$(mktemp -d /tmp/synlab-ci-noise.XXXXXX)
trap 'echo "results kept in $OUT"' EXIT

scenario() { # $1 name, $2 extra nginx config (TOML array items)
  cat > "$OUT/$1.toml" <<TOML
name = "$1"
[target]
kind = "nginx"
workers = 1
extra_config = [$2]
[load]
mode = "open"
rate = $RATE
timeout = "1s"
[[load.mix]]
path = "/bytes/4000"
[sweep]
param = "load.rate"
values = [$RATE]
warmup = "1s"
hold = "4s"
TOML
}
scenario same ''
scenario slower '"sub_filter_types *;", "sub_filter '"'"'synlab'"'"' '"'"'SYNLAB'"'"';", "sub_filter_once off;"'

repeated() { # $1 scenario, $2 out; prints the repeated run's folder
  "$SYNLAB" run --repeat "$N" --no-progress --out "$2" "$OUT/$1.toml" > "$2.log" 2>&1 || true
  ls -d "$2"/*/ | head -1
}
judge() { # $1 baseline, $2 run, $3 label: 1 if exit 3
  local f="${2%/}.compare"
  set +e
  "$SYNLAB" compare "$1" "$2" --max-regression 5% --on throughput_per_s,total_p50_ms,total_p99_ms \
    > "$f" 2>&1
  local code=$?
  set -e
  echo "$3: exit $code: $(grep -E '^verdict' "$f" || tail -1 "$f")" >&2
  grep -E ' at .*: [+-][0-9.]+ % \(' "$f" | sed 's/^/    /' >&2 || true
  [ "$code" = 3 ] && echo 1 || echo 0
}

t0=$(date +%s)
base=$(repeated same "$OUT/base")
t1=$(date +%s)
echo "baseline: $base ($((t1 - t0)) s for $N trials)"
alarms=0
for i in $(seq 1 "$RUNS"); do
  r=$(repeated same "$OUT/same-$i")
  alarms=$((alarms + $(judge "$base" "$r" "unchanged $i")))
done
detected=0
for i in $(seq 1 "$RUNS"); do
  r=$(repeated slower "$OUT/slower-$i")
  detected=$((detected + $(judge "$base" "$r" "sub_filter $i")))
done
echo "false alarms: $alarms of $RUNS comparisons of an unchanged configuration (N = $N, 5 % limit)"
echo "detections:   $detected of $RUNS comparisons of the sub_filter configuration"
echo "a repeated run of $N trials cost $((t1 - t0)) s"
