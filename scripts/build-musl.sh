#!/bin/sh
# Build one static program with musl-gcc: the sandbox helper, whose start-up
# is paid on every sandboxed spawn (glibc's own start-up is most of that
# under a hypervisor; docs/sandbox.md has the figures), and the wrapper.
#
#   build-musl.sh OUTPUT DEPFILE CACHE_DIR MUSL_GCC [--jansson] -- CFLAGS... -- SOURCES...
#
# Each source is compiled on its own (objects in OUTPUT.o/), then linked.
# DEPFILE is written for ninja: OUTPUT depends on the sources and on every
# header they include (meson's custom_target depfile).
#
# --jansson links a jansson built for musl from Debian's jansson source
# package (fetched with apt-get source into CACHE_DIR, like Bash's, and
# built once per source version and script).  musl's headers carry no
# kernel headers; the system's linux/, asm/ and asm-generic/ are offered
# through a directory of links next to OUTPUT.
set -eu

me=build-musl
. "$(dirname "$0")/../scripts/debian-source.sh"
. "$(dirname "$0")/../scripts/depfile.sh"
die() {
	echo "$me: $*" >&2
	exit 1
}
[ $# -ge 6 ] || die "usage: $me OUTPUT DEPFILE CACHE_DIR MUSL_GCC [--jansson] -- CFLAGS... -- SOURCES..."

abspath() {
	printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")"
}
target=$1
output=$(abspath "$1")
depfile=$2
cache=$3
cc=$4
shift 4
with_jansson=
if [ "$1" = --jansson ]; then
	with_jansson=1
	shift
fi
[ "$1" = -- ] || die "expected -- before the compiler flags"
shift
cflags=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	cflags="$cflags $1"
	shift
done
[ $# -gt 0 ] || die "expected -- before the sources"
shift
[ $# -gt 0 ] || die "no sources"

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# The kernel's headers, and nothing else of glibc's include directory.
kinc="$output.kernel-headers"
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
rm -rf "$kinc"
mkdir -p "$kinc"
ln -s /usr/include/linux "$kinc/linux"
ln -s /usr/include/asm-generic "$kinc/asm-generic"
ln -s "/usr/include/$multiarch/asm" "$kinc/asm"

# jansson's configure would generate these two headers; the values are
# what musl on Linux has (atomic builtins: any gcc we accept).
write_jansson_config() {
	sed -e 's/@json_inline@/inline/' \
		-e 's/@json_have_long_long@/1/' \
		-e 's/@json_have_localeconv@/1/' \
		-e 's/@json_have_atomic_builtins@/1/' \
		-e 's/@json_have_sync_builtins@/1/' \
		"$1/src/jansson_config.h.in" >"$2/jansson_config.h"
	if grep -v "^ \*" "$2/jansson_config.h" | grep -q "@[a-z_]*@"; then
		die "jansson_config.h.in has a setting this script does not know"
	fi
	cat >"$2/jansson_private_config.h" <<-'EOF'
		#define HAVE_STDINT_H 1
		#define HAVE_UNISTD_H 1
		#define HAVE_FCNTL_H 1
		#define HAVE_SCHED_H 1
		#define HAVE_SYS_TIME_H 1
		#define HAVE_SYS_TYPES_H 1
		#define HAVE_GETTIMEOFDAY 1
		#define HAVE_SCHED_YIELD 1
		#define USE_URANDOM 1
		#define INITIAL_HASHTABLE_ORDER 3
	EOF
}

# Prints the directory holding include/ and libjansson.a.
jansson_for_musl() {
	dsc=$(debian_source_dsc jansson "$cache") ||
		die "apt-get source jansson failed (see $cache/apt-source-jansson.log); run scripts/setup, which adds a deb-src entry"
	key=$({ cat "$dsc" "$0"; echo "$cc"; } | sha256sum | cut -c1-16)
	dir="$cache/jansson-musl-$key"
	if [ ! -f "$dir/libjansson.a" ]; then
		work="$cache/work-jansson-$key"
		rm -rf "$work"
		mkdir -p "$work/obj" "$work/include"
		log="$work/build.log"
		echo "$me: building jansson for musl from $(basename "$dsc") (log: $log)" >&2
		dpkg-source --no-check -x "$dsc" "$work/src" >"$log" 2>&1 ||
			die "dpkg-source could not unpack $dsc (see $log)"
		write_jansson_config "$work/src" "$work/include"
		for c in "$work"/src/src/*.c; do
			"$cc" -O2 -fno-strict-aliasing -DHAVE_CONFIG_H -I"$work/include" \
				-c "$c" -o "$work/obj/$(basename "$c" .c).o" >>"$log" 2>&1 ||
				die "compiling $(basename "$c") failed (see $log)"
		done
		ar rcs "$work/libjansson.a" "$work"/obj/*.o >>"$log" 2>&1 || die "ar failed (see $log)"
		cp "$work/src/src/jansson.h" "$work/include/"
		mkdir -p "$dir.tmp/include"
		cp "$work/libjansson.a" "$dir.tmp/"
		cp "$work/include/jansson.h" "$work/include/jansson_config.h" "$dir.tmp/include/"
		rm -rf "$dir"
		mv "$dir.tmp" "$dir"
		rm -rf "$work"
	fi
	printf '%s\n' "$dir"
}

libs=
if [ -n "$with_jansson" ]; then
	jdir=$(jansson_for_musl)
	cflags="$cflags -I$jdir/include"
	libs="$jdir/libjansson.a"
fi

objs="$output.o"
rm -rf "$objs"
mkdir -p "$objs"
i=0
for src in "$@"; do
	i=$((i + 1))
	obj="$objs/$i-$(basename "$src" .c).o"
	# shellcheck disable=SC2086 # cflags is a list of words
	"$cc" $cflags -isystem "$kinc" -MD -MF "$obj.d" -MT "$target" -c "$src" -o "$obj" ||
		die "musl-gcc could not compile $src for $(basename "$output")"
done
# A build ID, as Debian's gcc gives every program (musl-gcc's link does
# not): debhelper keeps the debug information apart by it.
# shellcheck disable=SC2086 # libs is a list of words
"$cc" "$objs"/*.o $libs -static -Wl,--build-id -o "$output.tmp" ||
	die "musl-gcc could not link $(basename "$output")"
depfile_merge "$target" "$depfile" "$objs"/*.o.d || die "cannot write $depfile"
mv "$output.tmp" "$output"
