#!/usr/bin/env bash
# Regenerates the README gallery: runs each scenario of the library at full size on this machine
# (root for the network-lab ones) and copies the plots the README shows, with each run's
# summary.csv and summary.json (its meta.machine.loadavg says how busy the shared machine was),
# into docs/gallery/ (the run folders stay in results/gallery/). About 80 minutes on a 2-core
# machine, half of it bursty-rates (Fig. 8's 100 s burst period, 15 points).
# tests/gallery.rs holds every figure README.md quotes from the gallery to these files.
# Usage: sudo docs/gallery/make.sh [scenario...]      (default: all of them; `hol` is the
# head-of-line experiment's three runs and their figure, docs/gallery/http2-hol.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -q
SYN=$PWD/target/release/synlab
OUT=docs/gallery
# The run folders stay in results/gallery/ (git-ignored), so `synlab report` can redraw them.
WORK=results/gallery
mkdir -p "$WORK"

# The machine may be shared: before each run, the load average and how busy the CPUs were over
# 5 s go to docs/gallery/load.txt, next to the figure they qualify.
busy() {
  read -r _ a b c d e f g h _ < /proc/stat; t1=$((a+b+c+d+e+f+g+h)); i1=$((d+e)); sleep 5
  read -r _ a b c d e f g h _ < /proc/stat; t2=$((a+b+c+d+e+f+g+h)); i2=$((d+e))
  echo $(( 100 - 100 * (i2 - i1) / (t2 - t1) ))
}

# scenario -> the plots (stems) the README shows
declare -A SHOW=(
  [simple-vs-sclient]="request_rate"
  [overload]="throughput accept_queue cpu"
  [overload-nginx]="throughput cpu"
  [bursty]="throughput"
  [bursty-rates]="throughput"
  [wan-delay]="throughput connections"
  [wan-delay-event]="connections"
  [wan-loss]="throughput connections"
  [wan-loss-capacity]="throughput connections"
  [mixed-clients]="latency"
  [time-wait]="connections"
  [time-wait-cost]="connection_states cpu"
  [specweb96]="cpu classes"
  [ecommerce]="throughput cpu classes"
  [capacity]="little_load_factor latency capacity"
  [client-check]="request_rate"
  [lesson-overload]="timeseries"
  [lesson-bursts]="timeseries"
  [lesson-wan]="timeseries"
)
ORDER=(simple-vs-sclient overload overload-nginx bursty bursty-rates wan-delay wan-delay-event wan-loss wan-loss-capacity mixed-clients time-wait time-wait-cost specweb96 ecommerce capacity client-check lesson-overload lesson-bursts lesson-wan hol)
[ $# -gt 0 ] && ORDER=("$@")
# The head-of-line experiment (issues 46 and 47): HTTP/1.1 x6, HTTP/2 x1 and HTTP/3 x1 at the
# same 30 requests/s over 100 ms, 0 % and 2 % loss; one figure of the three.
HOL=(http2-hol-http11x6 http2-hol-http2x1 http3-hol-http3x1)
run_one() {
  local s=$1
  echo "== $s ($(date +%T))"
  echo "$s: $(date -u +%FT%TZ) load average $(cut -d' ' -f1-3 /proc/loadavg), CPUs $(busy) % busy over 5 s before the run" >> "$OUT/load.txt"
  "$SYN" run "scenarios/$s.toml" --no-progress --out "$WORK/$s" | tail -n 30
}
for s in "${ORDER[@]}"; do
  [ "$s" = hol ] && continue
  [ -n "${SHOW[$s]:-}" ] || { echo "no gallery entry for $s" >&2; exit 2; }
  run_one "$s"
  dir=$(ls -td "$WORK/$s"/*/ | head -1)
  for stem in ${SHOW[$s]}; do
    if [ -f "$dir/plots/$stem.png" ]; then
      cp "$dir/plots/$stem.png" "$OUT/$s-$stem.png"
    else
      echo "warning: $s made no $stem plot" >&2
    fi
  done
  cp "$dir/summary.csv" "$OUT/$s.summary.csv"
  cp "$dir/summary.json" "$OUT/$s.summary.json"
done
# Figs. 9 and 10: the built-in prefork, Apache, the event server and nginx on one plot (Apache
# and nginx when installed), overlaid by `synlab report`.
if [[ " ${ORDER[*]} " == *" wan-delay "* ]]; then
  runs=("$(ls -td "$WORK/wan-delay"/*/ | head -1)")
  for s in wan-delay-apache wan-delay-event wan-delay-nginx; do
    [ -d "$WORK/$s" ] || "$SYN" run "scenarios/$s.toml" --no-progress --out "$WORK/$s" | tail -n 10 || continue
    dir=$(ls -td "$WORK/$s"/*/ | head -1)
    runs+=("$dir")
    # Every run a README figure comes from keeps its summary here.
    cp "$dir/summary.csv" "$OUT/$s.summary.csv"
    cp "$dir/summary.json" "$OUT/$s.summary.json"
  done
  md=$("$SYN" report "${runs[@]}" | sed -n 's/^report: //p')
  cp "$(dirname "$md")/plots/throughput.png" "$OUT/wan-delay-throughput.png"
  cp "$(dirname "$md")/plots/connections.png" "$OUT/wan-delay-connections.png"
fi
# Fig. 7: the built-in event server and nginx, each with the steering on and off, on one plot.
if [[ " ${ORDER[*]} " == *" overload "* && -d "$WORK/overload-nginx" ]]; then
  md=$("$SYN" report "$(ls -td "$WORK/overload"/*/ | head -1)" "$(ls -td "$WORK/overload-nginx"/*/ | head -1)" | sed -n 's/^report: //p')
  cp "$(dirname "$md")/plots/throughput.png" "$OUT/overload-both-throughput.png"
fi
# The head-of-line figure: the three runs' p50 and p99 against loss, overlaid by `synlab report`.
if [[ " ${ORDER[*]} " == *" hol "* ]]; then
  runs=()
  for s in "${HOL[@]}"; do
    run_one "$s"
    dir=$(ls -td "$WORK/$s"/*/ | head -1)
    runs+=("$dir")
    cp "$dir/summary.csv" "$OUT/$s.summary.csv"
    cp "$dir/summary.json" "$OUT/$s.summary.json"
  done
  md=$("$SYN" report "${runs[@]}" | sed -n 's/^report: //p')
  cp "$(dirname "$md")/plots/latency.png" "$OUT/http2-hol-latency.png"
fi
echo "gallery updated in $OUT"
