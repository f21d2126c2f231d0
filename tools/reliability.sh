#!/usr/bin/env bash
# The reliability checks that need a nightly toolchain or more time than CI's `.ci/run`:
#
#   tools/reliability.sh            # everything
#   tools/reliability.sh miri loom  # just those steps (release, tracy, window, miri,
#                                   # miri-tb, loom, asan, fuzz)
#
# FUZZ_SECONDS (default 60) bounds the fuzz run; LOOM_MAX_PREEMPTIONS (default 3) bounds
# loom's search. Installs the Miri component and cargo-fuzz if they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(release tracy window miri miri-tb loom asan fuzz)
step() { printf '\n==> %s\n' "$*"; }

ensure_miri() {
    if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri'; then
        step "installing the Miri component"
        rustup component add --toolchain nightly miri rust-src
    fi
}

for s in "${steps[@]}"; do
    case "$s" in
    release)
        step "concurrency tests in release (real contention on the pool and the folds)"
        cargo test --release -p runsync --test determinism --test runtime
        ;;
    tracy)
        step "tracy feature (zone sites, chunks and suspension, frames with zones, memory)"
        cargo clippy --workspace --all-targets --features runsync/tracy -- -D warnings
        cargo test -p runsync-pool --features tracy
        cargo test -p runsync --features tracy --lib --test diagnostics
        cargo test -p runsync-benches --features runsync/tracy --test zero_alloc
        cargo test -p runsync --features tracy-memory --test diagnostics
        ;;
    window)
        step "window example (winit + softbuffer; built and linted, not run)"
        cargo clippy -p runsync-tools --features window --example window -- -D warnings
        ;;
    miri)
        ensure_miri
        # Only the tests that never build a World: bitvec (the masks) fails Stacked Borrows
        # (ferrilab/bitvec#193); everything else runs under Tree Borrows (`miri-tb`).
        step "Miri, Stacked Borrows, strict provenance (tests that do not reach bitvec)"
        MIRIFLAGS="-Zmiri-strict-provenance" \
            cargo +nightly miri test -p runsync-pool --no-fail-fast
        MIRIFLAGS="-Zmiri-strict-provenance" \
            cargo +nightly miri test -p runsync --lib --no-fail-fast -- output:: erased:: fold::
        ;;
    miri-tb)
        ensure_miri
        step "Miri, Tree Borrows, strict provenance"
        MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-strict-provenance" \
            cargo +nightly miri test -p runsync-pool -p runsync --lib --tests --no-fail-fast
        ;;
    loom)
        step "loom model checks of the pool (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3})"
        RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
            LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" \
            cargo test -p runsync-pool --release loom_
        ;;
    asan)
        step "AddressSanitizer over the runsync test suite"
        RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zsanitizer=address RUSTDOCFLAGS=-Zsanitizer=address CARGO_TARGET_DIR=target/asan \
            cargo test -p runsync-pool -p runsync --target x86_64-unknown-linux-gnu
        ;;
    fuzz)
        if ! command -v cargo-fuzz >/dev/null; then
            step "installing cargo-fuzz"
            cargo install cargo-fuzz --locked
        fi
        step "fuzzing the frame model for ${FUZZ_SECONDS:-60}s"
        (cd fuzz && cargo +nightly fuzz run frames -- -max_total_time="${FUZZ_SECONDS:-60}")
        # The readers of untrusted bytes: save files, entity records from other shards,
        # the inspector's HTTP requests, replay files, and the arena's saves with their
        # resources (the spatial grid) rewritten (their past finds first).
        for target in load import request replay arena_grid; do
            step "fuzzing the $target reader for ${FUZZ_SECONDS:-60}s"
            (cd fuzz && cargo +nightly fuzz run "$target" regressions/"$target"/* \
                && cargo +nightly fuzz run "$target" -- -max_total_time="${FUZZ_SECONDS:-60}")
        done
        ;;
    *)
        echo "unknown step '$s' (expected: release tracy window miri miri-tb loom asan fuzz)" >&2
        exit 2
        ;;
    esac
done
step "all reliability checks passed: ${steps[*]}"
