#!/usr/bin/env bash
# Makes docs/tui/synlab-tui.png, the README's picture of the TUI, from a real run: synlab's TUI
# on the embedded default scenario in a tmux window, captured with its colours after it has run
# for a while (`tmux capture-pane -e`), turned into HTML (aha) and rendered to PNG
# (wkhtmltoimage, from Debian's wkhtmltopdf). Run it as root for the lab on the host, or as a
# user for the rootless lab: the status line says which.
#
#   docs/tui/make.sh [SECONDS=25] [SCENARIO]
#
# Needs: tmux aha wkhtmltopdf fonts-dejavu-core python3 (apt-get install -y tmux aha wkhtmltopdf).
# SYNLAB=path/to/synlab picks the binary (default: target/release/synlab, built if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-25}
scenario=${2:-}
out=docs/tui/synlab-tui.png
cols=120 rows=36

for tool in tmux aha wkhtmltoimage; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool is missing: apt-get install -y tmux aha wkhtmltopdf" >&2; exit 2; }
done
bin=${SYNLAB:-target/release/synlab}
[ -x "$bin" ] || cargo build --release
bin=$(realpath "$bin")

work=$(mktemp -d)
session="synlab-docs-$$"
# A tmux server of its own (-L), so other tmux sessions on the machine are not touched.
tm() { tmux -L "$session" "$@"; }
cleanup() {
  tm kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

scen_arg=""
[ -z "$scenario" ] || scen_arg="'$(realpath "$scenario")'"
# The run folder goes to the scratch folder; the TUI quits on `q` and removes what it built.
tm new-session -d -s "$session" -x "$cols" -y "$rows" \
  "cd '$work' && TERM=xterm-256color '$bin' tui $scen_arg --out '$work/results'; sleep 30"
sleep "$secs"
tm capture-pane -t "$session" -e -p > "$work/screen.ansi"
tm send-keys -t "$session" q
# Wait for the TUI to finish its run folder before the session goes.
for _ in $(seq 1 60); do
  pgrep -f "^$bin tui" >/dev/null || break
  sleep 0.5
done

grep -q 'lab\|loopback' "$work/screen.ansi" || { echo "make.sh: the capture does not look like synlab's TUI:" >&2; cat "$work/screen.ansi" >&2; exit 1; }
aha --black --title "synlab" < "$work/screen.ansi" > "$work/screen.html"
# A monospace font with the box-drawing characters, a little padding; a character the font
# lacks (the charts' braille dots, the warning sign) comes from another font with another
# width, so each such character gets a box exactly one cell wide.
python3 - "$work/screen.html" <<'PY'
import re, sys
path = sys.argv[1]
html = open(path, encoding="utf-8").read()
cell = '<span style="display:inline-block;width:0.602em;overflow:hidden;vertical-align:bottom">{}</span>'
def fix(text):
    return "".join(cell.format(c) if ord(c) > 0x7F and not 0x2500 <= ord(c) <= 0x259F else c for c in text)
html = re.sub(r">([^<]+)<", lambda m: ">" + fix(m.group(1)) + "<", html)
html = html.replace("<pre>", '<pre style="font-family: \'DejaVu Sans Mono\', monospace; font-size: 14px; line-height: 1.15; margin: 8px;">', 1)
open(path, "w", encoding="utf-8").write(html)
PY
QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$work" \
  wkhtmltoimage --quiet --quality 30 --width 1040 --encoding utf-8 "$work/screen.html" "$work/screen.png"
cp "$work/screen.png" "$out"
echo "wrote $out ($(stat -c %s "$out") bytes) from a ${secs}s run"
