#!/usr/bin/env bash
# The shell completions offer what the programs accept: the bash ones are
# sourced into this bash and asked, as bash asks them, about partial
# command lines; every long option that `execgate --help` and
# `execgate-rules --help` print must be offered. The zsh ones must name
# each of those options and parse (zsh -n, when zsh is installed).
#
#   run.sh SRCDIR EXECGATE EXECGATE_RULES
set -u
src=$1 execgate=$2 execgate_rules=$3
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# shellcheck source=/dev/null
. "$src/completions/execgate.bash" || exit 1
# shellcheck source=/dev/null
. "$src/completions/execgate-rules.bash" || exit 1

# complete LINE: what the completion offers for LINE with the cursor at its
# end, one candidate a line. The words are split as bash splits them with
# its default COMP_WORDBREAKS: at blanks, and "=" a word of its own.
complete_line() {
    local line=$1 func
    local -a words
    read -ra words <<<"${line//=/ = }"
    [[ $line == *' ' ]] && words+=("")
    func=$(complete -p "${words[0]}" 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
    [ -n "$func" ] || {
        echo "no completion for ${words[0]}" >&2
        return 1
    }
    COMP_WORDS=("${words[@]}")
    COMP_CWORD=$((${#words[@]} - 1))
    COMP_LINE=$line
    COMP_POINT=${#line}
    COMPREPLY=()
    local prev=
    ((COMP_CWORD > 0)) && prev=${words[COMP_CWORD - 1]}
    "$func" "${words[0]}" "${words[COMP_CWORD]}" "$prev"
    ((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}"
}

# the candidates, one a line, as one line of quoted words
quoted() { sed "s/.*/'&'/" | tr '\n' ' '; }

# expect LINE WORD...: the candidates are exactly WORD... (in any order)
expect() {
    local line=$1
    shift
    local got want
    got=$(complete_line "$line" | sort)
    want=$(printf '%s\n' "$@" | sort)
    [ "$got" = "$want" ] || fail "'$line': offered [$(quoted <<<"$got")], expected [$(quoted <<<"$want")]"
}

# offers LINE WORD...: each WORD is among the candidates
offers() {
    local line=$1 w got
    shift
    got=$(complete_line "$line")
    for w in "$@"; do
        grep -qxF -- "$w" <<<"$got" || fail "'$line': '$w' not offered (offered: $(quoted <<<"$got"))"
    done
}

# the long options in a help text
long_options() { grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }

# execgate: every long option of --help, and their values
help=$("$execgate" --help) || fail "execgate --help failed"
# shellcheck disable=SC2046
offers 'execgate --' $(long_options <<<"$help")
expect 'execgate --ru' --rules
expect 'execgate --log-level ' error warn info debug
expect 'execgate --log-format=j' json
expect 'execgate --exec-enforcement=t' tree
expect 'execgate --max-calls ' # a number: nothing

tmp=$(mktemp -d /tmp/execgate-completions-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/sub"
touch "$tmp/a.rules" "$tmp/notes.txt" "$tmp/my rules.rules"
expect "execgate --rules $tmp/" "$tmp/a.rules" "$tmp/my rules.rules" "$tmp/sub"
expect "execgate --rules $tmp/m" "$tmp/my rules.rules"
expect "execgate --rules=$tmp/a" "$tmp/a.rules"
expect "execgate --audit-log $tmp/n" "$tmp/notes.txt"
offers 'execgate --pass-env PAT' PATH

# execgate-rules: the commands and every long option of --help, each
# offered after the command whose usage line names it
help=$("$execgate_rules" --help) || fail "execgate-rules --help failed"
expect 'execgate-rules ch' check
# shellcheck disable=SC2046
offers 'execgate-rules ' $(grep -o 'execgate-rules [a-z]\+' <<<"$help" | cut -d' ' -f2 | sort -u)
# shellcheck disable=SC2046
offers 'execgate-rules --' $(grep '^ *\(usage: \)\?execgate-rules --' <<<"$help" | long_options)
for cmd in check lint explain amend eval; do
    line=$(grep "execgate-rules $cmd " <<<"$help")
    [ -n "$line" ] || {
        fail "execgate-rules --help has no usage line for $cmd"
        continue
    }
    opts=$(long_options <<<"$line")
    # shellcheck disable=SC2086
    [ -z "$opts" ] || offers "execgate-rules $cmd --" $opts
done
expect 'execgate-rules check --re' --resolve-host-executables
expect "execgate-rules check --rules $tmp/" "$tmp/a.rules" "$tmp/my rules.rules" "$tmp/sub"
expect "execgate-rules check -r $tmp/a" "$tmp/a.rules"
expect "execgate-rules check --rules=$tmp/a" "$tmp/a.rules"
offers "execgate-rules check --rules $tmp/a.rules -- ech" echo
offers "execgate-rules check --pretty ech" echo
expect "execgate-rules check -- ls $tmp/no" "$tmp/notes.txt"
expect "execgate-rules explain --pre" --preserve-program-paths
offers "execgate-rules explain --rules $tmp/sub -- ech" echo
expect "execgate-rules amend --al" --allow
expect "execgate-rules amend --allow --rules-dir $tmp/" "$tmp/sub"
expect "execgate-rules lint $tmp/" "$tmp/a.rules" "$tmp/my rules.rules" "$tmp/sub"
expect "execgate-rules lint -" --
expect "execgate-rules eval $tmp/no" "$tmp/notes.txt"

# zsh: every long option of --help is in the completion function, which
# parses (zsh -n, when zsh is installed)
for pair in "_execgate:$execgate" "_execgate-rules:$execgate_rules"; do
    f=$src/completions/${pair%%:*}
    for opt in $("${pair#*:}" --help | long_options); do
        grep -qE -- "(^|[^a-z-])$opt([^a-z-]|\$)" "$f" || fail "${f##*/} does not complete $opt"
    done
done
if command -v zsh >/dev/null 2>&1; then
    for f in _execgate _execgate-rules; do
        zsh -n "$src/completions/$f" || fail "zsh -n completions/$f"
    done
else
    echo "zsh is not installed: the zsh completions were not parsed (zsh -n)"
fi

if [ "$failures" -gt 0 ]; then
    echo "$failures completion check(s) failed" >&2
    exit 1
fi
echo "ok: the bash completions offer every long option of --help and the values tried"
