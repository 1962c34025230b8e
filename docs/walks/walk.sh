#!/usr/bin/env bash
# Walks a lesson in tmux (issue 45, "what must be shown"): synlab's TUI on LESSON at 120x40 as
# USER (root, or a plain user through setpriv: the rootless lab), the steps played on their own
# time; per step one capture of the pane, the one where all its checks held or else the step's
# last, with the load average and the checks' lines, in OUT/step-N.txt; OUT/checks.txt sums up.
# HOG=1 pins a busy loop (at NICE's niceness) to the server's CPU (the lessons' split: CPU 1) for the whole walk and
# kills it by its pid after. STEPS=K stops after step K (q). NICE=-15 runs synlab at that
# niceness (root only; setpriv keeps it for the plain user): the lab ahead of other work on a
# shared machine, as tests/tui_class.rs walks lesson-overload. Traffic stays in the lab.
#
#   docs/walks/walk.sh scenarios/lesson-tls.toml synlab-ci docs/walks/tls
#   HOG=1 STEPS=3 docs/walks/walk.sh scenarios/lesson-overload.toml synlab-ci docs/walks/overload-hog
set -euo pipefail
lesson=$(realpath "$1")
user=$2
out=$3
exe=${SYNLAB:-${CARGO_TARGET_DIR:-target}/debug/synlab}
steps_max=${STEPS:-99}
mkdir -p "$out"
rm -f "$out"/step-*.txt "$out"/checks.txt
dir=$(mktemp -d /tmp/synlab-walk-XXXXXX)
chmod 755 "$dir"
cp "$exe" "$dir/synlab"
prefix=""
[ -n "${NICE:-}" ] && prefix="nice -n $NICE"
if [ "$user" != root ]; then
    chown "$user" "$dir"
    prefix="$prefix setpriv --reuid=$(id -u "$user") --regid=$(id -g "$user") --clear-groups"
fi
session=walk-$$
hog=""
cleanup() {
    [ -n "$hog" ] && kill "$hog" 2>/dev/null || true
    tmux kill-session -t "$session" 2>/dev/null || true
}
trap cleanup EXIT
if [ "${HOG:-0}" = 1 ]; then
    # At synlab's niceness: a competitor the scheduler treats as the server's equal.
    nice -n "${NICE:-0}" taskset -c 1 sh -c 'while :; do :; done' &
    hog=$!
fi
tmux new-session -d -s "$session" -x 120 -y 40 \
    "cd $dir && HOME=$dir $prefix $dir/synlab tui $lesson --out $dir/out; echo SYNLAB-EXIT=\$?; sleep 30"
step=0
total=0
best=""
held_at=""
save() {
    [ "$step" -gt 0 ] || return 0
    printf '%s\n' "$best" >"$out/step-$step.txt"
    {
        echo "step $step/$total: $(head -1 <<<"$best" | grep -o 'load average [0-9. ]*' || true)"
        grep -E '✓ held|… not yet|… not measured|machine is busy|↺ recovery' <<<"$best" || echo "  (no checks)"
        echo "  all held: ${held_at:-no}"
        echo
    } >>"$out/checks.txt"
}
start=$(date +%s)
while :; do
    screen=$(tmux capture-pane -t "$session" -p 2>/dev/null) || break
    grep -q SYNLAB-EXIT <<<"$screen" && break
    now=$(sed -n 's/.*step \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' <<<"$screen" | head -1)
    if [ -n "$now" ]; then
        set -- $now
        if [ "$1" != "$step" ]; then
            save
            [ "$1" -gt "$steps_max" ] && { step=0; break; }
            step=$1 total=$2 best="" held_at=""
            since=$(date +%s)
        fi
        stamp="# t $(($(date +%s) - start)) s, $((${since:-0} > 0 ? $(date +%s) - since : 0)) s into step $step · load average $(cut -d' ' -f1-3 /proc/loadavg) · $(date -u +%H:%M:%S) UTC · user $user${NICE:+ at nice $NICE}${hog:+ · CPU hog pid $hog on CPU 1}"
        checks=$(grep -cE '✓ held' <<<"$screen" || true)
        pending=$(grep -cE '… not yet|… not measured' <<<"$screen" || true)
        # The first capture with every check held, once the checks' second is all the step's
        # (from 3 s in), is the step's; else its latest.
        into=$(($(date +%s) - since))
        if [ -z "$held_at" ]; then
            best="$stamp"$'\n'"$screen"
            if [ "$into" -ge 3 ] && [ "$checks" -gt 0 ] && [ "$pending" = 0 ]; then
                held_at="$into s into the step"
            fi
        fi
    fi
    grep -q FINISHED <<<"$screen" && { save; step=0; tmux send-keys -t "$session" q; sleep 3; break; }
    sleep 1
done
save
tmux send-keys -t "$session" q 2>/dev/null || true
sleep 2
cp "$dir"/out/*/report.md "$out/report.txt" 2>/dev/null || true
echo "walked $lesson as $user: $out/checks.txt"
