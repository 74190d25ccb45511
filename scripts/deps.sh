# shellcheck shell=bash disable=SC2034 # the lists are read where this is sourced
# Sourced by scripts/setup, scripts/test and scripts/package (bash): the
# Debian packages each of them needs, installing the missing ones, apt's
# deb-src entry, and fetching Debian's source packages into the cache.
# Every function writes its messages to stderr, prefixed with the name its
# caller gives (ME), and returns non-zero on failure.

# shellcheck source=scripts/debian-source.sh
. "$(dirname "${BASH_SOURCE[0]}")/debian-source.sh"

# Building: compiler, meson and ninja, the libraries, what Bash's build
# needs (dpkg-source from dpkg-dev, bison, patch) and musl-gcc (the patched
# Bash and the sandbox helper).  libcmocka-dev is added by scripts/setup
# when the tests are built.
deps_build=(
    gcc make patch pkg-config meson ninja-build python3
    libuv1-dev libseccomp-dev libjansson-dev libhttp-parser-dev
    dpkg-dev bison musl-tools
)
# The test suite, beyond building: cmocka, clang and its sanitizer
# runtimes for the fuzz targets, clang-format for the layout check, and the
# tools the tests run (Debian's zsh: the patched one is compared with it).
deps_tests=(
    libcmocka-dev clang libclang-rt-14-dev clang-format
    valgrind procps iproute2 util-linux zsh curl
)
# scripts/package, beyond building: git for the clean copy, the Debian
# package tools, and npm (Debian's, unless an npm is already installed).
deps_package=(git debhelper lintian)
command -v npm >/dev/null 2>&1 || deps_package+=(npm)

# deps_missing PACKAGE...: prints the packages that are not installed, on
# one line.
deps_missing() {
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
            missing+=("$p")
    done
    echo "${missing[*]}"
}

deps_apt_updated=
deps_apt_update() {
    [ -n "$deps_apt_updated" ] && return 0
    apt-get update -qq || return 1
    deps_apt_updated=1
}

# deps_install ME PACKAGE...: installs the missing ones as root; as another
# user, names them and fails.
deps_install() {
    local me=$1 missing
    shift
    missing=$(deps_missing "$@")
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "$me: these Debian packages are missing: $missing
    Install them as root:  apt-get install $missing
    or run scripts/$me as root, which installs them itself." >&2
        return 1
    fi
    echo "$me: installing $missing" >&2
    deps_apt_update || { echo "$me: apt-get update failed" >&2; return 1; }
    # shellcheck disable=SC2086 # one package a word
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
        >/dev/null || { echo "$me: apt-get install failed" >&2; return 1; }
}

# Where apt's sources are: /etc/apt, or EXECGATE_APT_DIR (the tests point
# it at a scratch directory).
deps_apt_dir() {
    printf '%s\n' "${EXECGATE_APT_DIR:-/etc/apt}"
}

# deps_have_deb_src: whether apt has a deb-src entry, in either format.
deps_have_deb_src() {
    local d
    d=$(deps_apt_dir)
    grep -Eqis '^[[:space:]]*(deb-src[[:space:]]|types:.*deb-src)' "$d/sources.list" \
        "$d"/sources.list.d/*.list "$d"/sources.list.d/*.sources
}

# deps_derive_deb_src: writes a deb-src entry for each binary entry apt
# has: sources.list.d/execgate-deb-src.sources for the deb822 stanzas
# (the stanza as it is, with "Types: deb-src"), and
# sources.list.d/execgate-deb-src.list for the one-line entries ("deb" made
# "deb-src").  Prints the files written; returns 1, writing nothing, when
# there is no binary entry.  Stanzas with "Enabled: no" are left out.
deps_derive_deb_src() {
    local d out stanzas lines
    d=$(deps_apt_dir)
    out="$d/sources.list.d/execgate-deb-src"
    stanzas=$(awk '
        function flush() {
            if (n && deb && enabled) {
                if (printed)
                    print ""
                for (i = 1; i <= n; i++)
                    print line[i]
                printed = 1
            }
            n = 0; deb = 0; enabled = 1; in_types = 0
        }
        FNR == 1 { flush() }
        /^#/ { next }
        /^[[:space:]]*$/ { flush(); next }
        # A continuation line: a field value goes on (Types: values are
        # read, not copied).
        /^[[:space:]]/ {
            if (!in_types)
                line[++n] = $0
            else if ((" " $0 " ") ~ /[[:space:]]deb[[:space:]]/)
                deb = 1
            next
        }
        {
            in_types = 0
            field = tolower($0)
            if (field ~ /^types:/) {
                if ((" " substr($0, 7) " ") ~ /[[:space:]]deb[[:space:]]/)
                    deb = 1
                in_types = 1
                line[++n] = "Types: deb-src"
                next
            }
            if (field ~ /^enabled:[[:space:]]*no[[:space:]]*$/)
                enabled = 0
            line[++n] = $0
        }
        END { flush() }
    ' /dev/null "$d"/sources.list.d/*.sources 2>/dev/null)
    lines=$(cat "$d/sources.list" "$d"/sources.list.d/*.list 2>/dev/null |
        sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p')
    [ -n "$stanzas$lines" ] || return 1
    if [ -n "$stanzas" ]; then
        printf '%s\n' "$stanzas" >"$out.sources.tmp" && mv "$out.sources.tmp" "$out.sources" ||
            return 1
        echo "$out.sources"
    fi
    if [ -n "$lines" ]; then
        printf '%s\n' "$lines" >"$out.list.tmp" && mv "$out.list.tmp" "$out.list" || return 1
        echo "$out.list"
    fi
}

# deps_add_deb_src ME: apt-get source needs a deb-src entry, and Debian
# images often ship without one: derives it from apt's binary entries
# (as root), or says what to add.
deps_add_deb_src() {
    local me=$1 d written
    deps_have_deb_src && return 0
    d=$(deps_apt_dir)
    if [ "$(id -u)" -ne 0 ]; then
        echo "$me: apt has no deb-src entry, so Debian's source packages cannot be fetched.
    As root, run scripts/$me once (it adds one next to apt's binary entries), or add a
    deb-src entry yourself." >&2
        return 1
    fi
    if ! written=$(deps_derive_deb_src); then
        echo "$me: apt has no deb-src entry, and no binary entry to derive one from
    (none in $d/sources.list or $d/sources.list.d/*.list, *.sources).
    Add an entry for your distribution's source packages: a file
    $d/sources.list.d/deb-src.sources with the lines
        Types: deb-src
        URIs: (the address of the Debian mirror you use)
        Suites: (your release, e.g. bookworm)
        Components: main
    then run scripts/$me again." >&2
        return 1
    fi
    echo "$me: added deb-src entries next to apt's binary entries: ${written//$'\n'/ }" >&2
    deps_apt_updated=
    deps_apt_update || { echo "$me: apt-get update failed" >&2; return 1; }
}

# deps_fetch_source ME PACKAGE CACHE: Debian's source package PACKAGE into
# CACHE, unless a .dsc of it is there.
deps_fetch_source() {
    local me=$1 pkg=$2 cache=$3
    ls "$cache/${pkg}"_*.dsc >/dev/null 2>&1 && return 0
    deps_add_deb_src "$me" || return 1
    mkdir -p "$cache"
    debian_source_dsc "$pkg" "$cache" >/dev/null || {
        # The lists may predate the deb-src entry.
        deps_apt_updated=
        deps_apt_update && debian_source_dsc "$pkg" "$cache" >/dev/null
    } || {
        echo "$me: apt-get source $pkg failed; see $cache/apt-source-$pkg.log" >&2
        return 1
    }
}
