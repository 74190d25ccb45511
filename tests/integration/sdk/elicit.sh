#!/usr/bin/env bash
# tests/integration/sdk/elicit.sh SERVER WORKDIR
#
# elicit.mjs (the TypeScript SDK client answering elicitation requests)
# against execgate.  Shares WORKDIR's node_modules with run.sh (installs
# the SDK when missing; the meson test is not run in parallel, so the two
# never install at once).  Without node or npm: skipped (exit 77).
set -euo pipefail
server=$1
workdir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool is not installed; the TypeScript SDK test needs node and npm" >&2
        exit 77
    fi
done

mkdir -p "$workdir"
if [ ! -f "$workdir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    echo "installing @modelcontextprotocol/sdk into $workdir" >&2
    (cd "$workdir" &&
        { [ -f package.json ] || echo '{"private":true}' >package.json; } &&
        npm install --no-audit --no-fund --silent @modelcontextprotocol/sdk >&2)
fi
cp "$here/elicit.mjs" "$workdir/elicit.mjs"
exec node "$workdir/elicit.mjs" "$server"
