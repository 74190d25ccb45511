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
ninja -C build-bench bench/bench-rules-check >/dev/null
taskset -c 0 build-bench/bench/bench-rules-check "$secs"

# Process level: one process per check, as a user or script would run it.
# CPU time (perf stat task-clock) is reported: on a shared machine the
# wall time mostly measures waiting for a core.
if ninja -C build-bench rules/cli/execgate-rules >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for size in 1000 10000; do
        awk -v n=$size 'BEGIN { for (i = 0; i < n; i++)
            printf "prefix_rule(pattern = [\"prog%d\", \"sub%d\"], decision = \"prompt\")\n", i / 5, i % 5 }' \
            >"$tmp/bench$size.rules"
    done
    : >"$tmp/empty.rules"
    # perf's task-clock is the CPU time of the process, averaged over runs.
    run() {
        label=$1
        shift
        perf stat -x, -e task-clock -r 20 "$@" prog7 sub2 x 2>&1 >/dev/null |
            awk -F, -v label="$label" '/task-clock/ { printf "%-50s %8.2f ms CPU per check\n", label, $1 }'
    }
    for f in empty bench1000 bench10000; do
        run "execgate-rules check, $f.rules" taskset -c 0 build-bench/rules/cli/execgate-rules check \
            --rules "$tmp/$f.rules" --
        if [ -n "${CODEX:-}" ]; then
            RUST_BACKTRACE=0 run "codex execpolicy check, $f.rules (baseline)" taskset -c 0 \
                "$CODEX" execpolicy check --rules "$tmp/$f.rules" --
        fi
    done
fi
