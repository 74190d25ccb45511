#!/bin/sh
# Benchmarks loading a generated .rules file (default 10 000 rules) in an
# optimised build without sanitizers (build-bench/), in-process and, when
# CODEX points at the real codex binary, process-level beside
# `codex execpolicy check` on the same file (the baseline).
#   bench/rules-load.sh [RULES [RUNS]]
set -eu
cd "$(dirname "$0")/.."
n=${1:-10000}
runs=${2:-15}
if [ ! -d build-bench ]; then
    meson setup build-bench --buildtype=release -Dtests=false >/dev/null
fi
ninja -C build-bench bench/bench-rules-load rules/cli/execgate-rules >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
taskset -c 0 build-bench/bench/bench-rules-load "$n" "$runs" "$tmp/bench.rules"

# Process level: load the file and check one command, 10 times each.
run() {
    start=$(date +%s.%N)
    i=0
    while [ $i -lt 10 ]; do
        "$@" >/dev/null
        i=$((i + 1))
    done
    end=$(date +%s.%N)
    echo "$start $end" | awk '{ printf "%.1f ms per process\n", ($2 - $1) * 100 }'
}
printf 'execgate-rules check --rules FILE -- ls (%s rules): ' "$n"
run taskset -c 0 build-bench/rules/cli/execgate-rules check --rules "$tmp/bench.rules" -- ls
if [ -n "${CODEX:-}" ]; then
    printf 'codex execpolicy check --rules FILE ls (baseline): '
    RUST_BACKTRACE=0 run taskset -c 0 "$CODEX" execpolicy check --rules "$tmp/bench.rules" ls
fi
