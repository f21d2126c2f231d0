#!/usr/bin/env bash
# Runs the `window` example under Xvfb (a virtual X display) for a few seconds and saves a
# screenshot: bash tools/window-screenshot.sh [OUT.png] [SECONDS] [AGENTS]
# Needs Debian's xvfb and imagemagick (apt-get install xvfb imagemagick; x11-utils to print
# the window title).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-window.png}"
secs="${2:-6}"
agents="${3:-10000}"
cargo build --release -p runsync-tools --features window --example window
Xvfb :77 -screen 0 1024x900x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY=:77 target/release/examples/window "$agents" &
app=$!
sleep "$secs"
DISPLAY=:77 import -window root "$out"
# No window manager draws a title bar here: print the window's title (Run/Sync times).
if command -v xwininfo >/dev/null; then
    DISPLAY=:77 xwininfo -root -tree | grep -o '"runsync arena[^"]*"' || true
fi
kill "$app" 2>/dev/null || true
echo "screenshot: $out"
