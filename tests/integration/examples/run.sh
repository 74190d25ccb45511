#!/bin/sh
# examples/default.rules loads (its match/not_match examples hold), and
# gives the decisions its comments promise, as `execgate-rules check`
# prints them; `execgate-rules lint` loads it and warns about the git
# allow rule only, as its comment says.
#
#   run.sh SRCDIR EXECGATE_RULES
set -u
rules=$1/examples/default.rules
tool=$2
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# check WANT [CHECK-OPTION...] -- CMD...: the exact JSON check prints
check() {
    want=$1
    shift
    got=$("$tool" check --rules "$rules" "$@" 2>&1)
    status=$?
    [ "$status" -eq 0 ] || fail "check $*: exit status $status: $got"
    [ "$got" = "$want" ] || fail "check $*:
  got      $got
  expected $want"
}

check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","status"],"decision":"allow"}}],"decision":"allow"}' \
    -- git status
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","log"],"decision":"allow"}}],"decision":"allow"}' \
    -- git log --oneline -5
check '{"matchedRules":[]}' -- git commit -m wip
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","push"],"decision":"prompt","justification":"pushing publishes commits"}}],"decision":"prompt"}' \
    -- git push origin main
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","push"],"decision":"prompt","justification":"pushing publishes commits"}},{"prefixRuleMatch":{"matchedPrefix":["git","push","--force"],"decision":"forbidden","justification":"force-push rewrites published history"}}],"decision":"forbidden"}' \
    -- git push --force origin main
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","push"],"decision":"prompt","justification":"pushing publishes commits"}}],"decision":"prompt"}' \
    -- git push --force-with-lease
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["rm","-rf","/"],"decision":"forbidden","justification":"removes a whole system or home directory tree"}}],"decision":"forbidden"}' \
    -- rm -rf /
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["rm","-fr","/home"],"decision":"forbidden","justification":"removes a whole system or home directory tree"}}],"decision":"forbidden"}' \
    -- rm -fr /home
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["rm","-r","--no-preserve-root"],"decision":"forbidden","justification":"--no-preserve-root exists to remove /"}}],"decision":"forbidden"}' \
    -- rm -r --no-preserve-root /mnt
check '{"matchedRules":[]}' -- rm -rf build
check '{"matchedRules":[]}' -- ls -la
# host_executable: /usr/bin/git stands for git, another git does not
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","status"],"decision":"allow","resolvedProgram":"/usr/bin/git"}}],"decision":"allow"}' \
    --resolve-host-executables -- /usr/bin/git status
check '{"matchedRules":[]}' --resolve-host-executables -- /tmp/agent/git status
# git's own helpers, which an escalated git starts: the same file under
# /usr/lib/git-core stands for git too; pack-objects only with --stdout
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","rev-list"],"decision":"allow","resolvedProgram":"/usr/lib/git-core/git"}}],"decision":"allow"}' \
    --resolve-host-executables -- /usr/lib/git-core/git rev-list --objects --stdin
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git","pack-objects","--revs","--thin","--stdout"],"decision":"allow"}}],"decision":"allow"}' \
    -- git pack-objects --revs --thin --stdout --delta-base-offset
check '{"matchedRules":[]}' -- git pack-objects --revs /tmp/pack
check '{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git-upload-pack"],"decision":"allow"}}],"decision":"allow"}' \
    -- git-upload-pack /srv/git/project.git
check '{"matchedRules":[]}' -- git-receive-pack /srv/git/project.git

# lint: it loads (not 2), and only the git allow rules are warned about:
# the read-only subcommands, and git's helpers
git_line=$(grep -n '^prefix_rule($' "$rules" | head -1 | cut -d: -f1)
helper_lines=$(grep -n '^    pattern = \["git", \(\["rev-list"\|"pack-objects"\)' "$rules" |
    cut -d: -f1 | while read -r n; do echo $((n - 1)); done)
warnings=$("$tool" lint "$rules" 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "lint: exit status $status (1: warnings), output: $warnings"
[ -n "$warnings" ] || fail "lint: no warning about the git allow rule"
echo "$warnings" | while IFS= read -r line; do
    ok=
    for n in $git_line $helper_lines; do
        case $line in
        "$rules:$n:1: warning: allow rule "*git*) ok=1 ;;
        esac
    done
    [ -n "$ok" ] || { echo "FAIL: lint: a warning not about a git rule (lines $git_line $helper_lines): $line" >&2 && exit 1; }
done || failures=$((failures + 1))

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) of examples/default.rules failed" >&2
    exit 1
fi
echo "ok: examples/default.rules loads and decides as its comments say"
