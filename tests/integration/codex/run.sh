#!/usr/bin/env bash
# tests/integration/codex/run.sh EXECGATE CACHE
#
# The real Codex CLI against execgate (e2e.py): installs the published
# @openai/codex at the version below from npm into CACHE/codex-npm-VERSION
# on first use (later runs reuse it; concurrent first runs wait for one
# another), then runs e2e.py.  Skipped (exit 77, one line saying why) only
# where it cannot run at all: no node, npm or python3, or, with nothing
# cached yet, no answer from the npm registry.  A failed install with the
# registry answering is a failure.
set -euo pipefail
execgate=$1
cache=$2
version=0.169.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$cache/codex-npm-$version
codex=$dir/node_modules/.bin/codex

for tool in node npm python3 flock; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool is not installed; the Codex end-to-end test needs it" >&2
        exit 77
    fi
done

if [ ! -x "$codex" ]; then
    mkdir -p "$cache"
    exec 9>"$cache/codex-npm-$version.lock"
    flock 9
    if [ ! -x "$codex" ]; then
        if ! timeout 60 npm view "@openai/codex@$version" version >/dev/null 2>&1; then
            echo "SKIP: the npm registry cannot be reached to install @openai/codex@$version" >&2
            exit 77
        fi
        echo "installing @openai/codex@$version into $dir" >&2
        tmp=$(mktemp -d "$cache/codex-npm-$version.XXXXXX")
        if ! (cd "$tmp" && echo '{"private":true}' >package.json &&
            npm install --no-audit --no-fund --silent "@openai/codex@$version" >&2); then
            rm -rf "$tmp"
            echo "installing @openai/codex@$version failed" >&2
            exit 1
        fi
        # whole or not at all: a run cut off midway leaves no half install
        mv "$tmp" "$dir"
    fi
    exec 9>&-
fi
exec python3 "$here/e2e.py" "$execgate" "$codex"
