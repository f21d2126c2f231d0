#!/usr/bin/env bash
# The inspector's page in a real browser: starts `arena --inspect`, drives the page in
# headless Chromium (Debian's `chromium`, through playwright-core from npm) through
# running -> pause -> step -> rewind 10 and re-simulate -> filter -> select an entity and
# read its provenance -> the game's own views (its picture, of the present and of a past
# frame from the ring; plots; the parent/child tree; resources), checks each step, and
# saves a screenshot of each (`inspector-game.png`: the whole page, as docs/ shows it).
#
#   bash tools/inspect-browser.sh [OUT_DIR]    (default target/inspect-browser)
#
# INSPECT_ADDR (default 127.0.0.1:0) is where the arena serves the inspector: a
# non-loopback address (0.0.0.0:0) drives the page through the token its URL carries.
#
# Needs: node and npm (playwright-core is installed into OUT_DIR/node on first use; it
# downloads no browser), and /usr/bin/chromium (as root, the script installs Debian's
# package if missing). Exit status 1 if the page did not do what it should.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/target/inspect-browser}" && cd "${1:-$root/target/inspect-browser}" && pwd)

if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "inspect-browser: needs Debian's chromium (apt-get install chromium)" >&2
        exit 2
    fi
fi
if [ ! -d "$out/node/node_modules/playwright-core" ]; then
    npm install --silent --no-audit --no-fund --prefix "$out/node" playwright-core@1 >/dev/null
fi

cargo build -q -p runsync-tools --bin arena --manifest-path "$root/Cargo.toml"
arena="${CARGO_TARGET_DIR:-$root/target}/debug/arena"
log="$out/arena.log"
"$arena" --entities 1200 --frames 100000000 --workers 2 --inspect "${INSPECT_ADDR:-127.0.0.1:0}" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
url=""
for _ in $(seq 100); do
    url=$(sed -n 's/^arena: inspector at \(http:[^ ]*\)$/\1/p' "$log")
    [ -n "$url" ] && break
    if ! kill -0 $pid 2>/dev/null; then
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done
[ -n "$url" ] || { echo "inspect-browser: the arena printed no URL" >&2; cat "$log" >&2; exit 1; }
echo "inspect-browser: arena at $url; screenshots in $out"
PLAYWRIGHT_MODULES="$out/node/node_modules" node "$root/tools/inspect-browser.mjs" "$url" "$out"
