#!/bin/sh
# Build zsh from Debian's zsh source package with execgate's exec-wrapper
# patch, and copy the binary to OUTPUT.
#
#   build-zsh.sh OUTPUT DEPFILE PATCH TERMCAP CACHE_DIR LIBC CLIENT_SOURCE...
#
# Like subprojects/bash/build-bash.sh, whose layout it follows: LIBC is
# "musl" (musl-gcc, linked static) or "glibc" (the system compiler, linked
# static-pie); the CLIENT_SOURCEs are execgate's wrapper client, which the
# patch calls (esc_client_decide), compiled here and part of the cache key;
# the folder's esc_env.h is copied into zsh's tree for the patch to read.
# TERMCAP is termcap-none.c, the termcap library zsh is linked with: zsh's
# configure insists on one, Debian has no musl ncurses, and a shell the
# tool runs never has a terminal (docs/building.md).
#
# zsh is configured with Debian's own file layout (/etc/zsh, the function
# directories under /usr/share/zsh), so it reads the same start-up files and
# autoloads the same functions as Debian's zsh where that is installed, and
# with the modules it can carry linked in (it loads none at run time).
#
# CACHE_DIR holds the downloaded source package, zsh's compiled tree and
# finished binaries, keyed by the source version, the patch, this script,
# TERMCAP and the client's sources, so several build directories of one
# checkout compile zsh once.
set -eu

me=build-zsh
. "$(dirname "$0")/../../scripts/debian-source.sh"
. "$(dirname "$0")/../../scripts/depfile.sh"
[ $# -ge 7 ] || { echo "usage: $me OUTPUT DEPFILE PATCH TERMCAP CACHE_DIR musl|glibc CLIENT_SOURCE..." >&2; exit 2; }

# Absolute paths: the build below changes directory.
abspath() {
	printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")"
}
target=$1
output=$(abspath "$1")
depfile=$2
patch=$(abspath "$3")
termcap=$(abspath "$4")
cache=$5
libc=$6
shift 6
client_dir=$(cd "$(dirname "$1")" && pwd)
# The project's top: includes are rooted there ("wrapper/esc_io.h").
src_root=$(dirname "$client_dir")
esc_env="$client_dir/esc_env.h"
client_cflags="-std=c17 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Werror"

die() {
	echo "$me: $*" >&2
	exit 1
}

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

[ -f "$esc_env" ] || die "$esc_env is missing: the patch takes the variables' names from it"

dsc=$(debian_source_dsc zsh "$cache") ||
	die "apt-get source zsh failed (see $cache/apt-source-zsh.log); run scripts/setup, which adds a deb-src entry"

case $libc in
musl) client_cc=musl-gcc ;;
glibc) client_cc="${CC:-cc} -fPIE" ;;
*) die "LIBC must be musl or glibc, not \"$libc\"" ;;
esac

# The modules Debian's zsh loads at run time that need nothing but the C
# library, linked in: a static zsh cannot load any (zmodload finds these).
static_modules='files|mapfile|mathfunc|nearcolor|param/private|regex|stat|system|net/socket|net/tcp|watch|zprof|zpty|zselect|deltochar|clone|newuser|zftp'

# configure_zsh: zsh's configure, in its tree, for $libc, then the module
# list.  Static for the same reason as the Bash: every call starts one.
# The job table, maildir and directory options are Debian's (its
# debian/rules); gdbm, pcre and capabilities, which need libraries of their
# own, are left out.
configure_zsh() {
	set -- --disable-dynamic --disable-gdbm --disable-pcre --disable-cap \
		--with-tcsetpgrp --with-term-lib=execgatetermcap \
		--enable-maildir-support --enable-max-jobtable-size=256 \
		--enable-etcdir=/etc/zsh --enable-function-subdirs \
		--enable-site-fndir=/usr/local/share/zsh/site-functions \
		--enable-fndir=/usr/share/zsh/functions \
		--enable-runhelpdir=/usr/share/zsh/help \
		--enable-additional-fpath=/usr/share/zsh/vendor-functions,/usr/share/zsh/vendor-completions
	case $libc in
	musl)
		./configure "$@" CC=musl-gcc "LDFLAGS=-static -Wl,--build-id -L$PWD/execgate-termcap" ;;
	glibc)
		# Static glibc cannot load the name service modules: zsh then
		# reads /etc/passwd and /etc/group itself (~user).
		./configure "$@" --disable-dynamic-nss "CC=${CC:-cc} -fPIE" \
			"LDFLAGS=-static-pie -L$PWD/execgate-termcap" ;;
	esac || return 1
	# After configure, which writes the list: auto=no keeps the change.
	sed -i -E "\\#^name=zsh/($static_modules) #{s/link=no/link=static/;s/auto=yes/auto=no/}" \
		config.modules
}

# The client's dependencies, for ninja, and what the compiler sees of it.
deps="$output.deps"
rm -rf "$deps"
mkdir -p "$deps"
i=0
for f in "$@"; do
	i=$((i + 1))
	# shellcheck disable=SC2086 # client_cc and client_cflags are lists
	$client_cc $client_cflags -I"$src_root" -E -P -MD -MF "$deps/$i.d" -MT "$target" \
		"$f" >"$deps/$i.i" || die "cannot preprocess $f"
done
depfile_merge "$target" "$depfile" "$deps"/*.d || die "cannot write $depfile"

# Two levels, as for the Bash: zsh's own objects per source, patch,
# script, termcap and libc (tree-KEY), linked with the client into
# built-KEY2/zsh.  The "zsh-" prefix keeps them apart from the Bash's.
tree_key=$({ cat "$dsc" "$patch" "$0" "$esc_env" "$termcap"; echo "$libc"; } | sha256sum | cut -c1-16)
key=$({ echo "$tree_key"; cat "$deps"/*.i; } | sha256sum | cut -c1-16)
rm -rf "$deps"
built="$cache/zsh-built-$key/zsh"
if [ ! -x "$built" ]; then
	tree="$cache/zsh-tree-$tree_key"
	# Build directories of one checkout share the tree: one at a time.
	exec 9>"$tree.lock"
	flock 9
fi
if [ ! -x "$built" ]; then
	log="$tree.log"
	if [ ! -f "$tree/.configured" ]; then
		rm -rf "$tree"
		echo "$me: building patched zsh ($libc) from $(basename "$dsc") (log: $log)" >&2
		dpkg-source --no-check -x "$dsc" "$tree" >"$log" 2>&1 ||
			die "dpkg-source could not unpack $dsc (see $log)"
		(cd "$tree" && patch -p1 --forward <"$patch") >>"$log" 2>&1 ||
			die "the exec-wrapper patch does not apply to $(basename "$dsc") (see $log)"
		cp "$esc_env" "$tree/Src/execgate_esc_env.h"
		mkdir -p "$tree/execgate-termcap"
		# shellcheck disable=SC2086 # client_cc and client_cflags are lists
		$client_cc $client_cflags -c "$termcap" -o "$tree/execgate-termcap/termcap.o" \
			>>"$log" 2>&1 || die "compiling $termcap failed (see $log)"
		ar rcs "$tree/execgate-termcap/libexecgatetermcap.a" \
			"$tree/execgate-termcap/termcap.o" || die "ar failed"
		(cd "$tree" && configure_zsh >>"$log" 2>&1) ||
			die "configure failed (see $log)"
		touch "$tree/.configured"
	else
		echo "$me: relinking patched zsh ($libc) with the changed client (log: $log)" >&2
	fi
	client="$tree/execgate-client"
	rm -rf "$client"
	mkdir -p "$client"
	for f in "$@"; do
		case $f in
		*.c)
			o=$(basename "$f" .c).o
			# shellcheck disable=SC2086 # client_cc and client_cflags are lists
			$client_cc $client_cflags -I"$src_root" -c "$f" -o "$client/$o" >>"$log" 2>&1 ||
				die "compiling $f for zsh failed (see $log)" ;;
		esac
	done
	ar rcs "$client/libexecgate-client.a" "$client"/*.o ||
		die "ar failed"
	# The client goes before the libraries configure found (static
	# archives are searched in order), at make's command line so that
	# a changed client relinks without configuring again.
	libs=$(sed -n 's/^LIBS[[:space:]][[:space:]]*=[[:space:]]*//p' "$tree/Config/defs.mk")
	jobs=$(nproc 2>/dev/null || echo 2)
	rm -f "$tree/Src/zsh"
	(cd "$tree/Src" && make -j"$jobs" LIBS="$client/libexecgate-client.a $libs" >>"$log" 2>&1) ||
		die "make failed (see $log)"
	mkdir -p "$cache/zsh-built-$key"
	cp "$tree/Src/zsh" "$built.tmp"
	mv "$built.tmp" "$built"
fi

cp "$built" "$output.tmp"
mv "$output.tmp" "$output"
