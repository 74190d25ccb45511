#!/bin/sh
# Benchmarks the server's rules reload (decide_server_reload) of a
# generated directory (default 10 000 rules) in an optimised build without
# sanitizers (build-bench/): what one reload holds the loop for.
#   bench/rules-reload.sh [RULES [RUNS]]
set -eu
cd "$(dirname "$0")/.."
n=${1:-10000}
runs=${2:-9}
if [ ! -d build-bench ]; then
    meson setup build-bench --buildtype=release -Dtests=false >/dev/null
fi
ninja -C build-bench bench/bench-rules-reload >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
taskset -c 0 build-bench/bench/bench-rules-reload "$n" "$runs" "$tmp"
