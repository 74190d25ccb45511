#!/usr/bin/env bash
# tests/integration/sdk/run.sh SERVER WORKDIR [CLIENT]
#
# An official TypeScript MCP SDK client against execgate: installs
# @modelcontextprotocol/sdk into WORKDIR (under the build tree) once, then
# runs CLIENT (default client.mjs; elicit.mjs answers elicitation
# requests).  Tests sharing WORKDIR must not run in parallel with a first
# install (escalation_sdk is not parallel).  Without node or npm the test is
# reported as skipped (exit 77), never as passed.
set -euo pipefail
server=$1
workdir=$2
client=${3:-client.mjs}
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
cp "$here/$client" "$workdir/$client"
cp "$here/server.mjs" "$workdir/server.mjs" # what the HTTP clients share
exec node "$workdir/$client" "$server"
