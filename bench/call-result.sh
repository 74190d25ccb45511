#!/bin/sh
# The CPU time to build the answer of a call that printed 20 MB, written
# directly (call_result_json) against jansson values dumped (how it was
# built before), in an optimised build.  See bench/call-result.c.
#   bench/call-result.sh [RUNS]
set -eu
cd "$(dirname "$0")/.."
out=build-bench/bench-call-result
mkdir -p build-bench
cc -O2 -std=c17 -D_GNU_SOURCE -Iserver -Ibench bench/call-result.c server/call/call_result.c \
    server/call/output_ring.c common/utf8.c $(pkg-config --cflags --libs jansson) -o "$out"
"$out" "${1:-30}"
