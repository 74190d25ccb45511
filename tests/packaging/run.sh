#!/usr/bin/env bash
# tests/packaging/run.sh DIST
#
# The packages scripts/package wrote into DIST, installed away from any
# build tree, each running a real MCP session (tests/packaging/mcp_call.py):
#   - the npm tarball, installed with `npm install --prefix` (a local
#     tarball without dependencies: no network), through its launcher in
#     node_modules/.bin, exit status and signals included, and through
#     `npx -y TARBALL`; every program in it must be static;
#   - the .deb, unpacked with dpkg-deb -x into a scratch root, its server
#     run from ROOT/usr/bin, and its Depends naming the libraries the
#     server links.
# Exits 1 when any of it fails.
set -euo pipefail
dist=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(meson introspect "$here/../../meson.build" --projectinfo |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
tgz="$dist/execgate-$version.tgz"
deb="$dist/execgate_${version}_amd64.deb"
scratch=$(mktemp -d /tmp/execgate-packages-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failed=0

fail() {
    echo "FAIL: $*" >&2
    failed=1
}

# call NAME DIR [--launcher] -- ARGV...: one session in a scratch
# directory, whose calls must run the Bash in DIR/.../libexec/execgate;
# ARGV starts in $call_cwd when set.
call() {
    local name=$1 under=$2 work="$scratch/work-$1"
    shift 2
    mkdir -p "$work"
    if (cd "${call_cwd:-.}" && "$here/mcp_call.py" --under "$under" --scratch "$work" "$@"); then
        echo "ok: $name: initialize, echo hi and the package's own Bash and zsh"
    else
        fail "$name"
    fi
}

# npm: its own cache, offline: nothing may come from a registry.
export npm_config_cache="$scratch/npm-cache" npm_config_offline=true
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
if npm install --prefix "$scratch/npm" --silent "$tgz" >"$scratch/npm-install.log" 2>&1; then
    top="$scratch/npm/node_modules/execgate"
    for f in "$top"/bin/* "$top"/libexec/execgate/*; do
        if readelf -lW "$f" | grep -q 'Requesting program interpreter' ||
            readelf -dW "$f" | grep -q '(NEEDED)'; then
            fail "npm: ${f#"$top"/} is not static"
        fi
    done
    call npm-launcher "$top" --launcher -- "$scratch/npm/node_modules/.bin/execgate"
    status=0
    "$scratch/npm/node_modules/.bin/execgate" --no-such-option 2>/dev/null || status=$?
    [ "$status" -eq 2 ] || fail "npm: the launcher's exit status for a bad option is $status, not 2"
    out=$("$scratch/npm/node_modules/.bin/execgate-rules" --version) || true
    [ "$out" = "execgate-rules $version" ] || fail "npm: execgate-rules --version printed '$out'"
else
    cat "$scratch/npm-install.log" >&2
    fail "npm install --prefix $scratch/npm $tgz"
fi
# npm install -g links the man pages (package.json's "man") where man finds
# them; the completions stay in the package, where the README says.
if npm install -g --prefix "$scratch/npm-global" --silent "$tgz" >"$scratch/npm-global.log" 2>&1; then
    for page in man1/execgate.1 man1/execgate-rules.1 man1/execgate-sandbox.1 man5/execgate.rules.5; do
        [ -f "$scratch/npm-global/share/man/$page" ] || fail "npm -g: share/man/$page is not linked"
    done
    top="$scratch/npm-global/lib/node_modules/execgate"
    for f in bash-completion/completions/execgate zsh/vendor-completions/_execgate; do
        [ -f "$top/share/$f" ] || fail "npm -g: share/$f is missing"
    done
else
    cat "$scratch/npm-global.log" >&2
    fail "npm install -g --prefix $scratch/npm-global $tgz"
fi
# npx installs into its cache under npm_config_cache and runs the bin named
# after the package: as the README shows it, a relative path from the
# checkout, and a file: spec with an absolute path (an absolute path
# alone is taken for a command to run).
call_cwd="$dist/.." call npx-relative "$npm_config_cache/_npx" -- \
    npx -y "./$(basename "$dist")/$(basename "$tgz")"
call_cwd="$scratch" call npx-absolute "$npm_config_cache/_npx" -- npx -y "file:$tgz"

# The .deb, unpacked.
root="$scratch/deb-root"
if dpkg-deb -x "$deb" "$root"; then
    call deb "$root/usr" -- "$root/usr/bin/execgate"
    depends=$(dpkg-deb -f "$deb" Depends)
    for lib in libuv1 libjansson4 libc6; do
        case " $depends," in
        *" $lib "* | *" $lib,"*) ;;
        *) fail "deb: Depends ($depends) does not name $lib" ;;
        esac
    done
else
    fail "dpkg-deb -x $deb"
fi

exit "$failed"
