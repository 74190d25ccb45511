#!/bin/sh
# The installed layout works: `meson install` into a scratch DESTDIR, then
# the installed server, started with no flags, finds its patched Bash (and
# the patched zsh is installed beside it) and sandbox helper
# (libexecdir/execgate) and wrapper, and runs a call whose
# command execs a program through the wrapper.
#
#   run.sh BUILDDIR
set -eu
builddir=$1
dest=$(mktemp -d /tmp/execgate-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
meson install -C "$builddir" --destdir "$dest" --quiet >"$dest.log" 2>&1 || {
	cat "$dest.log" >&2
	rm -f "$dest.log"
	echo "FAIL: meson install" >&2
	exit 1
}
rm -f "$dest.log"
server=$(find "$dest" -type f -name execgate -path '*/bin/*')
[ -n "$server" ] || { echo "FAIL: no installed bin/execgate" >&2; exit 1; }
libexec=$(find "$dest" -type d -path '*/libexec/execgate')
for f in bash zsh execgate-sandbox execgate-wrapper; do
	[ -x "$libexec/$f" ] || { echo "FAIL: $f not installed under libexec/execgate" >&2; exit 1; }
done

work="$dest/work"
mkdir "$work"
# call COMMAND [SERVER_OPTION...]: the answer of the installed server to
# one call of COMMAND.
call() {
	command=$1
	shift
	{
		printf '%s\n' \
			'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install-test","version":"1"}}}' \
			'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
			'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"'"$command"'","workdir":"'"$work"'","login":false}}}'
		# stdin stays open until the answer is in: EOF would end the call.
		sleep 3
	} | HOME="$work" CODEX_HOME="$work/codex" "$server" "$@" 2>"$dest/server.log"
}
out=$(call 'printf %s \"$BASH\"; /bin/echo \" via-exec\"')
case $out in
*"\"id\":2"*"$libexec/bash via-exec"*) echo "ok: the installed server ran a call with its installed Bash and helpers" ;;
*)
	echo "FAIL: unexpected answer: $out" >&2
	cat "$dest/server.log" >&2
	exit 1
	;;
esac
out=$(call 'printf %s \"$ZSH_VERSION $(readlink /proc/$$/exe)\"; /bin/echo \" via-exec\"' --shell zsh)
case $out in
*"\"id\":2"*"5.9 $libexec/zsh via-exec"*) echo "ok: with --shell zsh it ran the call with its installed zsh" ;;
*)
	echo "FAIL: --shell zsh: unexpected answer: $out" >&2
	cat "$dest/server.log" >&2
	exit 1
	;;
esac
