#!/usr/bin/env bash
# Builds `shoal` with profile-guided optimisation (PGO) into target/pgo/release/shoal.
#
#   scripts/build-pgo.sh
#
# Three steps:
#   1. an instrumented release build (target/pgo/instrumented), which counts how often each
#      branch and call of the code runs;
#   2. a training run: that build serves on a free local port from a scratch data directory
#      while its own `shoal bench` sends it every fixed workload (PutItem, GetItem, Query on an
#      LSI and a GSI, BatchGetItem, BatchWriteItem, Scan) and the data models in docs/models
#      that use UpdateItem, conditional writes and transactions; the counts land in
#      target/pgo/raw and are merged with the toolchain's llvm-profdata;
#   3. the release build again, laid out by those counts: hot paths inlined and kept
#      together, code no request ran optimised for size.
#
# Why: a DynamoDB request touches hyper, tokio, serde_json and five of Shoal's crates, and at
# a moderate rate each one starts on cold caches, so the layout of the code counts. Measured
# in docs/PERFORMANCE.md ("Over HTTP"). The build takes about twice the time of
# `cargo build --release` plus a minute of training; the plain build stays the default.
#
# Needs rustup (the llvm-tools component is added if missing). Everything it writes is under
# target/pgo; the final binary is checked by serving the GetItem model (docs/models) before
# the script reports success.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
work="$root/target/pgo"

rustup component add llvm-tools >/dev/null
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || { echo "build-pgo: no llvm-profdata at $profdata" >&2; exit 1; }

# Serves `$1` from a scratch directory on a port the kernel picks (`--port 0`); sets $pid,
# $endpoint (read from the line the server prints once it listens) and $scratch.
start_server() {
    scratch=$(mktemp -d)
    "$1" serve --port 0 --data-dir "$scratch/data" >"$scratch/serve.out" 2>"$scratch/serve.log" &
    pid=$!
    local tries=0
    endpoint=""
    until [ -n "$endpoint" ]; do
        endpoint=$(sed -n 's/^shoal listening on //p' "$scratch/serve.out")
        tries=$((tries + 1))
        [ "$tries" -lt 300 ] || { echo "build-pgo: $1 did not start" >&2; cat "$scratch/serve.log" >&2; exit 1; }
        [ -n "$endpoint" ] || sleep 0.1
    done
}

# Stops the server with SIGINT, so the instrumented build writes its counts on exit.
stop_server() {
    kill -INT "$pid"
    wait "$pid" || true
    rm -rf "$scratch"
}

echo "build-pgo: 1/3 instrumented build" >&2
rm -f "$work"/merged*.profdata
RUSTFLAGS="-Cprofile-generate=$work/raw" \
    cargo build --release --locked --bin shoal --target-dir "$work/instrumented"
instrumented="$work/instrumented/release/shoal"
# The dependencies' build scripts ran instrumented too: only the training's counts count.
rm -rf "$work/raw"
mkdir -p "$work/raw"

echo "build-pgo: 2/3 training" >&2
start_server "$instrumented"
"$instrumented" bench --endpoint "$endpoint" --seconds 3 >/dev/null
for model in forum single-table worked-example; do
    "$instrumented" bench --endpoint "$endpoint" --model "docs/models/$model.json" >/dev/null
done
stop_server
"$profdata" merge -o "$work/merged.profdata" "$work/raw"
# Cargo does not look inside the profile, only at the flags: naming the profile by its hash
# makes a new profile rebuild every crate rather than leave the unchanged ones laid out by
# the last run's.
profile="$work/merged-$(sha256sum "$work/merged.profdata" | cut -c1-16).profdata"
mv "$work/merged.profdata" "$profile"

echo "build-pgo: 3/3 optimised build" >&2
RUSTFLAGS="-Cprofile-use=$profile" \
    cargo build --release --locked --bin shoal --target-dir "$work"
optimised="$work/release/shoal"

# The optimised binary must still serve: the GetItem model exits non-zero when more than 1% of
# its calls fail (or none can be made), which stops this script.
start_server "$optimised"
"$optimised" bench --endpoint "$endpoint" --model docs/models/getitem.json >/dev/null
stop_server
echo "$optimised"
