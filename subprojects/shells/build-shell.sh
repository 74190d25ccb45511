#!/bin/sh
# Builds a patched shell (bash or zsh) from its Debian source package with
# execgate's exec-wrapper patch, and copies the binary to OUTPUT.
#
#   build-shell.sh SHELL OUTPUT DEPFILE PATCH CACHE_DIR LIBC [TREE_INPUT...] -- CLIENT_SOURCE...
#
# One script for both shells: the steps are the same, and what differs
# (configure's options, where the binary is made, what else the shell's
# own tree is built with) is in the functions named after the shell below.
#
# LIBC is "musl" (compiled with musl-gcc, linked static) or "glibc" (the
# system compiler, linked static-pie); docs/building.md says why and what
# differs.  The TREE_INPUTs are files the shell's own tree is built with
# (zsh: termcap-none.c); they key the tree.
#
# The CLIENT_SOURCEs are execgate's wrapper client, which the patched shell
# links (the patch calls esc_client_decide): .c files of one folder
# (proto/), whose parent is the include path; for the musl Bash also
# musl-sbrk.c, the heap of Bash's own allocator, and musl-string.c, faster
# string functions.  They are compiled, and what the compiler sees of them,
# headers included, is part of the cache key.  DEPFILE is written on every
# run, for ninja: OUTPUT depends on the sources and every header they
# include (meson's custom_target depfile).  That folder's esc_env.h, the
# protocol's variable names, is also read by the patch: it is copied into
# the shell's tree and keys the tree.
#
# CACHE_DIR holds the downloaded source package, the shell's compiled tree
# and finished binaries, keyed by the source version, the patch, this
# script, the TREE_INPUTs and the client's sources, so that several build
# directories of one checkout compile each shell once.  The source comes
# from the distribution's package manager (apt-get source); scripts/setup
# normally fetches it ahead of the build.
#
# The ps_ functions are the steps both shells share; each one's variables
# start with ps_.
set -eu

me=build-shell
# shellcheck source=scripts/debian-source.sh
. "$(dirname "$0")/../../scripts/debian-source.sh"
# shellcheck source=scripts/depfile.sh
. "$(dirname "$0")/../../scripts/depfile.sh"

ps_die() {
	# shellcheck disable=SC2154 # me is the caller's
	echo "$me: $*" >&2
	exit 1
}

# ps_client_setup CLIENT_SOURCE: sets client_dir (the client's folder,
# absolute), src_root (its parent, the project's top: includes are rooted
# there, "wrapper/esc_io.h"), esc_env (the protocol's variable names, which
# the patch reads; it must exist) and client_cflags.
ps_client_setup() {
	client_dir=$(cd "$(dirname "$1")" && pwd)
	# shellcheck disable=SC2034 # for the caller
	src_root=$(dirname "$client_dir")
	esc_env="$client_dir/esc_env.h"
	# shellcheck disable=SC2034 # for the caller
	client_cflags="-std=c17 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Werror"
	[ -f "$esc_env" ] || ps_die "$esc_env is missing: the patch takes the variables' names from it"
}

# ps_source PACKAGE CACHE_DIR: makes CACHE_DIR and sets cache (it,
# absolute) and dsc (PACKAGE's newest source package there, fetched when
# there is none).
ps_source() {
	mkdir -p "$2"
	cache=$(cd "$2" && pwd)
	# shellcheck disable=SC2034 # for the caller
	dsc=$(debian_source_dsc "$1" "$cache") ||
		ps_die "apt-get source $1 failed (see $cache/apt-source-$1.log); run scripts/setup, which adds a deb-src entry"
}

# ps_abspath PATH: PATH made absolute (its folder must exist); the builds
# change directory.
ps_abspath() {
	printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")"
}

# ps_client_key TARGET DEPFILE OUTPUT CC CFLAGS SRC_ROOT SOURCE...: writes
# DEPFILE, naming every header the client's SOURCEs include (for ninja;
# TARGET is the custom target's output as meson passed it), and prints a
# key of what the compiler sees of them (preprocessed without line
# markers, so the same sources in another checkout give the same key).
# OUTPUT.deps is a scratch folder.
ps_client_key() {
	ps_target=$1 ps_depfile=$2 ps_deps="$3.deps" ps_cc=$4 ps_cflags=$5 ps_root=$6
	shift 6
	rm -rf "$ps_deps"
	mkdir -p "$ps_deps"
	ps_i=0
	for ps_f in "$@"; do
		ps_i=$((ps_i + 1))
		# shellcheck disable=SC2086 # ps_cc and ps_cflags are lists
		$ps_cc $ps_cflags -I"$ps_root" -E -P -MD -MF "$ps_deps/$ps_i.d" -MT "$ps_target" \
			"$ps_f" >"$ps_deps/$ps_i.i" || ps_die "cannot preprocess $ps_f"
	done
	depfile_merge "$ps_target" "$ps_depfile" "$ps_deps"/*.d || ps_die "cannot write $ps_depfile"
	cat "$ps_deps"/*.i | sha256sum | cut -c1-16
	rm -rf "$ps_deps"
}

# ps_lock TREE: holds TREE.lock (fd 9) until the script ends: build
# directories of one checkout share the tree, one build at a time.
ps_lock() {
	exec 9>"$1.lock"
	flock 9
}

# ps_unpack DSC TREE PATCH LOG: TREE is DSC's source, unpacked afresh, with
# PATCH applied.
ps_unpack() {
	rm -rf "$2"
	dpkg-source --no-check -x "$1" "$2" >"$4" 2>&1 ||
		ps_die "dpkg-source could not unpack $1 (see $4)"
	(cd "$2" && patch -p1 --forward <"$3") >>"$4" 2>&1 ||
		ps_die "the exec-wrapper patch does not apply to $(basename "$1") (see $4)"
}

# ps_client_archive DIR CC CFLAGS SRC_ROOT LOG SOURCE...: DIR (made afresh)
# holds libexecgate-client.a, the client's .c SOURCEs compiled.
ps_client_archive() {
	ps_dir=$1 ps_cc=$2 ps_cflags=$3 ps_root=$4 ps_log=$5
	shift 5
	rm -rf "$ps_dir"
	mkdir -p "$ps_dir"
	for ps_f in "$@"; do
		case $ps_f in
		*.c)
			# shellcheck disable=SC2086 # ps_cc and ps_cflags are lists
			$ps_cc $ps_cflags -I"$ps_root" -c "$ps_f" -o "$ps_dir/$(basename "$ps_f" .c).o" \
				>>"$ps_log" 2>&1 || ps_die "compiling $ps_f failed (see $ps_log)" ;;
		esac
	done
	ar rcs "$ps_dir/libexecgate-client.a" "$ps_dir"/*.o || ps_die "ar failed"
}

# ps_put FROM TO: copies FROM to TO by a rename, so that no reader (a
# parallel build, ninja) sees half a file.
ps_put() {
	mkdir -p "$(dirname "$2")"
	cp "$1" "$2.tmp"
	mv "$2.tmp" "$2"
}

# ---- what differs between the shells ----
#
# For each shell: SHELL_cflags (prints the client's flags for $libc beyond
# client_cflags), SHELL_prepare (in the freshly unpacked tree: what
# configure needs), SHELL_configure (configure, in the tree), and
# SHELL_make (make, in the tree, linking the client archive $1).  Each
# returns non-zero on failure (set -e does not reach into a function
# called in a && list); their output goes to the tree's log.

# musl-string.c replaces musl's string functions only when asked.
bash_cflags() {
	if [ "$libc" = musl ]; then echo "-DEXECGATE_REPLACE_LIBC"; fi
}

bash_prepare() {
	cp "$esc_env" execgate_esc_env.h
}

# Linked statically: every call starts a Bash, and its start-up is on the
# path of every call (docs/building.md has the figures).  musl-gcc's link
# adds no build ID of its own, as Debian's gcc does: asked for, so that
# debhelper can keep the debug information apart (docs/packaging.md).
bash_configure() {
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

bash_make() {
	make -j"$(nproc 2>/dev/null || echo 2)" bash LOCAL_LIBS="$1"
}

zsh_cflags() {
	:
}

# termcap-none.c (the TREE_INPUT) is the termcap library zsh is linked
# with: zsh's configure insists on one, Debian has no musl ncurses, and a
# shell the tool runs never has a terminal (docs/building.md).
# shellcheck disable=SC2086 # client_cc and client_cflags are lists
zsh_prepare() {
	cp "$esc_env" Src/execgate_esc_env.h && mkdir -p execgate-termcap &&
		$client_cc $client_cflags -c "$tree_inputs" -o execgate-termcap/termcap.o &&
		ar rcs execgate-termcap/libexecgatetermcap.a execgate-termcap/termcap.o
}

# The modules Debian's zsh loads at run time that need nothing but the C
# library, linked in: a static zsh cannot load any (zmodload finds these).
zsh_static_modules='files|mapfile|mathfunc|nearcolor|param/private|regex|stat|system|net/socket|net/tcp|watch|zprof|zpty|zselect|deltochar|clone|newuser|zftp'

# zsh is configured with Debian's own file layout (/etc/zsh, the function
# directories under /usr/share/zsh), so it reads the same start-up files
# and autoloads the same functions as Debian's zsh where that is
# installed, and with the modules it can carry linked in.  Static for the
# Bash's reason.  The job table, maildir and directory options are
# Debian's (its debian/rules); gdbm, pcre and capabilities, which need
# libraries of their own, are left out.
zsh_configure() {
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
	sed -i -E "\\#^name=zsh/($zsh_static_modules) #{s/link=no/link=static/;s/auto=yes/auto=no/}" \
		config.modules
}

# The client goes before the libraries configure found (static archives
# are searched in order), at make's command line so that a changed client
# relinks without configuring again.
zsh_make() {
	zsh_libs=$(sed -n 's/^LIBS[[:space:]][[:space:]]*=[[:space:]]*//p' Config/defs.mk) &&
		(cd Src && make -j"$(nproc 2>/dev/null || echo 2)" LIBS="$1 $zsh_libs")
}

# ---- the build ----

[ $# -ge 8 ] || {
	echo "usage: $me bash|zsh OUTPUT DEPFILE PATCH CACHE_DIR musl|glibc [TREE_INPUT...] -- CLIENT_SOURCE..." >&2
	exit 2
}
shell=$1
case $shell in
bash) binary=bash ;; # where make leaves it, in the tree
zsh) binary=Src/zsh ;;
*) ps_die "SHELL must be bash or zsh, not \"$shell\"" ;;
esac
me="build-shell ($shell)"
target=$2
output=$(ps_abspath "$2")
depfile=$3
patch=$(ps_abspath "$4")
cache=$5
libc=$6
shift 6
tree_inputs=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	tree_inputs="$tree_inputs${tree_inputs:+ }$(ps_abspath "$1")"
	shift
done
[ $# -ge 2 ] || ps_die "no CLIENT_SOURCE after --"
shift
ps_client_setup "$1"
ps_source "$shell" "$cache"

case $libc in
musl) client_cc=musl-gcc ;;
glibc) client_cc="${CC:-cc} -fPIE" ;;
*) ps_die "LIBC must be musl or glibc, not \"$libc\"" ;;
esac
client_cflags="$client_cflags $("${shell}_cflags")"

client_key=$(ps_client_key "$target" "$depfile" "$output" "$client_cc" "$client_cflags" \
	"$src_root" "$@")

# Two levels: the shell's own objects are kept per source, patch, this
# script, tree inputs and libc (SHELL-tree-KEY), and linked with execgate's
# client (the CLIENT_SOURCEs) into SHELL-built-KEY2/SHELL, so a change to
# the client relinks the shell instead of compiling it again.
# shellcheck disable=SC2086 # tree_inputs is a list
tree_key=$({ cat "$dsc" "$patch" "$0" "$esc_env" $tree_inputs; echo "$libc"; } |
	sha256sum | cut -c1-16)
key=$(echo "$tree_key $client_key" | sha256sum | cut -c1-16)
built="$cache/$shell-built-$key/$shell"
tree="$cache/$shell-tree-$tree_key"
[ -x "$built" ] || ps_lock "$tree"
if [ ! -x "$built" ]; then
	log="$tree.log"
	if [ ! -f "$tree/.configured" ]; then
		echo "$me: building the patched $shell ($libc) from $(basename "$dsc") (log: $log)" >&2
		ps_unpack "$dsc" "$tree" "$patch" "$log"
		(cd "$tree" && "${shell}_prepare" >>"$log" 2>&1 && "${shell}_configure" >>"$log" 2>&1) ||
			ps_die "preparing or configuring the tree failed (see $log)"
		touch "$tree/.configured"
	else
		echo "$me: relinking the patched $shell ($libc) with the changed client (log: $log)" >&2
	fi
	client="$tree/execgate-client"
	ps_client_archive "$client" "$client_cc" "$client_cflags" "$src_root" "$log" "$@"
	rm -f "$tree/$binary"
	(cd "$tree" && "${shell}_make" "$client/libexecgate-client.a" >>"$log" 2>&1) ||
		ps_die "make failed (see $log)"
	ps_put "$tree/$binary" "$built"
fi

ps_put "$built" "$output"
