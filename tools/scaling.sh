#!/usr/bin/env bash
# How Run and Sync scale with the worker count: runs the arena at each worker count and
# prints one markdown row per count (fps, frame p50/p99, Run and Sync p50, and the speed-up
# of Run and Sync over the first count).
#
#   tools/scaling.sh [ARENA] [WORKERS...] [-- ARENA OPTIONS...]
#
# ARENA defaults to target/release/arena (build it first:
# `cargo build --release -p runsync-tools --bin arena`); WORKERS default to 1 2 4 8 16
# (counts above the machine's cores are skipped). Options after `--` go to every run
# (default: `--frames 600`). Needs python3 to read the arena's JSON. Each run's JSON is
# kept in $SCALING_OUT (default target/scaling).
set -euo pipefail
cd "$(dirname "$0")/.."

arena=target/release/arena
if [ $# -gt 0 ] && [ "$1" != "--" ] && ! [[ "$1" =~ ^[0-9]+$ ]]; then
    arena=$1
    shift
fi
workers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    workers+=("$1")
    shift
done
[ $# -gt 0 ] && shift # the `--`
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(--frames 600)
[ ${#workers[@]} -gt 0 ] || workers=(1 2 4 8 16)
[ -x "$arena" ] || { echo "no arena binary at $arena (cargo build --release -p runsync-tools --bin arena)" >&2; exit 2; }
out=${SCALING_OUT:-target/scaling}
mkdir -p "$out"
cores=$(nproc)

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $cores cores"
echo "arena options: ${opts[*]}"
echo
echo "| workers | fps | frame p50 ms | frame p99 ms | p99 / p50 | Run p50 ms | Sync p50 ms | Run speed-up | Sync speed-up |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
first=""
for w in "${workers[@]}"; do
    if [ "$w" -gt "$cores" ]; then
        echo "(skipped $w workers: more than the $cores cores)" >&2
        continue
    fi
    "$arena" --workers "$w" --json "${opts[@]}" >"$out/arena_w$w.json"
    row=$(python3 - "$out/arena_w$w.json" "$first" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
run, sync, frame = s["run"]["p50_ms"], s["sync"]["p50_ms"], s["frame"]
base = sys.argv[2].split() if sys.argv[2] else [run, sync]
r0, s0 = float(base[0]), float(base[1])
print(f"{s['workers']} {s['fps']:.1f} {frame['p50_ms']:.2f} {frame['p99_ms']:.2f} "
      f"{frame['p99_ms'] / frame['p50_ms']:.2f} {run:.3f} {sync:.3f} "
      f"{r0 / run:.2f} {s0 / sync:.2f} {run} {sync}")
EOF
)
    set -- $row
    [ -n "$first" ] || first="${10} ${11}"
    echo "| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8× | $9× |"
done
