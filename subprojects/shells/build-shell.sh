# Sourced by the scripts that build a patched shell from its Debian source
# package (subprojects/bash/build-bash.sh, subprojects/zsh/build-zsh.sh);
# POSIX sh.  What the two builds share: the wrapper's client compiled into
# the shell and its part of the cache key, the shell's tree unpacked and
# patched once per key, one build of a tree at a time, the finished binary
# put in place.  Each function's variables start with ps_.  The caller sets
# `me` (its name, for messages) before calling any of them, and puts this
# file in its shell's cache key (a change here can change the binary).

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
