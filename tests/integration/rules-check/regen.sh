#!/bin/sh
# Regenerates expected/ from the real Codex:
#   CODEX=/path/to/codex ./regen.sh
# (npm install @openai/codex@0.169.0; the binary is under
# node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex)
set -eu
cd "$(dirname "$0")"
: "${CODEX:?set CODEX to the codex binary}"
export RUST_BACKTRACE=0
mkdir -p expected
# (expected/deep-* are regen-deep.sh's)
find expected -maxdepth 1 -type f ! -name 'deep-*' -delete
grep -v '^#' cases.txt | grep -v '^$' | while IFS= read -r line; do
    id=${line%% *}
    args=${line#* }
    set +e
    eval "\"\$CODEX\" execpolicy check $args" >"expected/$id.out" 2>"expected/$id.err"
    echo $? >"expected/$id.status"
    set -e
    # Codex warns on stderr when its PATH aliases cannot be made (several
    # Codex processes at once): not part of the answer.
    sed -i '/^WARNING: proceeding, even though we could not create PATH aliases/d' "expected/$id.err"
    # A panic names its thread's id and the build machine's source path:
    # neither is part of the answer, and both change from run to run.
    sed -i -E "s/thread '([^']*)' \([0-9]+\)/thread '\1'/; s#panicked at /[^ ]*/(starlark-[^/]*/)#panicked at \1#" "expected/$id.err"
    [ -s "expected/$id.err" ] || rm -f "expected/$id.err"
done
