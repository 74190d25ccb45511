# Sourced by the build scripts that meson runs as custom targets with a
# depfile (scripts/build-musl.sh, subprojects/shells/build-shell.sh); POSIX sh.

# depfile_merge TARGET OUT D...: writes OUT, one make rule naming TARGET
# (the custom target's output, as meson passed it) and every prerequisite
# of the compiler's depfiles D... (written with -MD or -M and -MF), so that
# ninja rebuilds TARGET when a source or any header it includes changes.
# Returns non-zero when a depfile cannot be read; OUT is then left as it
# was.
depfile_merge() {
	dm_target=$1
	dm_out=$2
	shift 2
	for dm_d in "$@"; do
		[ -r "$dm_d" ] || return 1
	done
	{
		printf '%s:' "$dm_target"
		# Each D is "x: a.c b.h \" and continuation lines: drop the rule's
		# own target and the continuations, keep the (escaped) paths.
		for dm_d in "$@"; do
			sed -e '1s/^[^:]*:[[:space:]]*//' -e 's/[[:space:]]*\\$//' "$dm_d"
		done | while IFS= read -r dm_line; do
			[ -z "$dm_line" ] || printf ' \\\n %s' "$dm_line"
		done
		printf '\n'
	} >"$dm_out.tmp" || return 1
	mv "$dm_out.tmp" "$dm_out"
}
