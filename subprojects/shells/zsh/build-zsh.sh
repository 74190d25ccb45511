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
shell_lib="$(dirname "$0")/../../scripts/patched-shell.sh"
. "$(dirname "$0")/../../scripts/debian-source.sh"
. "$(dirname "$0")/../../scripts/depfile.sh"
# shellcheck source=../../scripts/patched-shell.sh
. "$shell_lib"
[ $# -ge 7 ] || { echo "usage: $me OUTPUT DEPFILE PATCH TERMCAP CACHE_DIR musl|glibc CLIENT_SOURCE..." >&2; exit 2; }

target=$1
output=$(ps_abspath "$1")
depfile=$2
patch=$(ps_abspath "$3")
termcap=$(ps_abspath "$4")
cache=$5
libc=$6
shift 6
ps_client_setup "$1"
ps_source zsh "$cache"

case $libc in
musl) client_cc=musl-gcc ;;
glibc) client_cc="${CC:-cc} -fPIE" ;;
*) ps_die "LIBC must be musl or glibc, not \"$libc\"" ;;
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

client_key=$(ps_client_key "$target" "$depfile" "$output" "$client_cc" "$client_cflags" \
	"$src_root" "$@")

# Two levels, as for the Bash: zsh's own objects per source, patch,
# scripts, termcap and libc (tree-KEY), linked with the client into
# built-KEY2/zsh.  The "zsh-" prefix keeps them apart from the Bash's.
tree_key=$({ cat "$dsc" "$patch" "$0" "$shell_lib" "$esc_env" "$termcap"; echo "$libc"; } |
	sha256sum | cut -c1-16)
key=$(echo "$tree_key $client_key" | sha256sum | cut -c1-16)
built="$cache/zsh-built-$key/zsh"
tree="$cache/zsh-tree-$tree_key"
[ -x "$built" ] || ps_lock "$tree"
if [ ! -x "$built" ]; then
	log="$tree.log"
	if [ ! -f "$tree/.configured" ]; then
		echo "$me: building patched zsh ($libc) from $(basename "$dsc") (log: $log)" >&2
		ps_unpack "$dsc" "$tree" "$patch" "$log"
		cp "$esc_env" "$tree/Src/execgate_esc_env.h"
		mkdir -p "$tree/execgate-termcap"
		# shellcheck disable=SC2086 # client_cc and client_cflags are lists
		$client_cc $client_cflags -c "$termcap" -o "$tree/execgate-termcap/termcap.o" \
			>>"$log" 2>&1 || ps_die "compiling $termcap failed (see $log)"
		ar rcs "$tree/execgate-termcap/libexecgatetermcap.a" \
			"$tree/execgate-termcap/termcap.o" || ps_die "ar failed"
		(cd "$tree" && configure_zsh >>"$log" 2>&1) ||
			ps_die "configure failed (see $log)"
		touch "$tree/.configured"
	else
		echo "$me: relinking patched zsh ($libc) with the changed client (log: $log)" >&2
	fi
	client="$tree/execgate-client"
	ps_client_archive "$client" "$client_cc" "$client_cflags" "$src_root" "$log" "$@"
	# The client goes before the libraries configure found (static
	# archives are searched in order), at make's command line so that
	# a changed client relinks without configuring again.
	libs=$(sed -n 's/^LIBS[[:space:]][[:space:]]*=[[:space:]]*//p' "$tree/Config/defs.mk")
	jobs=$(nproc 2>/dev/null || echo 2)
	rm -f "$tree/Src/zsh"
	(cd "$tree/Src" && make -j"$jobs" LIBS="$client/libexecgate-client.a $libs" >>"$log" 2>&1) ||
		ps_die "make failed (see $log)"
	ps_put "$tree/Src/zsh" "$built"
fi

ps_put "$built" "$output"
