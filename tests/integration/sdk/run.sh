#!/usr/bin/env bash
# tests/integration/sdk/run.sh SERVER WORKDIR
#
# The official TypeScript MCP SDK client against execgate: installs
# @modelcontextprotocol/sdk into WORKDIR (under the build tree) once, then
# runs client.mjs.  Without node or npm the test is reported as skipped
# (exit 77), never as passed.
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
cp "$here/client.mjs" "$workdir/client.mjs"
exec node "$workdir/client.mjs" "$server"
