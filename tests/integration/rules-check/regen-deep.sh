#!/bin/sh
# Regenerates expected/deep-* from the real Codex (see deep-cases.txt):
#   CODEX=/path/to/codex ./regen-deep.sh
# Codex's stack is its main thread's: run this with the default 8 MiB
# stack limit (ulimit -s 8192), as the figures were measured.
set -eu
cd "$(dirname "$0")"
: "${CODEX:?set CODEX to the codex binary}"
export RUST_BACKTRACE=0
mkdir -p expected
rm -f expected/deep-*
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import shlex, sys
out = sys.argv[1]
for line in open("deep-cases.txt"):
    if line.startswith("#") or not line.strip():
        continue
    id, count, before, head, middle, tail, after = shlex.split(line)
    n = int(count)
    def text(s):
        return s.replace("\\n", "\n").replace("{N}", count)
    with open(f"{out}/{id}.rules", "w") as f:
        f.write(text(before) + text(head) * n + text(middle) + text(tail) * n + text(after) + "\n")
PY
for f in "$tmp"/*.rules; do
    id=$(basename "$f" .rules)
    set +e
    "$CODEX" execpolicy check --rules "$f" ls >"expected/deep-$id.out" 2>/dev/null
    echo $? >"expected/deep-$id.status"
    set -e
done
