#include "server/call/login_shells.h"
#include "server/call/login_shells_int.h"

#include "common/macros.h"
#include "common/strfmt.h"
#include "proto/esc_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shell kinds ---- */

static char *bash_capture(const char *nonce);
static char *zsh_capture(const char *nonce);

/* Bash as a login shell (bash(1), INVOCATION): /etc/profile (Debian's
 * sources the scripts in /etc/profile.d and, for bash, /etc/bash.bashrc), then the
 * first of ~/.bash_profile, ~/.bash_login, ~/.profile; all are watched,
 * since creating the first makes the others unread. */
static const char *const bash_startup[] = {
    "/etc/profile",  "/etc/profile.d/", "/etc/bash.bashrc", "~/.bash_profile",
    "~/.bash_login", "~/.profile",      "~/.bashrc",        NULL,
};

/* zsh as a login shell (zsh(1), STARTUP/SHUTDOWN FILES): /etc/zsh/zshenv,
 * $ZDOTDIR/.zshenv, /etc/zsh/zprofile, $ZDOTDIR/.zprofile, /etc/zsh/zlogin,
 * $ZDOTDIR/.zlogin; the zshrc files are an interactive shell's, watched
 * anyway (a profile may source ~/.zshrc). */
static const char *const zsh_startup[] = {
    "/etc/zsh/zshenv", "/etc/zsh/zprofile", "/etc/zsh/zshrc",
    "/etc/zsh/zlogin", "~/.zshenv",         "~/.zprofile",
    "~/.zshrc",        "~/.zlogin",         NULL,
};

static const struct login_snapshot_kind kinds[] = {
    {"bash", bash_startup, bash_capture, USE_BASH_ENV},
    {"zsh", zsh_startup, zsh_capture, USE_ZDOTDIR},
};

const struct login_snapshot_kind *
login_snapshot_kind_find(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        if (strcmp(base, kinds[i].name) == 0)
            return &kinds[i];
    }
    return NULL;
}

const char *
login_snapshot_kind_name(const struct login_snapshot_kind *k)
{
    return k->name;
}

bool
login_snapshot_kind_captures(const struct login_snapshot_kind *k)
{
    return k->capture != NULL;
}

/* The case pattern of the variables a snapshot does not carry: the
 * shell's own (base, "A|B|...") and the server's (esc_env.h), which the
 * server sets anew for every call.  Malloc'd; NULL when out of memory. */
static char *
skip_pattern(const char *base)
{
    char *skip = strdup(base);
    static const char *const own[] = {ESC_ENV_ALL};
    for (size_t i = 0; skip && i < ARRAY_SIZE(own); i++) {
        char *more = strfmt("%s|%s", skip, own[i]);
        free(skip);
        skip = more;
    }
    return skip;
}

/* ---- bash ---- */

extern char **environ;

/* The server's environment, which every shell inherits, as the words of a
 * bash (or zsh) associative array: " [A]='1' [B]='it'\\''s'", valid names only;
 * NULL when out of memory. */
static char *
inherited_env(void)
{
    size_t len = 1;
    for (char **e = environ; *e; e++)
        len += 4 * strlen(*e) + 8; /* each ' becomes '\'' */
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t k = 0;
    for (char **e = environ; *e; e++) {
        size_t n = strcspn(*e, "=");
        bool ok = n > 0 && (*e)[n] == '=' && !(**e >= '0' && **e <= '9');
        for (size_t i = 0; ok && i < n; i++) {
            char c = (*e)[i];
            ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9');
        }
        if (!ok)
            continue;
        out[k++] = ' ';
        out[k++] = '[';
        memcpy(out + k, *e, n);
        k += n;
        out[k++] = ']';
        out[k++] = '=';
        out[k++] = '\'';
        for (const char *v = *e + n + 1; *v; v++) {
            if (*v == '\'') {
                memcpy(out + k, "'\\''", 4);
                k += 4;
            } else {
                out[k++] = *v;
            }
        }
        out[k++] = '\'';
    }
    out[k] = '\0';
    return out;
}

/* Variables not to carry: Bash's own (set anew by every shell, or
 * read-only), the prompts, and the ones the server sets for each call
 * (they must win over the profile's); BASH_ENV is restored at the end. */
static const char bash_skip[] =
    "BASH|BASHOPTS|BASHPID|BASH_ALIASES|BASH_ARGC|BASH_ARGV|"
    "BASH_ARGV0|BASH_CMDS|BASH_COMMAND|BASH_ENV|"
    "BASH_EXECUTION_STRING|BASH_LINENO|BASH_REMATCH|BASH_SOURCE|"
    "BASH_SUBSHELL|BASH_VERSINFO|BASH_VERSION|COLUMNS|"
    "COMP_WORDBREAKS|DIRSTACK|EPOCHREALTIME|EPOCHSECONDS|EUID|"
    "FUNCNAME|GROUPS|HISTCMD|HOSTNAME|HOSTTYPE|LINENO|LINES|MACHTYPE|"
    "OLDPWD|OPTERR|OPTIND|OSTYPE|PIPESTATUS|PPID|PS0|PS1|PS2|PS3|PS4|"
    "PWD|RANDOM|SECONDS|SHELLOPTS|SHLVL|SRANDOM|UID|_|__execgate_snap_*";

/* The proxy variables while they hold what the sandbox helper set for
 * the capture's own call, as a Bash regular expression on "NAME=VALUE":
 * each call through the network proxy has its own port, and the call's
 * own variables win, unless the profile changed them. */
static const char bash_proxy[] =
    "^(HTTPS?_PROXY|https?_proxy)=http://127\\.0\\.0\\.1:[0-9]+$|"
    "^(ALL_PROXY|all_proxy)=socks5h://127\\.0\\.0\\.1:[0-9]+$|^(NO_PROXY|no_proxy)=$";

/*
 * The capture, run by `bash -lc` after the profile: builtins only (no
 * program to decide on), each behind `builtin` (the profile may define
 * functions of those names), aliases read and dropped first (they would
 * change the rest as it is parsed).  It prints the begin marker, then a
 * script that, sourced by `bash --noprofile -lc`, gives what the profile
 * gave: every variable (plain and exported strings in one `declare` each,
 * since every command costs the shell that sources it; the rest with
 * declare -p: attributes, arrays), `unset` for the inherited ones the
 * profile removed, the aliases, the umask, BASH_ENV as it was, the
 * functions and their attributes (after the lines that run a builtin a
 * function could shadow), and last the options, in one command per kind
 * (set -e or -u from the profile must not stop the snapshot's own lines),
 * each run only when $BASHOPTS or $SHELLOPTS say the shell's differ (a
 * profile that sets none, as Debian's, costs no option command at all);
 * then the end marker.
 */
static char *
bash_capture(const char *nonce)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    char names[sizeof(letters) * 8]; /* " ${!a*}" each */
    size_t k = 0;
    for (size_t i = 0; letters[i]; i++)
        k += (size_t)snprintf(names + k, sizeof(names) - k, " ${!%c*}", letters[i]);
    char *skip = skip_pattern(bash_skip);
    if (!skip)
        return NULL;
    char *inherited = inherited_env();
    if (!inherited) {
        free(skip);
        return NULL;
    }
    char *cmd = strfmt(
        "__execgate_snap_al=$(\\builtin alias -p)\n"
        "\\builtin unalias -a\n"
        "__execgate_snap_so=$(builtin set +o) __execgate_snap_sh=$(builtin shopt -p) "
        "__execgate_snap_um=$(builtin umask -p) __execgate_snap_bo=$BASHOPTS "
        "__execgate_snap_eo=$SHELLOPTS\n"
        "builtin set +eu -f +o pipefail\n"
        "builtin printf '\\n%%s\\n' '" MARK_BEGIN "%s'\n"
        "__execgate_snap_x= __execgate_snap_p= __execgate_snap_re='%s'\n"
        "builtin declare -A __execgate_snap_env\n"
        "__execgate_snap_env=(%s)\n"
        "for __execgate_snap_n in%s; do\n"
        "  case $__execgate_snap_n in %s) continue;; esac\n"
        "  __execgate_snap_v=$__execgate_snap_n=${!__execgate_snap_n}\n"
        "  [[ $__execgate_snap_v =~ $__execgate_snap_re ]] && continue\n"
        "  __execgate_snap_a=${!__execgate_snap_n@a}\n"
        "  if [[ $__execgate_snap_a == x && -n ${__execgate_snap_env[$__execgate_snap_n]+set} && "
        "${__execgate_snap_env[$__execgate_snap_n]} == \"${!__execgate_snap_n}\" ]]; then\n"
        "    continue\n"
        "  fi\n"
        "  if [[ -n ${!__execgate_snap_n+set} && ! -R $__execgate_snap_n && ( -z "
        "$__execgate_snap_a || $__execgate_snap_a == x ) ]]; then\n"
        "    if [[ -n $__execgate_snap_a ]]; then __execgate_snap_x+=\" "
        "$__execgate_snap_n=${!__execgate_snap_n@Q}\"\n"
        "    else __execgate_snap_p+=\" $__execgate_snap_n=${!__execgate_snap_n@Q}\"; fi\n"
        "  else builtin declare -p \"$__execgate_snap_n\"; fi\n"
        "done\n"
        "for __execgate_snap_n in \"${!__execgate_snap_env[@]}\"; do\n"
        "  case $__execgate_snap_n in %s) continue;; esac\n"
        "  [[ -v $__execgate_snap_n ]] || builtin printf 'unset %%s\\n' \"$__execgate_snap_n\"\n"
        "done\n"
        "[[ -z $__execgate_snap_x ]] || builtin printf 'declare -x%%s\\n' "
        "\"$__execgate_snap_x\"\n"
        "[[ -z $__execgate_snap_p ]] || builtin printf 'declare +x%%s\\n' "
        "\"$__execgate_snap_p\"\n"
        "builtin printf '%%s\\n' \"$__execgate_snap_al\" \"$__execgate_snap_um\"\n"
        "if [[ -v BASH_ENV ]]; then builtin declare -p BASH_ENV; else builtin printf "
        "'unset BASH_ENV\\n'; fi\n"
        "builtin declare -f\n"
        "IFS=$'\\n'\n"
        "for __execgate_snap_l in $(builtin declare -F); do\n"
        "  case $__execgate_snap_l in 'declare -f '*) ;; *) builtin printf 'builtin %%s\\n' "
        "\"$__execgate_snap_l\";; esac\n"
        "done\n"
        "__execgate_snap_o= __execgate_snap_s= __execgate_snap_u= __execgate_snap_b=\n"
        "for __execgate_snap_l in $__execgate_snap_so; do\n"
        "  __execgate_snap_o+=\" ${__execgate_snap_l#set }\"\n"
        "done\n"
        "for __execgate_snap_l in $__execgate_snap_sh; do\n"
        "  case $__execgate_snap_l in\n"
        "    *' login_shell'|*' restricted_shell') ;;\n"
        "    'shopt -s '*) __execgate_snap_s+=\" ${__execgate_snap_l#shopt -s }\";;\n"
        "    *) __execgate_snap_u+=\" ${__execgate_snap_l#shopt -u }\";;\n"
        "  esac\n"
        "done\n"
        "[[ -z $__execgate_snap_s ]] || __execgate_snap_b+=\"builtin shopt -s$__execgate_snap_s; "
        "\"\n"
        "[[ -z $__execgate_snap_u ]] || __execgate_snap_b+=\"builtin shopt -u$__execgate_snap_u; "
        "\"\n"
        "[[ -z $__execgate_snap_b ]] || builtin printf '[[ $BASHOPTS == %%s ]] || { %%s}\\n' "
        "\"${__execgate_snap_bo@Q}\" \"$__execgate_snap_b\"\n"
        "[[ -z $__execgate_snap_o ]] || builtin printf '[[ $SHELLOPTS == %%s ]] || builtin "
        "set%%s\\n' "
        "\"${__execgate_snap_eo@Q}\" \"$__execgate_snap_o\"\n"
        "builtin printf '" MARK_END "%s\\n'\n",
        nonce, bash_proxy, inherited, names, skip, skip, nonce);
    free(inherited);
    free(skip);
    return cmd;
}

/* ---- zsh ---- */

/* text in single quotes for the shell ('\'' for each '); NULL when out of
 * memory. */
static char *
single_quoted(const char *text)
{
    size_t n = 3;
    for (const char *p = text; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *out = malloc(n);
    if (!out)
        return NULL;
    size_t k = 0;
    out[k++] = '\'';
    for (const char *p = text; *p; p++) {
        if (*p == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *p;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
    return out;
}

/* Parameters not to carry (a case pattern): zsh's own, set anew by every
 * shell (the specials are left out by zsh_carried), the server's per-call
 * variables, and ZSH_SNAPSHOT_VAR; ZDOTDIR is carried, always (a login
 * call runs with the private one). */
static const char zsh_skip[] = "0|argv|ARGC|_|PWD|OLDPWD|SHLVL|CPUTYPE|HOST|MACHTYPE|OSTYPE|TTY|"
                               "VENDOR|ZSH_*|signals|" ZSH_SNAPSHOT_VAR "|__execgate_snap_*";

/* The special parameters (zsh's own meaning) a profile sets for the shell
 * to use, which are carried; the other specials (RANDOM, LINENO, the
 * prompts, the zsh/parameter hashes...) are not. */
static const char zsh_carried[] =
    "PATH|FPATH|CDPATH|MANPATH|MAILPATH|MODULE_PATH|FIGNORE|PSVAR|HOME|LANG|LC_*|TERM|"
    "TERMINFO|TERMINFO_DIRS|HISTSIZE|SAVEHIST|HISTCHARS|IFS|WORDCHARS|NULLCMD|READNULLCMD|"
    "KEYBOARD_HACK|FUNCNEST|WATCH";

/* The proxy variables as the sandbox helper sets them for a call that
 * goes through the network proxy (each call its own port): the call's own,
 * not the capture's, unless the profile changed them. */
static const char zsh_proxy[] =
    "(HTTP_PROXY|http_proxy|HTTPS_PROXY|https_proxy):http://127.0.0.1:<->|"
    "(ALL_PROXY|all_proxy):socks5h://127.0.0.1:<->|(NO_PROXY|no_proxy):";

/* Options a shell has from how it was started, not to be set. */
#define ZSH_FIXED_OPTIONS "interactive|login|shinstdin|singlecommand|privileged|restricted"

/*
 * The capture, run by `zsh -lc` after the profile.  zsh parses the whole
 * -c text before it runs any of it, with the profile's aliases (global
 * ones replace any word) and options: so the first part, every word
 * quoted, only saves what the rest must not change (the modules, the
 * functions, the aliases as three hashes, the umask, the options), removes
 * the aliases
 * and the ZERR and DEBUG traps (they would print into the snapshot), sets
 * zsh's own options (emulate -R zsh: no errexit, no ksharrays...) and
 * evals the rest, parsed then.  Builtins only (no program to decide on),
 * each behind `builtin`.  The rest prints the begin marker, then a script
 * that, sourced by a login zsh from ZSH_ZDOTDIR/.zlogin, gives what the
 * profile gave: first the aliases removed (no alias of the calling shell
 * may change the lines that follow), the modules loaded (zsh/main always
 * is), the parameters
 * (plain and exported strings in one typeset each, since every command
 * costs each login call; the rest with typeset -p: arrays, hashes,
 * integers, attributes), leaving out those inherited unchanged, `unset`
 * for the inherited ones the profile removed (and ZDOTDIR when unset), in
 * one command, the functions, the umask, the aliases (one command each for
 * regular, global and suffix ones: after the functions, whose text they
 * would change), and last every option
 * but ZSH_FIXED_OPTIONS (so xtrace or errexit from the profile changes no
 * line before), every word quoted (the aliases are back by then), as in
 * the first line; then the end marker.  The first part's hashes and
 * arrays are read with [@]: under the profile's ksh_arrays a bare name is
 * its first element.
 */
static char *
zsh_capture(const char *nonce)
{
    char *skip = skip_pattern(zsh_skip);
    if (!skip)
        return NULL;
    char *inherited = inherited_env();
    char *rest =
        inherited
            ? strfmt(
                  "builtin printf '\\n%%s\\n' '" MARK_BEGIN "%s'\n"
                  "builtin typeset -a __execgate_snap_m __execgate_snap_d __execgate_snap_l\n"
                  "for __execgate_snap_l in ${(f)__execgate_snap_mo}; do\n"
                  "  [[ $__execgate_snap_l == 'zmodload zsh/main' ]] ||\n"
                  "    __execgate_snap_m+=(\"builtin $__execgate_snap_l\")\n"
                  "done\n"
                  "builtin print -rl -- \"'builtin' 'unset' '" ZSH_SNAPSHOT_VAR "'; 'builtin' "
                  "'unalias' '-a'; 'builtin' 'unalias' '-as'\" $__execgate_snap_m\n"
                  "builtin typeset -A __execgate_snap_env\n"
                  "__execgate_snap_env=(%s)\n"
                  "builtin typeset -a __execgate_snap_x __execgate_snap_p __execgate_snap_s "
                  "__execgate_snap_u\n"
                  "for __execgate_snap_n in ${(ko)parameters}; do\n"
                  "  case $__execgate_snap_n in (%s) continue;; esac\n"
                  "  __execgate_snap_t=${parameters[$__execgate_snap_n]}\n"
                  "  case $__execgate_snap_t in (*special*)\n"
                  "    case $__execgate_snap_n in (%s) ;; (*) continue;; esac;;\n"
                  "  esac\n"
                  "  if [[ $__execgate_snap_n != ZDOTDIR && $__execgate_snap_t == *export* ]] &&\n"
                  "     (( ${+__execgate_snap_env[$__execgate_snap_n]} )) &&\n"
                  "     [[ ${(P)__execgate_snap_n} == "
                  "\"${__execgate_snap_env[$__execgate_snap_n]}\" "
                  "]]; then\n"
                  "    continue\n"
                  "  fi\n"
                  "  case $__execgate_snap_n:${(P)__execgate_snap_n} in (%s) continue;; esac\n"
                  "  case $__execgate_snap_t in\n"
                  "    (scalar|scalar-special|scalar-tied-special|integer-special)\n"
                  "      "
                  "__execgate_snap_p+=(\"$__execgate_snap_n=${(q+)${(P)__execgate_snap_n}}\");;\n"
                  "    (scalar-export|scalar-export-special|scalar-tied-export-special|"
                  "integer-export-special)\n"
                  "      "
                  "__execgate_snap_x+=(\"$__execgate_snap_n=${(q+)${(P)__execgate_snap_n}}\");;\n"
                  "    (*) builtin typeset -p -- $__execgate_snap_n;;\n"
                  "  esac\n"
                  "done\n"
                  "(( ! $#__execgate_snap_x )) || builtin print -r -- \"builtin typeset -gx "
                  "${__execgate_snap_x[*]}\"\n"
                  "(( ! $#__execgate_snap_p )) || builtin print -r -- \"builtin typeset -g +x "
                  "${__execgate_snap_p[*]}\"\n"
                  "for __execgate_snap_n in ${(k)__execgate_snap_env} ZDOTDIR; do\n"
                  "  case $__execgate_snap_n in (%s) continue;; esac\n"
                  "  (( ${+parameters[$__execgate_snap_n]} )) || "
                  "__execgate_snap_d+=($__execgate_snap_n)\n"
                  "done\n"
                  "(( ! $#__execgate_snap_d )) || builtin print -r -- \"builtin unset "
                  "${__execgate_snap_d[*]}\"\n"
                  "builtin print -rl -- \"$__execgate_snap_fn\" \"builtin umask "
                  "$__execgate_snap_um\"\n"
                  "__execgate_snap_alias() {\n"
                  "  builtin local o=$1 n v; builtin shift; __execgate_snap_l=()\n"
                  "  for n v; do __execgate_snap_l+=(\"${(q+)n}=${(q+)v}\"); done\n"
                  "  (( ! $#__execgate_snap_l )) || builtin print -r -- \"builtin alias $o-- "
                  "${__execgate_snap_l[*]}\"\n"
                  "}\n"
                  "__execgate_snap_alias '' \"${__execgate_snap_ra[@]}\"\n"
                  "__execgate_snap_alias '-g ' \"${__execgate_snap_ga[@]}\"\n"
                  "__execgate_snap_alias '-s ' \"${__execgate_snap_sa[@]}\"\n"
                  "for __execgate_snap_n __execgate_snap_t in ${=__execgate_snap_op}; do\n"
                  "  case $__execgate_snap_n in (" ZSH_FIXED_OPTIONS ") ;;\n"
                  "    (*) if [[ $__execgate_snap_t == on ]]; then "
                  "__execgate_snap_s+=($__execgate_snap_n);\n"
                  "        else __execgate_snap_u+=($__execgate_snap_n); fi;;\n"
                  "  esac\n"
                  "done\n"
                  "builtin print -r -- \"'builtin' 'unsetopt' ${(j: :)${(@qq)__execgate_snap_u}}; "
                  "'builtin' "
                  "'setopt' ${(j: :)${(@qq)__execgate_snap_s}}\"\n"
                  "builtin printf '%%s\\n' '" MARK_END "%s'\n",
                  nonce, inherited, skip, zsh_carried, zsh_proxy, skip, nonce)
            : NULL;
    char *quoted = rest ? single_quoted(rest) : NULL;
    char *cmd = quoted
                    ? strfmt("__execgate_snap_mo=\"$('builtin' 'zmodload' '-L')\" "
                             "__execgate_snap_fn=\"$('builtin' 'typeset' '-f')\" "
                             "__execgate_snap_ra=(\"${(@kv)aliases[@]}\") "
                             "__execgate_snap_ga=(\"${(@kv)galiases[@]}\") "
                             "__execgate_snap_sa=(\"${(@kv)saliases[@]}\") "
                             "__execgate_snap_um=\"$('builtin' 'umask')\" "
                             "__execgate_snap_op=\"${(kv)options[@]}\"\n"
                             "'builtin' 'unalias' '-a'; 'builtin' 'unalias' '-as'; "
                             "'builtin' 'trap' '-' 'ZERR' 'DEBUG'; 'builtin' 'emulate' '-R' 'zsh'; "
                             "'builtin' 'eval' %s\n",
                             quoted)
                    : NULL;
    free(quoted);
    free(rest);
    free(inherited);
    free(skip);
    return cmd;
}
