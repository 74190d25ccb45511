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
ninja -C build-bench server/libexecgate_server.a >/dev/null
libs=$(echo build-bench/server/*.a build-bench/rules/*.a build-bench/sandbox/*.a \
    build-bench/wrapper/*.a)
cc -O2 -std=c17 -D_GNU_SOURCE -Iserver -Ibuild-bench -I. bench/rules-reload.c $libs \
    $(pkg-config --libs jansson libuv libseccomp) -o build-bench/bench-rules-reload
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
taskset -c 0 build-bench/bench-rules-reload "$n" "$runs" "$tmp"
