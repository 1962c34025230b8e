#!/bin/sh
# Idle CPU of the delay router: bring a lab up (router backend), sample the router's
# utime+stime over 10 s with no traffic, tear the lab down. Needs root.
set -eu
BIN=${SYNLAB_EXE:-target/release/synlab}
ID=bnch$$
ID=$(echo "$ID" | cut -c1-5)
"$BIN" net up --rtt 100ms --run-id "$ID" > /tmp/synlab-bench-$ID.txt
PID=$(sed -n 's/^delay router: pid \([0-9]*\).*/\1/p' /tmp/synlab-bench-$ID.txt)
ticks() { awk '{print $14 + $15}' /proc/"$PID"/stat; }
HZ=$(getconf CLK_TCK)
A=$(ticks); sleep 10; B=$(ticks)
echo "router pid $PID idle CPU over 10 s: $(( (B - A) * 1000 / HZ )) ms ($(echo "scale=3; ($B - $A) * 100 / $HZ / 10" | bc 2>/dev/null || echo '?') % of a core)"
"$BIN" net down --run-id "$ID" > /dev/null
