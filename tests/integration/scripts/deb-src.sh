#!/usr/bin/env bash
# scripts/deps.sh's deb-src entry, derived from apt's binary entries and
# nothing else, against scratch apt directories (EXECGATE_APT_DIR): deb822
# stanzas and one-line entries, a key written into a stanza, disabled
# stanzas, entries that already have deb-src, and a machine with no entry
# at all, which gets a message saying what to add and no file.
#
#   deb-src.sh SOURCE_ROOT
set -euo pipefail
root=$1
. "$root/scripts/deps.sh"

failures=0
scratch=$(mktemp -d /tmp/execgate-deb-src-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# apt_dir NAME: a fresh scratch /etc/apt, made the one deps.sh reads.
apt_dir() {
    export EXECGATE_APT_DIR="$scratch/$1"
    mkdir -p "$EXECGATE_APT_DIR/sources.list.d"
}

# expect_file PATH: PATH holds exactly what is on stdin.
expect_file() {
    local want
    want=$(cat)
    if [ ! -f "$1" ]; then
        fail "$1 was not written"
    elif [ "$(cat "$1")" != "$want" ]; then
        fail "$1 holds:
$(cat "$1")
--- expected:
$want"
    fi
}

# deb822, two files: the second stanza of the first file keeps its
# continuation lines (an inline key), the first file has no blank line at
# its end, field names in any case, a value on continuation lines, a
# comment, a disabled stanza.
apt_dir deb822
cat >"$EXECGATE_APT_DIR/sources.list.d/debian.sources" <<'S'
# the release
Types: deb
URIs: file:/srv/mirror/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

types: deb
URIs: file:/srv/mirror/debian-security
Suites: bookworm-security
Components: main contrib
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mQINBGPL0BUBEADmW5NdOOHwPIJlgPu6JDcKw/NZJPR8lsD3K87ZM18gzyQZJD+w
 -----END PGP PUBLIC KEY BLOCK-----
S
printf 'Types: deb\nURIs: file:/srv/other\nSuites: stable\nComponents: main\nEnabled: no\n' \
    >"$EXECGATE_APT_DIR/sources.list.d/disabled.sources"
printf 'Types:\n deb\nURIs: file:/srv/third\nSuites: nodistro\nComponents: main' \
    >"$EXECGATE_APT_DIR/sources.list.d/third.sources"
deps_have_deb_src && fail "deb822: a deb-src entry was found where there is none"
written=$(deps_derive_deb_src) || fail "deb822: nothing derived"
[ "$written" = "$EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.sources" ] ||
    fail "deb822: wrote $written"
expect_file "$EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.sources" <<'S'
Types: deb-src
URIs: file:/srv/mirror/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: file:/srv/mirror/debian-security
Suites: bookworm-security
Components: main contrib
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mQINBGPL0BUBEADmW5NdOOHwPIJlgPu6JDcKw/NZJPR8lsD3K87ZM18gzyQZJD+w
 -----END PGP PUBLIC KEY BLOCK-----

Types: deb-src
URIs: file:/srv/third
Suites: nodistro
Components: main
S
deps_have_deb_src || fail "deb822: the derived entry is not seen as a deb-src entry"

# One-line entries in sources.list and a .list, options kept; comments and
# deb-src-less lines of other kinds are not copied.
apt_dir oneline
cat >"$EXECGATE_APT_DIR/sources.list" <<'S'
# deb file:/srv/commented bookworm main
deb file:/srv/mirror/debian bookworm main
	deb [signed-by=/usr/share/keyrings/k.gpg] file:/srv/mirror/debian-security bookworm-security main
debian-like-but-not file:/srv/x bookworm main
S
echo 'deb [arch=amd64] file:/srv/third nodistro main' >"$EXECGATE_APT_DIR/sources.list.d/third.list"
echo 'deb file:/srv/ignored bookworm main' >"$EXECGATE_APT_DIR/sources.list.d/off.list.disabled"
deps_have_deb_src && fail "one-line: a deb-src entry was found where there is none"
written=$(deps_derive_deb_src) || fail "one-line: nothing derived"
[ "$written" = "$EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.list" ] ||
    fail "one-line: wrote $written"
expect_file "$EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.list" <<'S'
deb-src file:/srv/mirror/debian bookworm main
deb-src [signed-by=/usr/share/keyrings/k.gpg] file:/srv/mirror/debian-security bookworm-security main
deb-src [arch=amd64] file:/srv/third nodistro main
S
deps_have_deb_src || fail "one-line: the derived entry is not seen as a deb-src entry"

# Both formats at once: one file of each.
apt_dir both
echo 'deb file:/srv/a bookworm main' >"$EXECGATE_APT_DIR/sources.list"
printf 'Types: deb\nURIs: file:/srv/b\nSuites: bookworm\nComponents: main\n' \
    >"$EXECGATE_APT_DIR/sources.list.d/b.sources"
written=$(deps_derive_deb_src | tr '\n' ' ')
[ "$written" = "$EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.sources $EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.list " ] ||
    fail "both: wrote $written"

# Entries that have deb-src already, in each format.
apt_dir has-deb822
printf 'Types: deb deb-src\nURIs: file:/srv/a\nSuites: bookworm\nComponents: main\n' \
    >"$EXECGATE_APT_DIR/sources.list.d/debian.sources"
deps_have_deb_src || fail "has-deb822: Types: deb deb-src not seen"
deps_add_deb_src test || fail "has-deb822: deps_add_deb_src failed where nothing was to add"
[ ! -e "$EXECGATE_APT_DIR/sources.list.d/execgate-deb-src.sources" ] ||
    fail "has-deb822: an entry was added where one existed"
apt_dir has-oneline
echo 'deb-src file:/srv/a bookworm main' >"$EXECGATE_APT_DIR/sources.list"
deps_have_deb_src || fail "has-oneline: deb-src line not seen"

# Nothing to derive from: only disabled or commented entries.  No file,
# and (as root) a message naming what to add; never a mirror of our own.
apt_dir none
echo '# deb file:/srv/a bookworm main' >"$EXECGATE_APT_DIR/sources.list"
printf 'Types: deb\nURIs: file:/srv/a\nSuites: bookworm\nComponents: main\nEnabled: no\n' \
    >"$EXECGATE_APT_DIR/sources.list.d/debian.sources"
deps_derive_deb_src >/dev/null && fail "none: derived an entry from nothing"
if deps_add_deb_src test 2>"$scratch/none.err"; then
    fail "none: deps_add_deb_src succeeded"
fi
if [ "$(id -u)" -eq 0 ]; then
    grep -q 'Types: deb-src' "$scratch/none.err" ||
        fail "none: the message does not say what to add: $(cat "$scratch/none.err")"
else
    grep -q 'As root' "$scratch/none.err" ||
        fail "none: the message does not say what to do: $(cat "$scratch/none.err")"
fi
grep -qi 'http' "$scratch/none.err" && fail "none: the message names an address: $(cat "$scratch/none.err")"
ls "$EXECGATE_APT_DIR"/sources.list.d/execgate-deb-src.* >/dev/null 2>&1 &&
    fail "none: a file was written"

if [ "$failures" -gt 0 ]; then
    exit 1
fi
echo "ok: deb-src entries derived from the binary entries only"
