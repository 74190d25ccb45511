#!/bin/sh
# Benchmarks the rules engine on one core, in an optimised build without
# sanitizers (build-bench/), and reports rates beside baselines measured in
# the same run.
#   bench/rules-check.sh [SECONDS]            in-process checks/s
#   CODEX=/path/to/codex bench/rules-check.sh process-level: execgate-rules
#                                             check vs codex execpolicy check
set -eu
cd "$(dirname "$0")/.."
secs=${1:-1}
if [ ! -d build-bench ]; then
    meson setup build-bench --buildtype=release -Dtests=false >/dev/null
fi
ninja -C build-bench rules/librules.a >/dev/null
cc -O2 -std=c17 -D_GNU_SOURCE -Irules -Ibuild-bench bench/rules-check.c \
    build-bench/rules/librules.a $(pkg-config --libs jansson) -o build-bench/bench-rules-check
taskset -c 0 build-bench/bench-rules-check "$secs"

# Process level: one process per check, as a user or script would run it.
if ninja -C build-bench rules/execgate-rules >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    i=0
    while [ $i -lt 1000 ]; do
        echo "prefix_rule(pattern = [\"prog$((i / 5))\", \"sub$((i % 5))\"], decision = \"prompt\")"
        i=$((i + 1))
    done >"$tmp/bench.rules"
    run() {
        n=0
        start=$(date +%s.%N)
        while [ $n -lt 100 ]; do
            "$@" prog7 sub2 x >/dev/null
            n=$((n + 1))
        done
        end=$(date +%s.%N)
        echo "$start $end" | awk '{ printf "%.2f ms per check\n", ($2 - $1) * 10 }'
    }
    printf 'execgate-rules check, 1000-rule file: '
    run taskset -c 0 build-bench/rules/execgate-rules check --rules "$tmp/bench.rules" --
    if [ -n "${CODEX:-}" ]; then
        printf 'codex execpolicy check, same file (baseline): '
        RUST_BACKTRACE=0 run taskset -c 0 "$CODEX" execpolicy check --rules "$tmp/bench.rules" --
    fi
fi
