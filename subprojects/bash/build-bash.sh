#!/bin/sh
# Build Bash from Debian's bash source package with execgate's exec-wrapper
# patch, and copy the binary to OUTPUT.
#
#   build-bash.sh OUTPUT PATCH CACHE_DIR LIBC
#
# LIBC is "musl" (compiled with musl-gcc, linked static) or "glibc" (the
# system compiler, linked static-pie); docs/building.md says why and what
# differs.
#
# CACHE_DIR holds the downloaded source package and finished binaries, keyed
# by the source version, the patch and this script, so that several build
# directories of one checkout compile Bash once.  The source comes from the
# distribution's package manager (apt-get source); scripts/setup normally
# fetches it ahead of the build.
set -eu

me=build-bash
. "$(dirname "$0")/../../scripts/debian-source.sh"
[ $# -eq 4 ] || { echo "usage: $me OUTPUT PATCH CACHE_DIR musl|glibc" >&2; exit 2; }

# Absolute paths: the build below changes directory.
abspath() {
	printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")"
}
output=$(abspath "$1")
patch=$(abspath "$2")
cache=$3
libc=$4

die() {
	echo "$me: $*" >&2
	exit 1
}

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

dsc=$(debian_source_dsc bash "$cache") ||
	die "apt-get source bash failed (see $cache/apt-source-bash.log); run scripts/setup, which adds a deb-src entry"

case $libc in
musl)
	# Bash 5.2's configure adds its own strtoimax when it finds a usable
	# one (the test is inverted); musl's libc.a then defines it twice.
	configure_env="CC=musl-gcc LDFLAGS=-static bash_cv_func_strtoimax=no" ;;
glibc)
	configure_env="LDFLAGS=-static-pie" ;;
*)
	die "LIBC must be musl or glibc, not \"$libc\"" ;;
esac

key=$({ cat "$dsc" "$patch" "$0"; echo "$libc"; } | sha256sum | cut -c1-16)
built="$cache/built-$key/bash"
if [ ! -x "$built" ]; then
	work="$cache/work-$key"
	rm -rf "$work"
	mkdir -p "$work"
	log="$work/build.log"
	echo "$me: building patched Bash ($libc) from $(basename "$dsc") (log: $log)" >&2
	dpkg-source --no-check -x "$dsc" "$work/src" >"$log" 2>&1 ||
		die "dpkg-source could not unpack $dsc (see $log)"
	(cd "$work/src" && patch -p1 --forward <"$patch") >>"$log" 2>&1 ||
		die "the exec-wrapper patch does not apply to $(basename "$dsc") (see $log)"
	# Linked statically: every call starts a Bash, and its start-up is on
	# the path of every call (docs/building.md has the figures).
	# shellcheck disable=SC2086 # configure_env is a list of assignments
	(cd "$work/src" && ./configure --without-bash-malloc --disable-nls \
		$configure_env >>"$log" 2>&1) ||
		die "configure failed (see $log)"
	jobs=$(nproc 2>/dev/null || echo 2)
	(cd "$work/src" && make -j"$jobs" bash >>"$log" 2>&1) ||
		die "make failed (see $log)"
	mkdir -p "$cache/built-$key"
	cp "$work/src/bash" "$built.tmp"
	mv "$built.tmp" "$built"
	rm -rf "$work"
fi

cp "$built" "$output.tmp"
mv "$output.tmp" "$output"
