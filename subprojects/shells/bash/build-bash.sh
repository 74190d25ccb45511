#!/bin/sh
# Build Bash from Debian's bash source package with execgate's exec-wrapper
# patch, and copy the binary to OUTPUT.
#
#   build-bash.sh OUTPUT DEPFILE PATCH CACHE_DIR LIBC CLIENT_SOURCE...
#
# LIBC is "musl" (compiled with musl-gcc, linked static) or "glibc" (the
# system compiler, linked static-pie); docs/building.md says why and what
# differs.
#
# The CLIENT_SOURCEs are execgate's wrapper client, which the patched Bash
# links (the patch calls esc_client_decide): .c files of one folder
# (wrapper/), whose parent is the include path; with musl, also
# musl-sbrk.c, the heap of Bash's own allocator, and musl-string.c, faster
# string functions.  They are compiled, and what
# the compiler sees of them, headers included, is part of the cache key.
# DEPFILE is written on every run, for ninja: OUTPUT depends on the sources
# and every header they include (meson's custom_target depfile).
# That folder's esc_env.h, the protocol's variable names, is also read by
# the patch: it is copied into Bash's tree and keys the tree.
#
# CACHE_DIR holds the downloaded source package, Bash's compiled tree and
# finished binaries, keyed by the source version, the patch, this script and
# the client's sources, so that several build directories of one checkout
# compile Bash once.  The source comes from the
# distribution's package manager (apt-get source); scripts/setup normally
# fetches it ahead of the build.
set -eu

me=build-bash
shell_lib="$(dirname "$0")/../../scripts/patched-shell.sh"
. "$(dirname "$0")/../../scripts/debian-source.sh"
. "$(dirname "$0")/../../scripts/depfile.sh"
# shellcheck source=../../scripts/patched-shell.sh
. "$shell_lib"
[ $# -ge 6 ] || { echo "usage: $me OUTPUT DEPFILE PATCH CACHE_DIR musl|glibc CLIENT_SOURCE..." >&2; exit 2; }

target=$1
output=$(ps_abspath "$1")
depfile=$2
patch=$(ps_abspath "$3")
cache=$4
libc=$5
shift 5
ps_client_setup "$1"
ps_source bash "$cache"

case $libc in
# musl-string.c replaces musl's string functions only when asked.
musl) client_cc=musl-gcc client_cflags="$client_cflags -DEXECGATE_REPLACE_LIBC" ;;
glibc) client_cc="${CC:-cc} -fPIE" ;;
*) ps_die "LIBC must be musl or glibc, not \"$libc\"" ;;
esac

# configure_bash: Bash's configure, in its tree, for $libc.  Linked
# statically: every call starts a Bash, and its start-up is on the path of
# every call (docs/building.md has the figures).  musl-gcc's link adds no
# build ID of its own, as Debian's gcc does: asked for, so that debhelper
# can keep the debug information apart (docs/packaging.md).
configure_bash() {
	case $libc in
	musl)
		# Bash's own allocator, not musl's: shell code allocates and
		# frees strings of every size all the time, and musl's allocator
		# maps and unmaps pages for each medium-sized one (2.1 times
		# slower on a string-building loop; docs/building.md).  It
		# takes its memory from musl-sbrk.c, one of the CLIENT_SOURCEs.
		# Scrambling freed memory is a debugging aid: off.  Bash 5.2's
		# configure adds its own strtoimax when it finds a usable one
		# (the test is inverted); musl's libc.a then defines it twice.
		./configure --with-bash-malloc --disable-mem-scramble --disable-nls CC=musl-gcc \
			"LDFLAGS=-static -Wl,--build-id" bash_cv_func_strtoimax=no ;;
	glibc)
		./configure --without-bash-malloc --disable-nls LDFLAGS=-static-pie ;;
	esac
}

client_key=$(ps_client_key "$target" "$depfile" "$output" "$client_cc" "$client_cflags" \
	"$src_root" "$@")

# Two levels: Bash's own objects are kept per source, patch, scripts and
# libc (tree-KEY), and linked with execgate's client (the wrapper's asking
# side, the CLIENT_SOURCEs) into built-KEY2/bash, so a change to the client
# relinks Bash instead of compiling it again.
tree_key=$({ cat "$dsc" "$patch" "$0" "$shell_lib" "$esc_env"; echo "$libc"; } | sha256sum | cut -c1-16)
key=$(echo "$tree_key $client_key" | sha256sum | cut -c1-16)
built="$cache/built-$key/bash"
tree="$cache/tree-$tree_key"
[ -x "$built" ] || ps_lock "$tree"
if [ ! -x "$built" ]; then
	log="$tree.log"
	if [ ! -f "$tree/.configured" ]; then
		echo "$me: building patched Bash ($libc) from $(basename "$dsc") (log: $log)" >&2
		ps_unpack "$dsc" "$tree" "$patch" "$log"
		cp "$esc_env" "$tree/execgate_esc_env.h"
		(cd "$tree" && configure_bash >>"$log" 2>&1) ||
			ps_die "configure failed (see $log)"
		touch "$tree/.configured"
	else
		echo "$me: relinking patched Bash ($libc) with the changed client (log: $log)" >&2
	fi
	client="$tree/execgate-client"
	ps_client_archive "$client" "$client_cc" "$client_cflags" "$src_root" "$log" "$@"
	jobs=$(nproc 2>/dev/null || echo 2)
	rm -f "$tree/bash"
	(cd "$tree" && make -j"$jobs" bash LOCAL_LIBS="$client/libexecgate-client.a" >>"$log" 2>&1) ||
		ps_die "make failed (see $log)"
	ps_put "$tree/bash" "$built"
fi

ps_put "$built" "$output"
