#!/usr/bin/env bash
# The man pages say what the programs do now: every long option that
# --help prints (and, for execgate-rules, every command and the usage line
# each command prints) is in the program's page, every environment
# variable the program's sources read (tests' own EXECGATE_TEST_* aside)
# is in its ENVIRONMENT section, the version is the project's, and each
# page renders without a warning (groff -ww, man --warnings; skipped with
# a message when they are not installed).
#
#   check.sh SRCDIR VERSION EXECGATE EXECGATE_RULES EXECGATE_SANDBOX
set -u
src=$1 version=$2 execgate=$3 execgate_rules=$4 execgate_sandbox=$5
man=$src/man
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# The page as text to search: roff's escapes for "-" and fonts removed.
page_text() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' "$man/$1"; }

# One section of a page (.SH NAME up to the next .SH), as text.
section_text() { page_text "$1" | sed -n "/^\\.SH $2\$/,/^\\.SH /p"; }

long_options() { grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }

# has PAGE TEXT WHAT...: each WHAT occurs in TEXT as a whole word
has() {
    local page=$1 text=$2 w
    shift 2
    for w in "$@"; do
        grep -qE -- "(^|[^a-zA-Z0-9_-])$w([^a-zA-Z0-9_-]|\$)" <<<"$text" ||
            fail "$page does not mention $w"
    done
}

# the environment variables a folder's sources read
getenv_names() {
    grep -ho 'getenv("[A-Z_][A-Z0-9_]*")' "$src/$1"/*.c | sed 's/getenv("\(.*\)")/\1/' |
        grep -v '^EXECGATE_TEST_' | sort -u
}

for page in execgate.1 execgate-rules.1 execgate-sandbox.1 execgate.rules.5; do
    [ -f "$man/$page" ] || {
        fail "man/$page is missing"
        continue
    }
    head -1 "$man/$page" | grep -qF "\"execgate $version\"" ||
        fail "$page: .TH does not say execgate $version: $(head -1 "$man/$page")"
done

# execgate
text=$(page_text execgate.1)
# shellcheck disable=SC2046
has execgate.1 "$text" $("$execgate" --help | long_options)
# shellcheck disable=SC2046
has execgate.1 "$(section_text execgate.1 ENVIRONMENT)" $(getenv_names server)

# execgate-rules: its --help, and the usage line each command prints when
# used wrongly (they have no --help of their own)
text=$(page_text execgate-rules.1)
help=$("$execgate_rules" --help)
# shellcheck disable=SC2046
has execgate-rules.1 "$text" $(long_options <<<"$help")
for cmd in $(grep -o 'execgate-rules [a-z]\+' <<<"$help" | cut -d' ' -f2 | sort -u); do
    grep -q "^\\.SS $cmd\$" "$man/execgate-rules.1" || fail "execgate-rules.1 has no section for $cmd"
    case $cmd in
    lint) usage=$("$execgate_rules" lint --no-such-option 2>&1 >/dev/null) ;;
    *) usage=$("$execgate_rules" "$cmd" 2>&1 >/dev/null) ;;
    esac
    grep -q "usage: execgate-rules $cmd" <<<"$usage" ||
        fail "execgate-rules $cmd, used wrongly, printed no usage line: $usage"
    # shellcheck disable=SC2046
    has execgate-rules.1 "$text" $(grep 'usage:' <<<"$usage" | long_options)
done
# shellcheck disable=SC2046
has execgate-rules.1 "$(section_text execgate-rules.1 ENVIRONMENT)" $(getenv_names rules)

# execgate-sandbox
text=$(page_text execgate-sandbox.1)
# shellcheck disable=SC2046
has execgate-sandbox.1 "$text" $("$execgate_sandbox" --help | long_options)
# shellcheck disable=SC2046
has execgate-sandbox.1 "$(section_text execgate-sandbox.1 ENVIRONMENT)" $(getenv_names sandbox)

# execgate.rules: the three functions and their arguments
text=$(page_text execgate.rules.5)
has execgate.rules.5 "$text" prefix_rule host_executable network_rule pattern decision \
    justification match not_match allow prompt forbidden

# rendering
if command -v groff >/dev/null 2>&1; then
    for page in "$man"/*.[15]; do
        out=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on ${page##*/}"
        [ -z "$out" ] || fail "groff -ww warns about ${page##*/}: $out"
    done
else
    echo "groff is not installed: the pages were not rendered"
fi
if command -v man >/dev/null 2>&1; then
    for page in "$man"/*.[15]; do
        out=$(MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null) ||
            fail "man -l failed on ${page##*/}"
        [ -z "$out" ] || fail "man --warnings -l warns about ${page##*/}: $out"
    done
else
    echo "man is not installed: man -l was not tried"
fi

if [ "$failures" -gt 0 ]; then
    echo "$failures man page check(s) failed" >&2
    exit 1
fi
echo "ok: the man pages cover every option --help prints and render without warnings"
