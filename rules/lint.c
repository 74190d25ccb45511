/*
 * rules lint: the table of programs and options that are dangerous outside
 * the sandbox, the warnings about allow rules that leave them open, and
 * the check of one command about to be escalated.
 *
 * Everything execgate knows about a program is in `table` below: the
 * lint warnings and rules_lint_dangerous_use read the same entries.
 */
#include "rules/lint.h"
#include "rules/textbuf.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How an option of the table shows in a command. */
enum lint_form {
    /* "--name", "--name=VALUE", or an abbreviation: in "--out[put]" the part
     * before '[' is the shortest one the program accepts. */
    LINT_LONG = 1,
    /* "-x", "-xVALUE", or x anywhere in a cluster "-abx" (a letter that is
     * part of another option's value counts too: in doubt, ask). */
    LINT_SHORT,
    /* this exact word: find's "-exec", git bisect's "run" */
    LINT_WORD,
    /* any use of the program (or of the subcommand) */
    LINT_ANY,
    /* a sed script's e command or s///e (name "e"), or its w, W command or
     * s///w (name "w"); scripts sed cannot show (-f FILE) are the table's
     * -f entries.  --sandbox disables both. */
    LINT_SED_SCRIPT,
    /* an awk program (the first operand, or -e/--source text) that may
     * run a command or write a file: system(), a pipe, a redirection, a
     * gawk @load or @include; a program awk reads from a file (-f) or an
     * option other than -F and -v counts too */
    LINT_AWK_PROGRAM,
};

/* The option takes a file to write; "-" (standard output) and /dev/null
 * are harmless values. */
#define LINT_OUT 0x1u
/* sed --sandbox, which refuses the e, w and r commands, makes it harmless. */
#define LINT_SANDBOXABLE 0x2u

struct lint_option {
    enum lint_form form; /* 0 ends a list */
    unsigned flags;      /* LINT_OUT, LINT_SANDBOXABLE */
    const char *name;    /* as matched, see enum lint_form */
    const char *shown;   /* as warnings write it: "--output=FILE" */
    const char *effect;  /* "writes any file" */
    const char *use;     /* what rules_lint_dangerous_use returns */
};

/* Entry flags. */
enum {
    /* the names also stand for name + version: python3.12, pip3, perl5.36 */
    LINT_VERSIONED = 0x1u,
    /* the options come before the subcommand (git -c, git -C) */
    LINT_LEADING = 0x2u,
    /* "--" does not end the options (find's expression goes on) */
    LINT_NO_DASHDASH = 0x4u,
    /* the first word is a cluster of options even without "-" (tar xf) */
    LINT_OLD_CLUSTER = 0x8u,
    /* runs any code or program it is given, whatever else the command
     * says: no prefix of it is narrow enough to allow for good */
    LINT_RUNS_GIVEN = 0x10u,
    /* every use counts as a dangerous use (its LINT_ANY option), even of
     * the whole program: what it runs comes from its input or from files
     * the command controls (vim -es, ed, strace, gdb) */
    LINT_EVERY_USE = 0x20u,
};

struct lint_entry {
    const char *const *programs; /* NULL-terminated */
    unsigned flags;
    /* Why any allow rule for the program is dangerous, or NULL: the end of
     * the sentence `allow rule for "make" ...`. */
    const char *runs;
    /* The subcommands the options belong to; NULL: the whole program. */
    const char *const *subs;
    /* LINT_LEADING: the options before the subcommand that take the next
     * word as their value (so that word is not the subcommand). */
    const char *const *takes_value;
    const struct lint_option *options; /* NULL, or ended by form 0 */
};

#define WORDS(...)   ((const char *const[]){__VA_ARGS__, NULL})
#define OPTIONS(...) ((const struct lint_option[]){__VA_ARGS__, {0}})
/* prog: the program (and subcommand) as the runtime description names it. */
#define OPT(form, prog, name, shown, effect)                                                       \
    {                                                                                              \
        LINT_##form, 0, name, shown, effect, prog " " shown " (" effect ")"                        \
    }
#define OUT(form, prog, name, shown, effect)                                                       \
    {                                                                                              \
        LINT_##form, LINT_OUT, name, shown, effect, prog " " shown " (" effect ")"                 \
    }
#define SANDBOXABLE(form, prog, name, shown, effect)                                               \
    {                                                                                              \
        LINT_##form, LINT_SANDBOXABLE, name, shown, effect, prog " " shown " (" effect ")"         \
    }

#define RUN         "runs any command"
#define WRITE       "writes any file"
#define WRITEDIR    "writes files in any directory"
#define TARWRITE    "writes the archive -f names, any file"
#define SCRIPT      "runs a script that can run commands and write files"
#define PROMPT      "; use decision=\"prompt\""
#define TREE        "runs code from the working tree when escalated"
#define TAREXTRACT  "writes files wherever the archive's names and the links in the directory lead"
#define GIVEN       "runs any command it is given, or that its input names, when escalated" PROMPT
#define EVERY(prog) OPT(ANY, prog, NULL, "...", "runs commands its arguments or input name")

static const struct lint_entry table[] = {
    /* git: everything it reads from .git, then its options. */
    {
        .programs = WORDS("git"),
        .flags = LINT_LEADING,
        .runs = TREE
        " (hooks, and core.fsmonitor, core.pager, filters and aliases in .git/config)" PROMPT,
        .takes_value = WORDS("-c", "-C", "--git-dir", "--work-tree", "--config-env", "--namespace",
                             "--super-prefix", "--attr-source"),
        .options = OPTIONS(
            OPT(SHORT, "git", "-c", "-c NAME=VALUE", "sets configuration that runs commands"),
            OPT(LONG, "git", "--config-env", "--config-env=NAME=VARIABLE",
                "sets configuration that runs commands"),
            OPT(LONG, "git", "--exec-path", "--exec-path=DIR",
                "runs git commands from any directory"),
            OPT(SHORT, "git", "-C", "-C DIR", "uses the hooks and configuration of any repository"),
            OPT(LONG, "git", "--git-dir", "--git-dir=DIR",
                "uses the hooks and configuration of any repository"),
            OPT(LONG, "git", "--work-tree", "--work-tree=DIR", WRITEDIR)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("log", "diff", "show", "format-patch", "whatchanged", "diff-tree",
                      "diff-index", "diff-files", "stash"),
        .options = OPTIONS(OPT(LONG, "git", "--o[utput]", "--output=FILE", WRITE),
                           OPT(LONG, "git", "--ext[-diff]", "--ext-diff",
                               "runs the external diff command the repository configures")),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("format-patch"),
        .options = OPTIONS(OPT(SHORT, "git format-patch", "-o", "-o DIR", WRITEDIR),
                           OPT(LONG, "git format-patch", "--o[utput-directory]",
                               "--output-directory=DIR", WRITEDIR)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("fetch", "pull", "ls-remote", "clone"),
        .options = OPTIONS(OPT(LONG, "git", "--u[pload-pack]", "--upload-pack=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("push"),
        .options = OPTIONS(OPT(LONG, "git push", "--r[eceive-pack]", "--receive-pack=COMMAND", RUN),
                           OPT(LONG, "git push", "--e[xec]", "--exec=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("archive"),
        .options = OPTIONS(OPT(LONG, "git archive", "--e[xec]", "--exec=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("clone"),
        .options = OPTIONS(
            OPT(SHORT, "git clone", "-u", "-u COMMAND", RUN),
            OPT(LONG, "git clone", "--t[emplate]", "--template=DIR",
                "installs hooks from any directory"),
            OPT(SHORT, "git clone", "-c", "-c NAME=VALUE", "sets configuration that runs commands"),
            OPT(LONG, "git clone", "--c[onfig]", "--config=NAME=VALUE",
                "sets configuration that runs commands")),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("rebase"),
        .options = OPTIONS(OPT(SHORT, "git rebase", "-x", "-x COMMAND", RUN),
                           OPT(LONG, "git rebase", "--ex[ec]", "--exec=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("difftool"),
        .options = OPTIONS(OPT(SHORT, "git difftool", "-x", "-x COMMAND", RUN),
                           OPT(LONG, "git difftool", "--ex[tcmd]", "--extcmd=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("grep"),
        .options = OPTIONS(
            OPT(SHORT, "git grep", "-O", "-OCOMMAND", RUN),
            OPT(LONG, "git grep", "--op[en-files-in-pager]", "--open-files-in-pager=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("bisect"),
        .options = OPTIONS(OPT(WORD, "git bisect", "run", "run COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("submodule"),
        .options = OPTIONS(OPT(WORD, "git submodule", "foreach", "foreach COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("filter-branch"),
        .options = OPTIONS(OPT(ANY, "git filter-branch", NULL, "--tree-filter COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("send-email"),
        .options =
            OPTIONS(OPT(LONG, "git send-email", "--se[ndmail-cmd]", "--sendmail-cmd=COMMAND", RUN),
                    OPT(LONG, "git send-email", "--sm[tp-server]", "--smtp-server=COMMAND", RUN),
                    OPT(LONG, "git send-email", "--to-[cmd]", "--to-cmd=COMMAND", RUN),
                    OPT(LONG, "git send-email", "--cc-[cmd]", "--cc-cmd=COMMAND", RUN),
                    OPT(LONG, "git send-email", "--h[eader-cmd]", "--header-cmd=COMMAND", RUN)),
    },
    {
        .programs = WORDS("git"),
        .subs = WORDS("config"),
        .options = OPTIONS(OPT(SHORT, "git config", "-f", "-f FILE", WRITE),
                           OPT(LONG, "git config", "--f[ile]", "--file=FILE", WRITE),
                           OPT(LONG, "git config", "--g[lobal]", "--global",
                               "sets configuration that runs commands in every repository"),
                           OPT(LONG, "git config", "--sy[stem]", "--system",
                               "sets configuration that runs commands in every repository")),
    },

    /* Front ends of git: they read the repository's configuration too. */
    {.programs = WORDS("tig", "gh", "glab", "hub", "lazygit", "gitk", "git-cola", "pre-commit"),
     .runs = TREE " (the repository's .git/config, hooks and the tools they name)" PROMPT},

    /* Build tools and package managers: their build files are code. */
    {.programs = WORDS("make", "gmake"),
     .runs = TREE " (the Makefile's recipes and $(shell ...))" PROMPT},
    {.programs = WORDS("cmake", "ninja", "meson", "just", "rake"),
     .runs = TREE
     " (its build file: CMakeLists.txt, build.ninja, meson.build, justfile, Rakefile)" PROMPT},
    {.programs = WORDS("npm", "npx", "pnpm", "yarn"),
     .runs = TREE " (package.json scripts, install scripts of dependencies, .npmrc)" PROMPT},
    {.programs = WORDS("cargo"),
     .runs = TREE " (build.rs, procedural macros, tests, .cargo/config.toml)" PROMPT},
    {.programs = WORDS("go"),
     .runs = TREE " (go run, go test, go generate, cgo, toolchains named in go.mod)" PROMPT},
    {.programs = WORDS("mvn", "mvnw", "gradle", "gradlew"),
     .runs = TREE " (build plugins and scripts, .mvn/jvm.config, the Gradle wrapper)" PROMPT},
    {.programs = WORDS("bundle"), .runs = TREE " (the Gemfile)" PROMPT},

    /* Interpreters. */
    {.programs = WORDS("python"),
     .flags = LINT_VERSIONED | LINT_RUNS_GIVEN,
     .runs = TREE " (the scripts it is given, and modules of the current directory, which are "
                  "imported before installed ones)" PROMPT},
    {.programs = WORDS("pytest", "py.test"),
     .runs = TREE " (conftest.py, the tests, plugins its configuration names)" PROMPT},
    {.programs = WORDS("pip"),
     .flags = LINT_VERSIONED,
     .runs = TREE " (setup.py and build backends of local packages, requirements files)" PROMPT},
    {.programs = WORDS("uv", "uvx", "poetry", "pdm", "hatch", "tox", "nox"),
     .runs = TREE " (pyproject.toml build backends and scripts, tox.ini, noxfile.py)" PROMPT},
    {.programs = WORDS("node", "deno", "bun"),
     .flags = LINT_RUNS_GIVEN,
     .runs = TREE " (the scripts it is given, node_modules, package.json scripts)" PROMPT},
    {.programs = WORDS("perl", "ruby", "php"),
     .flags = LINT_VERSIONED | LINT_RUNS_GIVEN,
     .runs = TREE " (the scripts it is given)" PROMPT},

    /* Programs that run whatever they are given. */
    {.programs = WORDS("sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "csh", "tcsh"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any command it is given when escalated (a script, or a -c string)" PROMPT},
    {.programs = WORDS("env", "xargs", "nice", "nohup", "timeout", "stdbuf", "ionice", "chrt",
                       "taskset", "setsid", "time", "watch", "flock", "unbuffer", "busybox"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any program named in its arguments when escalated" PROMPT
             " or write rules for the programs it would run"},
    {.programs = WORDS("sudo", "doas", "pkexec", "su"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any program as another user, root by default, when escalated" PROMPT},

    /* Programs whose every use may run what the command gives them. */
    {.programs = WORDS("vim", "vi", "ex", "view", "nvim", "vimdiff", "rvim", "evim", "gvim"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs any command it is given when escalated (-c, +COMMAND, -S, -es reading "
             "commands from its input, modelines)" PROMPT,
     .options = OPTIONS(EVERY("vim"))},
    {.programs = WORDS("ed", "red"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs any command its input names when escalated (!COMMAND, w FILE)" PROMPT,
     .options = OPTIONS(EVERY("ed"))},
    {.programs = WORDS("emacs", "emacsclient"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs any code it is given when escalated (--eval, -l, --batch)" PROMPT,
     .options = OPTIONS(EVERY("emacs"))},
    {.programs = WORDS("less", "more", "most"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs commands when escalated (LESSOPEN, a lesskey file, !COMMAND, +COMMAND) and "
             "writes a log file (-o)" PROMPT,
     .options = OPTIONS(EVERY("less"))},
    {.programs = WORDS("script", "strace", "ltrace", "gdb", "lldb", "valgrind", "perf", "expect",
                       "tmux", "screen", "parallel", "unshare", "nsenter", "chroot", "runuser",
                       "setpriv", "systemd-run", "bwrap", "firejail", "dbus-run-session",
                       "ssh-agent", "socat", "m4", "sqlite3", "faketime", "fakeroot"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = GIVEN,
     .options = OPTIONS(EVERY("the program"))},
    {.programs =
         WORDS("lua", "luajit", "tclsh", "wish", "Rscript", "R", "julia", "guile", "sbcl", "ocaml",
               "elixir", "erl", "escript", "scala", "groovy", "jshell", "osascript"),
     .flags = LINT_VERSIONED | LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = TREE " (the scripts it is given)" PROMPT,
     .options = OPTIONS(EVERY("the interpreter"))},
    {.programs = WORDS("awk", "gawk", "mawk", "nawk", "busybox-awk"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any command its program text names when escalated (system(), \"cmd\" | "
             "getline, print > FILE)" PROMPT,
     .options = OPTIONS(OPT(AWK_PROGRAM, "awk", NULL, "'PROGRAM'",
                            "a program that can run commands and write files"))},

    /* Options that write files or run commands. */
    {
        .programs = WORDS("ssh", "scp", "sftp", "slogin"),
        .options = OPTIONS(
            OPT(SHORT, "ssh", "-o", "-o ProxyCommand=COMMAND", RUN),
            OPT(SHORT, "ssh", "-F", "-F FILE", "reads options that run commands from any file"),
            OPT(SHORT, "ssh", "-S", "-S PROGRAM", RUN), OPT(SHORT, "ssh", "-E", "-E FILE", WRITE)),
    },
    {
        .programs = WORDS("zip", "zipnote", "zipsplit"),
        .options = OPTIONS(OPT(WORD, "zip", "-TT", "-TT COMMAND", RUN),
                           OPT(LONG, "zip", "--unzip-[command]", "--unzip-command=COMMAND", RUN)),
    },
    {
        .programs = WORDS("openssl"),
        .options =
            OPTIONS(OPT(WORD, "openssl", "-out", "-out FILE", WRITE),
                    OPT(WORD, "openssl", "-keyout", "-keyout FILE", WRITE),
                    OPT(WORD, "openssl", "-engine", "-engine ID", "loads any code"),
                    OPT(WORD, "openssl", "-provider-path", "-provider-path DIR", "loads any code"),
                    OPT(WORD, "openssl", "-writerand", "-writerand FILE", WRITE)),
    },
    {
        .programs = WORDS("man"),
        .options = OPTIONS(OPT(SHORT, "man", "-P", "-P PAGER", RUN),
                           OPT(LONG, "man", "--pa[ger]", "--pager=PAGER", RUN),
                           OPT(SHORT, "man", "-H", "-HBROWSER", RUN),
                           OPT(LONG, "man", "--h[tml]", "--html=BROWSER", RUN)),
    },
    {
        .programs = WORDS("nc", "ncat", "netcat"),
        .options = OPTIONS(OPT(SHORT, "nc", "-e", "-e COMMAND", RUN),
                           OPT(SHORT, "nc", "-c", "-c COMMAND", RUN),
                           OPT(LONG, "nc", "--exec", "--exec=COMMAND", RUN),
                           OPT(LONG, "nc", "--sh[-exec]", "--sh-exec=COMMAND", RUN),
                           OPT(LONG, "nc", "--lua[-exec]", "--lua-exec=FILE", RUN)),
    },
    {
        .programs = WORDS("find"),
        .flags = LINT_NO_DASHDASH,
        .runs = "runs any program named by -exec, -execdir, -ok or -okdir when escalated" PROMPT,
        .options = OPTIONS(OPT(WORD, "find", "-exec", "-exec COMMAND ;", RUN),
                           OPT(WORD, "find", "-execdir", "-execdir COMMAND ;", RUN),
                           OPT(WORD, "find", "-ok", "-ok COMMAND ;", RUN),
                           OPT(WORD, "find", "-okdir", "-okdir COMMAND ;", RUN),
                           OPT(WORD, "find", "-delete", "-delete", "deletes any file"),
                           OPT(WORD, "find", "-fprint", "-fprint FILE", WRITE),
                           OPT(WORD, "find", "-fprint0", "-fprint0 FILE", WRITE),
                           OPT(WORD, "find", "-fprintf", "-fprintf FILE FORMAT", WRITE),
                           OPT(WORD, "find", "-fls", "-fls FILE", WRITE)),
    },
    {
        .programs = WORDS("sort"),
        .options =
            OPTIONS(OPT(SHORT, "sort", "-o", "-o FILE", WRITE),
                    OPT(LONG, "sort", "--o[utput]", "--output=FILE", WRITE),
                    OPT(LONG, "sort", "--co[mpress-program]", "--compress-program=COMMAND", RUN)),
    },
    {
        .programs = WORDS("tar"),
        .flags = LINT_OLD_CLUSTER,
        .options = OPTIONS(
            OPT(LONG, "tar", "--to-c[ommand]", "--to-command=COMMAND", RUN),
            OPT(LONG, "tar", "--checkpoint-[action]", "--checkpoint-action=exec=COMMAND", RUN),
            OPT(SHORT, "tar", "-I", "-I COMMAND", RUN),
            OPT(LONG, "tar", "--use[-compress-program]", "--use-compress-program=COMMAND", RUN),
            OPT(SHORT, "tar", "-F", "-F COMMAND", RUN),
            OPT(LONG, "tar", "--inf[o-script]", "--info-script=COMMAND", RUN),
            OPT(LONG, "tar", "--new-v[olume-script]", "--new-volume-script=COMMAND", RUN),
            OPT(LONG, "tar", "--rsh[-command]", "--rsh-command=COMMAND", RUN),
            OPT(LONG, "tar", "--rm[t-command]", "--rmt-command=COMMAND", RUN),
            OPT(SHORT, "tar", "-C", "-C DIR", WRITEDIR),
            OPT(LONG, "tar", "--di[rectory]", "--directory=DIR", WRITEDIR),
            OPT(SHORT, "tar", "-P", "-P", "writes files at any absolute path the archive names"),
            OPT(LONG, "tar", "--ab[solute-names]", "--absolute-names",
                "writes files at any absolute path the archive names"),
            OPT(SHORT, "tar", "-c", "-c", TARWRITE),
            OPT(LONG, "tar", "--cr[eate]", "--create", TARWRITE),
            OPT(SHORT, "tar", "-r", "-r", TARWRITE),
            OPT(LONG, "tar", "--ap[pend]", "--append", TARWRITE),
            OPT(SHORT, "tar", "-u", "-u", TARWRITE),
            OPT(LONG, "tar", "--up[date]", "--update", TARWRITE),
            OPT(SHORT, "tar", "-A", "-A", TARWRITE),
            OPT(LONG, "tar", "--cat[enate]", "--catenate", TARWRITE),
            OPT(LONG, "tar", "--conc[atenate]", "--concatenate", TARWRITE),
            OPT(LONG, "tar", "--del[ete]", "--delete", TARWRITE),
            OPT(LONG, "tar", "--one[-top-level]", "--one-top-level=DIR", WRITEDIR),
            OPT(LONG, "tar", "--ind[ex-file]", "--index-file=FILE", WRITE),
            OPT(SHORT, "tar", "-x", "-x", TAREXTRACT),
            OPT(LONG, "tar", "--ex[tract]", "--extract", TAREXTRACT),
            OPT(LONG, "tar", "--get", "--get", TAREXTRACT)),
    },
    {
        .programs = WORDS("rsync"),
        .options = OPTIONS(OPT(SHORT, "rsync", "-e", "-e COMMAND", RUN),
                           OPT(LONG, "rsync", "--rsh", "--rsh=COMMAND", RUN),
                           OPT(LONG, "rsync", "--rsync-p[ath]", "--rsync-path=COMMAND", RUN),
                           OPT(ANY, "rsync", NULL, "SRC DEST", WRITE)),
    },
    {
        .programs = WORDS("sed"),
        .options =
            OPTIONS(OPT(SHORT, "sed", "-i", "-i", "edits any file in place"),
                    OPT(LONG, "sed", "--i[n-place]", "--in-place", "edits any file in place"),
                    OPT(SED_SCRIPT, "sed", "e", "'e COMMAND'", RUN),
                    OPT(SED_SCRIPT, "sed", "w", "'w FILE'", WRITE),
                    SANDBOXABLE(SHORT, "sed", "-f", "-f SCRIPT", SCRIPT),
                    SANDBOXABLE(LONG, "sed", "--fi[le]", "--file=SCRIPT", SCRIPT)),
    },
    {.programs = WORDS("tee"), .options = OPTIONS(OPT(ANY, "tee", NULL, "FILE", WRITE))},
    {.programs = WORDS("cp"), .options = OPTIONS(OPT(ANY, "cp", NULL, "SRC DEST", WRITE))},
    {.programs = WORDS("mv"), .options = OPTIONS(OPT(ANY, "mv", NULL, "SRC DEST", WRITE))},
    {.programs = WORDS("install"),
     .options = OPTIONS(OPT(ANY, "install", NULL, "SRC DEST", WRITE))},
    {.programs = WORDS("dd"), .options = OPTIONS(OPT(ANY, "dd", NULL, "of=FILE", WRITE))},
    {.programs = WORDS("truncate"),
     .options = OPTIONS(OPT(ANY, "truncate", NULL, "-s 0 FILE", "empties any file"))},
    {.programs = WORDS("ln"),
     .options = OPTIONS(OPT(ANY, "ln", NULL, "-sf TARGET FILE", "replaces any file with a link"))},
    {
        .programs = WORDS("curl"),
        .options = OPTIONS(OUT(SHORT, "curl", "-o", "-o FILE", WRITE),
                           OUT(LONG, "curl", "--output", "--output FILE", WRITE),
                           OPT(LONG, "curl", "--output-d[ir]", "--output-dir DIR", WRITEDIR),
                           OPT(SHORT, "curl", "-K", "-K FILE",
                               "reads options, output files included, from any file"),
                           OPT(LONG, "curl", "--conf[ig]", "--config FILE",
                               "reads options, output files included, from any file"),
                           OUT(SHORT, "curl", "-D", "-D FILE", WRITE),
                           OUT(LONG, "curl", "--du[mp-header]", "--dump-header FILE", WRITE),
                           OUT(SHORT, "curl", "-c", "-c FILE", WRITE),
                           OUT(LONG, "curl", "--cookie-j[ar]", "--cookie-jar FILE", WRITE),
                           OUT(LONG, "curl", "--trace", "--trace FILE", WRITE),
                           OUT(LONG, "curl", "--trace-a[scii]", "--trace-ascii FILE", WRITE),
                           OUT(LONG, "curl", "--std[err]", "--stderr FILE", WRITE),
                           OUT(LONG, "curl", "--lib[curl]", "--libcurl FILE", WRITE),
                           OUT(LONG, "curl", "--etag-s[ave]", "--etag-save FILE", WRITE),
                           OPT(LONG, "curl", "--hs[ts]", "--hsts FILE", WRITE),
                           OPT(LONG, "curl", "--alt[-svc]", "--alt-svc FILE", WRITE)),
    },
    {
        .programs = WORDS("wget"),
        .options = OPTIONS(
            OUT(SHORT, "wget", "-O", "-O FILE", WRITE),
            OUT(LONG, "wget", "--output-d[ocument]", "--output-document=FILE", WRITE),
            OUT(SHORT, "wget", "-o", "-o FILE", WRITE),
            OUT(LONG, "wget", "--output-f[ile]", "--output-file=FILE", WRITE),
            OUT(SHORT, "wget", "-a", "-a FILE", WRITE),
            OUT(LONG, "wget", "--ap[pend-output]", "--append-output=FILE", WRITE),
            OPT(SHORT, "wget", "-P", "-P DIR", WRITEDIR),
            OPT(LONG, "wget", "--directory-p[refix]", "--directory-prefix=DIR", WRITEDIR),
            OPT(SHORT, "wget", "-e", "-e COMMAND", "sets any option, output files included"),
            OPT(LONG, "wget", "--exe[cute]", "--execute=COMMAND",
                "sets any option, output files included"),
            OPT(LONG, "wget", "--conf[ig]", "--config=FILE",
                "reads options, output files included, from any file")),
    },
};

#define TABLE_LEN (sizeof table / sizeof table[0])

/* ---- matching ---- */

/* The last component of a path (the whole name when it has no '/'). */
static const char *
base_name(const char *prog)
{
    const char *slash = strrchr(prog, '/');
    return slash ? slash + 1 : prog;
}

/* name + digits and dots, starting with a digit: python3, python3.12. */
static bool
versioned_match(const char *base, const char *name)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0)
        return false;
    const char *v = name + n;
    if (*v < '0' || *v > '9')
        return false;
    for (; *v; v++)
        if ((*v < '0' || *v > '9') && *v != '.')
            return false;
    return true;
}

static bool
entry_names(const struct lint_entry *e, const char *name)
{
    for (const char *const *p = e->programs; *p; p++)
        if (strcmp(*p, name) == 0 || ((e->flags & LINT_VERSIONED) && versioned_match(*p, name)))
            return true;
    return false;
}

static bool
in_words(const char *const *words, const char *w)
{
    for (; words && *words; words++)
        if (strcmp(*words, w) == 0)
            return true;
    return false;
}

/* The program's LINT_LEADING entry, which says which options before its
 * subcommand take a value; NULL when it has none. */
static const struct lint_entry *
leading_entry(const char *name)
{
    for (size_t i = 0; i < TABLE_LEN; i++)
        if ((table[i].flags & LINT_LEADING) && entry_names(&table[i], name))
            return &table[i];
    return NULL;
}

/* A long option spec "--out[put]" against key (an argument up to its '='):
 * key must be a prefix of "--output" at least as long as "--out". */
static bool
long_matches(const char *spec, const char *key, size_t key_len)
{
    const char *open = strchr(spec, '[');
    size_t min = open ? (size_t)(open - spec) : strlen(spec);
    if (key_len < min || strncmp(key, spec, min) != 0)
        return false;
    if (!open)
        return key_len == min;
    const char *tail = open + 1;
    size_t tail_len = strcspn(tail, "]");
    size_t rest = key_len - min;
    return rest <= tail_len && strncmp(key + min, tail, rest) == 0;
}

/* A value that writes nowhere: standard output or /dev/null. */
static bool
harmless_output(const char *value)
{
    return value && (strcmp(value, "-") == 0 || strcmp(value, "/dev/null") == 0);
}

/*
 * Whether the word `arg` uses option o (LONG, SHORT or WORD); next is the
 * word after it (the value of an option given as "-o FILE"), or NULL.
 * cluster: arg is a cluster of short options even without a "-" (tar's
 * first word).
 */
static bool
option_used(const struct lint_option *o, const char *arg, const char *next, bool cluster)
{
    const char *value = NULL;
    switch (o->form) {
    case LINT_LONG: {
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            return false;
        const char *eq = strchr(arg, '=');
        size_t key_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (!long_matches(o->name, arg, key_len))
            return false;
        value = eq ? eq + 1 : next;
        break;
    }
    case LINT_SHORT: {
        const char *letters = NULL;
        if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0')
            letters = arg + 1;
        else if (cluster)
            letters = arg;
        const char *at = letters ? strchr(letters, o->name[1]) : NULL;
        if (!at)
            return false;
        value = at[1] ? at + 1 : next;
        break;
    }
    case LINT_WORD:
        return strcmp(arg, o->name) == 0;
    default:
        return false;
    }
    return !((o->flags & LINT_OUT) && harmless_output(value));
}

/* Whether the word before a "--" may have taken it as its value: an
 * option, other than "--name=value", could have. */
static bool
may_take_value(const char *word, bool cluster)
{
    if (cluster)
        return true;
    if (word[0] != '-' || strcmp(word, "-") == 0)
        return false;
    return !(word[1] == '-' && strchr(word, '='));
}

/* ---- sed scripts ---- */

enum { SED_RUNS = 0x1, SED_WRITES = 0x2 };

/* Skips to the end of the line (the '\n' or the NUL). */
static const char *
sed_line_end(const char *s)
{
    return s + strcspn(s, "\n");
}

/* Past the text of a/i/c: to the end of the line, and on over lines that
 * end in a backslash. */
static const char *
sed_text_end(const char *s)
{
    for (;;) {
        const char *e = sed_line_end(s);
        size_t backslashes = 0;
        for (const char *b = e; b > s && b[-1] == '\\'; b--)
            backslashes++;
        if (*e == '\0' || backslashes % 2 == 0)
            return e;
        s = e + 1;
    }
}

/* Past a delimited part of s or y (the delimiter included), honouring
 * backslash escapes; NULL when it does not end. */
static const char *
sed_delimited(const char *s, char delim)
{
    for (; *s; s++) {
        if (*s == '\\') {
            if (*++s == '\0')
                return NULL;
        } else if (*s == delim) {
            return s + 1;
        }
    }
    return NULL;
}

/* Past an address: a number (first~step), $, /regex/ or \cregexc with
 * I and M flags, and +N or ~N in a second address.  NULL on a bad one. */
static const char *
sed_address(const char *s)
{
    if (*s == '/' || *s == '\\') {
        char delim = *s == '/' ? '/' : s[1];
        if (*s == '\\' && (delim == '\0' || delim == '\n' || delim == '\\'))
            return NULL;
        s = sed_delimited(s + (*s == '/' ? 1 : 2), delim);
        while (s && (*s == 'I' || *s == 'M'))
            s++;
        return s;
    }
    if (*s == '$')
        return s + 1;
    if (*s == '+' || *s == '~')
        s++;
    while (*s >= '0' && *s <= '9')
        s++;
    if (*s == '~') {
        s++;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return s;
}

/*
 * What a GNU sed script may do: SED_RUNS for an e command or an s///e,
 * SED_WRITES for a w or W command or an s///w.  Anything it does not
 * understand counts as both: in doubt, a person is asked.
 */
static unsigned
sed_script_effects(const char *s)
{
    const unsigned unknown = SED_RUNS | SED_WRITES;
    unsigned fx = 0;
    while (*s) {
        if (strchr(" \t\n;}{", *s)) {
            s++;
            continue;
        }
        if (*s == '#') {
            s = sed_line_end(s);
            continue;
        }
        if (strchr("0123456789$/\\+~", *s)) {
            s = sed_address(s);
            if (s && *s == ',')
                s = sed_address(s + 1);
            if (!s)
                return unknown;
        }
        while (*s == ' ' || *s == '\t' || *s == '!')
            s++;
        char cmd = *s ? *s++ : '\0';
        switch (cmd) {
        case '\0':
            return fx;
        case '{':
        case '}':
            continue;
        case 'e':
            fx |= SED_RUNS;
            s = sed_line_end(s);
            continue;
        case 'w':
        case 'W':
            fx |= SED_WRITES;
            s = sed_line_end(s);
            continue;
        case 'a':
        case 'i':
        case 'c':
            s = sed_text_end(s);
            continue;
        case 'r':
        case 'R':
            s = sed_line_end(s);
            continue;
        case ':':
        case 'b':
        case 't':
        case 'T':
        case 'v':
            s += strcspn(s, ";\n");
            continue;
        case 'y':
        case 's': {
            char delim = *s;
            if (delim == '\0' || delim == '\n' || delim == '\\')
                return unknown;
            s = sed_delimited(s + 1, delim); /* the regex, or y's source */
            s = s ? sed_delimited(s, delim) : NULL;
            if (!s)
                return unknown;
            while (cmd == 's' && *s && strchr("gpiImM0123456789ew", *s)) {
                if (*s == 'e')
                    fx |= SED_RUNS;
                if (*s == 'w') {
                    fx |= SED_WRITES; /* the file name runs to the end of the line */
                    s = sed_line_end(s);
                    break;
                }
                s++;
            }
            continue;
        }
        default:
            if (strchr("=dDgGhHlnNpPqQxzF", cmd)) {
                while (*s == ' ' || *s == '\t' || (*s >= '0' && *s <= '9'))
                    s++; /* l and q, Q take a number */
                if (*s && !strchr(";\n}#", *s))
                    return unknown;
                continue;
            }
            return unknown;
        }
    }
    return fx;
}

/* Whether arg is sed's long option spec (see long_matches), and where its
 * value is: after '=' (*value), or the next word (*value NULL). */
static bool
sed_long(const char *arg, const char *spec, const char **value)
{
    const char *eq = strchr(arg, '=');
    size_t key_len = eq ? (size_t)(eq - arg) : strlen(arg);
    *value = eq ? eq + 1 : NULL;
    return long_matches(spec, arg, key_len);
}

/* Appends s and a newline to *buf; false on OOM. */
static bool
sed_append(char **buf, size_t *len, const char *s)
{
    size_t n = strlen(s);
    char *grown = realloc(*buf, *len + n + 2);
    if (!grown)
        return false;
    memcpy(grown + *len, s, n);
    grown[*len + n] = '\n';
    grown[*len + n + 1] = '\0';
    *buf = grown;
    *len += n + 1;
    return true;
}

static bool sed_sandboxed(const char *const *argv, size_t start, size_t argc);

/*
 * The effects of the scripts a sed command line gives (-e SCRIPT,
 * --expression=SCRIPT, or else its first operand), joined as sed joins
 * them; none with --sandbox, which refuses e and w.  Out of memory counts
 * as anything.
 */
static unsigned
sed_effects(const char *const *argv, size_t start, size_t argc)
{
    char *script = NULL;
    size_t len = 0;
    bool ok = true, given = false, options = true;
    const char *first_operand = NULL;
    for (size_t i = start; i < argc && ok; i++) {
        const char *a = argv[i];
        const char *text = NULL, *value = NULL;
        if (options && strcmp(a, "--") == 0) {
            options = false;
        } else if (!options || a[0] != '-' || a[1] == '\0') {
            if (!first_operand)
                first_operand = a;
        } else if (strcmp(a, "--sandbox") == 0) {
            /* counted only as sed reads it (sed_sandboxed) */
        } else if (sed_long(a, "--e[xpression]", &value)) {
            text = value ? value : (i + 1 < argc ? argv[++i] : "");
        } else if (sed_long(a, "--fi[le]", &value) || sed_long(a, "--l[ine-length]", &value)) {
            i += value ? 0 : 1;
        } else if (a[1] != '-' && strchr(a, 'e')) {
            /* -e SCRIPT, -ne SCRIPT, -neSCRIPT: e takes the rest, or the next word */
            const char *e = strchr(a, 'e');
            text = e[1] ? e + 1 : (i + 1 < argc ? argv[++i] : "");
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "-l") == 0) {
            i++;
        }
        if (text) {
            given = true;
            ok = sed_append(&script, &len, text);
        }
    }
    if (ok && !given && first_operand)
        ok = sed_append(&script, &len, first_operand);
    unsigned fx = ok ? (script ? sed_script_effects(script) : 0) : SED_RUNS | SED_WRITES;
    free(script);
    return sed_sandboxed(argv, start, argc) ? 0 : fx;
}

/*
 * Whether a sed command line really gives --sandbox: an option word of its
 * own, not the value of -e, -f, -l (alone or at the end of a cluster:
 * "-nf --sandbox" reads a script file named "--sandbox") or of their long
 * forms, and before a "--".  GNU sed takes options after operands too.
 * Only the full name counts (an abbreviation errs towards asking).
 */
static bool
sed_sandboxed(const char *const *argv, size_t start, size_t argc)
{
    for (size_t i = start; i < argc; i++) {
        const char *a = argv[i], *value = NULL;
        if (strcmp(a, "--") == 0)
            return false;
        if (a[0] != '-' || a[1] == '\0')
            continue;
        if (strcmp(a, "--sandbox") == 0)
            return true;
        if (a[1] == '-') {
            if ((sed_long(a, "--e[xpression]", &value) || sed_long(a, "--fi[le]", &value) ||
                 sed_long(a, "--l[ine-length]", &value)) &&
                !value)
                i++;
            continue;
        }
        /* a cluster: e, f and l take the rest, or the next word; i and
         * its suffix end it */
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'i')
                break;
            if (strchr("efl", *c)) {
                if (c[1] == '\0')
                    i++;
                break;
            }
        }
    }
    return false;
}

/* ---- awk programs ---- */

/* Whether awk program text may run a command or write a file: system(),
 * a pipe (print | "cmd", "cmd" | getline), a redirection (print > FILE;
 * a comparison reads the same and counts too), gawk's @load and @include.
 * Text it cannot read counts: in doubt, a person is asked. */
static bool
awk_text_dangerous(const char *text)
{
    return strpbrk(text, "|>@") != NULL || strstr(text, "system") != NULL ||
           strstr(text, "ENVIRON") != NULL;
}

/*
 * Whether an awk command line may run commands or write files: its
 * options are only -F and -v (alone, attached or with the next word, and
 * their long forms), "--" ends them, and the program (the first operand,
 * or every -e/--source text) is harmless.  Anything else (-f FILE, gawk's
 * -i, -l, -E, -o, -p, -d, -D, mawk's -W, an unknown option) counts.
 */
static bool
awk_dangerous(const char *const *argv, size_t start, size_t argc)
{
    bool given = false;
    for (size_t i = start; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            if (!given)
                return i + 1 >= argc || awk_text_dangerous(argv[i + 1]);
            return false;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (!given)
                return awk_text_dangerous(a);
            return false; /* operands: files and assignments */
        }
        const char *value = NULL;
        if (a[1] == 'F' || a[1] == 'v') {
            i += a[2] ? 0 : 1;
        } else if (long_matches("--field-separator", a, strcspn(a, "=")) ||
                   long_matches("--assign", a, strcspn(a, "="))) {
            i += strchr(a, '=') ? 0 : 1;
        } else if (strcmp(a, "-e") == 0 || sed_long(a, "--so[urce]", &value)) {
            const char *text = value ? value : (i + 1 < argc ? argv[++i] : "");
            if (awk_text_dangerous(text))
                return true;
            given = true;
        } else {
            return true;
        }
    }
    return false;
}

/* ---- the check of one command ---- */

/* The index of the subcommand of argv (the first word that is neither an
 * option nor an option's value), or argc. */
static size_t
subcommand_index(const struct lint_entry *lead, const char *const *argv, size_t argc)
{
    size_t i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0)
            break;
        if (lead && in_words(lead->takes_value, a))
            i++;
    }
    return i;
}

/* The first option of e that argv[start..argc) uses, scanning as the
 * entry says; NULL when none.  Does not look at LINT_ANY. */
static const struct lint_option *
scan_options(const struct lint_entry *e, const char *const *argv, size_t start, size_t argc)
{
    bool dashdash_ends = !(e->flags & LINT_NO_DASHDASH);
    bool sed = false, awk = false;
    for (const struct lint_option *o = e->options; o->form; o++) {
        sed = sed || o->form == LINT_SED_SCRIPT;
        awk = awk || o->form == LINT_AWK_PROGRAM;
    }
    bool sandboxed = sed && sed_sandboxed(argv, start, argc);
    for (size_t i = start; i < argc; i++) {
        const char *a = argv[i];
        bool cluster = (e->flags & LINT_OLD_CLUSTER) && i == start && a[0] != '-';
        const char *prev = i > start ? argv[i - 1] : NULL;
        bool prev_cluster =
            (e->flags & LINT_OLD_CLUSTER) && prev && i - 1 == start && prev[0] != '-';
        if (dashdash_ends && strcmp(a, "--") == 0 && !(prev && may_take_value(prev, prev_cluster)))
            break;
        for (const struct lint_option *o = e->options; o->form; o++)
            if (option_used(o, a, i + 1 < argc ? argv[i + 1] : NULL, cluster) &&
                !(sandboxed && (o->flags & LINT_SANDBOXABLE)))
                return o;
    }
    unsigned fx = 0;
    if (sed)
        fx = sed_effects(argv, start, argc); /* sed's own "--" handling */
    bool awk_fx = awk && awk_dangerous(argv, start, argc);
    for (const struct lint_option *o = e->options; o->form; o++) {
        if (o->form == LINT_SED_SCRIPT &&
            (fx & (strcmp(o->name, "e") == 0 ? SED_RUNS : SED_WRITES)))
            return o;
        if (o->form == LINT_AWK_PROGRAM && awk_fx)
            return o;
    }
    return NULL;
}

/* Which option of e argv uses; NULL when none (or e does not apply). */
static const struct lint_option *
entry_use(const struct lint_entry *e, const char *const *argv, size_t argc)
{
    if (!e->options)
        return NULL;
    if (e->flags & LINT_LEADING) {
        for (size_t i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (a[0] != '-' || strcmp(a, "-") == 0 || strcmp(a, "--") == 0)
                break;
            for (const struct lint_option *o = e->options; o->form; o++)
                if (option_used(o, a, i + 1 < argc ? argv[i + 1] : NULL, false))
                    return o;
            if (in_words(e->takes_value, a))
                i++;
        }
        return NULL;
    }
    size_t start = 1;
    if (e->subs) {
        size_t s = subcommand_index(leading_entry(base_name(argv[0])), argv, argc);
        if (s >= argc || !in_words(e->subs, argv[s]))
            return NULL;
        start = s + 1;
    }
    const struct lint_option *o = scan_options(e, argv, start, argc);
    if (o)
        return o;
    for (o = e->options; o->form; o++)
        if (o->form == LINT_ANY)
            return o;
    return NULL;
}

const char *
rules_lint_dangerous_use(const char *const *argv, size_t argc)
{
    if (!argv || argc == 0 || !argv[0])
        return NULL;
    for (size_t i = 1; i < argc; i++)
        if (!argv[i])
            argc = i; /* as exec would: the command ends at a NULL */
    const char *name = base_name(argv[0]);
    for (size_t i = 0; i < TABLE_LEN; i++) {
        if (!entry_names(&table[i], name))
            continue;
        const struct lint_option *o = entry_use(&table[i], argv, argc);
        /* a program whose every use writes where it is told (cp, tee) was
         * allowed for that very use: only a subcommand's counts */
        if (o && (o->form != LINT_ANY || table[i].subs || (table[i].flags & LINT_EVERY_USE)))
            return o->use;
    }
    return NULL;
}

bool
rules_lint_reads_repository(const char *program)
{
    if (!program)
        return true;
    const char *name = base_name(program);
    if (strcmp(name, "git") == 0 || strncmp(name, "git-", 4) == 0)
        return true;
    for (size_t i = 0; i < TABLE_LEN; i++) {
        if (table[i].runs && entry_names(&table[i], name))
            return true;
    }
    return false;
}

bool
rules_lint_too_broad(const char *const *prefix, size_t n)
{
    if (!prefix || n == 0 || !prefix[0])
        return true;
    const char *name = base_name(prefix[0]);
    for (size_t i = 0; i < TABLE_LEN; i++) {
        if (!entry_names(&table[i], name))
            continue;
        if ((table[i].flags & LINT_RUNS_GIVEN) || (n == 1 && table[i].runs))
            return true;
    }
    return false;
}

/* ---- the warnings about a policy ---- */

/* A word from a rule, kept on one line and inside the quotes around it:
 * '"' and '\' get a backslash, control characters become \n, \t, \xNN. */
static void
lb_word(struct textbuf *b, const char *w)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)w; *p; p++) {
        char esc[5] = {'\\', (char)*p, 0, 0, 0};
        if (*p == '"' || *p == '\\')
            textbuf_put(b, esc, 2);
        else if (*p == '\n')
            textbuf_put(b, "\\n", 2);
        else if (*p == '\t')
            textbuf_put(b, "\\t", 2);
        else if (*p < 0x20 || *p == 0x7f) {
            esc[1] = 'x';
            esc[2] = hex[*p >> 4];
            esc[3] = hex[*p & 15];
            textbuf_put(b, esc, 4);
        } else {
            textbuf_put(b, (const char *)p, 1);
        }
    }
}

/* "FILE:LINE:COL: warning: " for the rule. */
static void
lb_position(struct textbuf *b, const struct rules_prefix_rule *r)
{
    if (r->origin.file) {
        char num[32];
        lb_word(b, r->origin.file);
        snprintf(num, sizeof num, ":%u:%u: ", (unsigned)r->origin.line, (unsigned)r->origin.col);
        textbuf_puts(b, num);
    }
    textbuf_puts(b, "warning: ");
}

/* The rule as words, alternatives joined by '|': git log|diff. */
static void
lb_rule(struct textbuf *b, const struct rules_prefix_rule *r)
{
    lb_word(b, r->program);
    for (size_t i = 0; i < r->n_rest; i++) {
        textbuf_put(b, " ", 1);
        for (size_t j = 0; j < r->rest[i].n_alts; j++) {
            if (j)
                textbuf_put(b, "|", 1);
            lb_word(b, r->rest[i].alts[j]);
        }
    }
}

/* An open addressing set of the lines given, so that a rule made in a loop
 * warns once. */
struct seen {
    char **slots;
    size_t n_slots, n_used;
};

static char **
seen_slot(char **slots, size_t n_slots, const char *line)
{
    size_t mask = n_slots - 1;
    for (size_t i = rules_str_hash(line) & mask;; i = (i + 1) & mask)
        if (!slots[i] || strcmp(slots[i], line) == 0)
            return &slots[i];
}

/* 1 when line is new (and now kept), 0 when it was seen, -1 on OOM. */
static int
seen_add(struct seen *s, const char *line)
{
    if ((s->n_used + 1) * 2 > s->n_slots) {
        size_t n = s->n_slots ? s->n_slots * 2 : 16;
        char **slots = calloc(n, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < s->n_slots; i++)
            if (s->slots[i])
                *seen_slot(slots, n, s->slots[i]) = s->slots[i];
        free(s->slots);
        s->slots = slots;
        s->n_slots = n;
    }
    char **slot = seen_slot(s->slots, s->n_slots, line);
    if (*slot)
        return 0;
    *slot = strdup(line);
    if (!*slot)
        return -1;
    s->n_used++;
    return 1;
}

static void
seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n_slots; i++)
        free(s->slots[i]);
    free(s->slots);
}

struct lint_run {
    void (*warn)(void *arg, const char *line);
    void *arg;
    struct seen seen;
    size_t count;
    bool oom;
};

/* Gives b's line unless it was given before; takes care of b. */
static void
emit(struct lint_run *run, struct textbuf *b)
{
    int added = b->failed ? -1 : seen_add(&run->seen, b->data);
    if (added < 0) {
        run->oom = true;
    } else if (added > 0) {
        run->warn(run->arg, b->data);
        run->count++;
    }
    free(b->data);
    *b = (struct textbuf){0};
}

/* Whether some alternative of token t is, by itself, one of e's options. */
static bool
token_uses_option(const struct lint_entry *e, const struct rules_token *t)
{
    for (size_t j = 0; j < t->n_alts; j++)
        for (const struct lint_option *o = e->options; o->form; o++)
            if (option_used(o, t->alts[j], NULL, false))
                return true;
    return false;
}

static bool
token_all_options(const struct rules_token *t)
{
    for (size_t j = 0; j < t->n_alts; j++)
        if (t->alts[j][0] != '-' || strcmp(t->alts[j], "-") == 0 || strcmp(t->alts[j], "--") == 0)
            return false;
    return true;
}

static bool
token_is(const struct rules_token *t, const char *w)
{
    return t->n_alts == 1 && strcmp(t->alts[0], w) == 0;
}

static bool
token_may_take_value(const struct rules_token *t, bool cluster)
{
    for (size_t j = 0; j < t->n_alts; j++)
        if (may_take_value(t->alts[j], cluster))
            return true;
    return false;
}

/* Where the options of e go in a command the rule allows. */
struct opening {
    size_t n_words;  /* rule tokens the example keeps */
    size_t sub_at;   /* the token that is the subcommand, or SIZE_MAX */
    const char *sub; /* its alternative that is e's, or the subcommand to add */
    bool closed;     /* a "--" ends the options (LINT_ANY stays open) */
    bool sandboxed;  /* sed --sandbox: no e or w */
};

/*
 * Whether rule r (for one of e's programs) leaves e's options open, and
 * where (*at).  A prefix rule allows every command that starts with it, so
 * an option can always be added after the rule's words: unless the words
 * fix another subcommand, or end the options with "--".
 */
static bool
entry_open(const struct lint_entry *e, const struct rules_prefix_rule *r, struct opening *at)
{
    *at = (struct opening){.n_words = r->n_rest, .sub_at = SIZE_MAX};
    size_t i = 0;
    if (e->flags & LINT_LEADING) {
        for (; i < r->n_rest; i++) {
            const struct rules_token *t = &r->rest[i];
            if (token_uses_option(e, t))
                break;
            if (!token_all_options(t))
                return false;
            if (t->n_alts == 1 && in_words(e->takes_value, t->alts[0]))
                i++;
        }
        at->n_words = i < r->n_rest ? i : r->n_rest;
        return true;
    }
    if (e->subs) {
        const struct lint_entry *lead = leading_entry(base_name(r->program));
        for (; i < r->n_rest; i++) {
            const struct rules_token *t = &r->rest[i];
            for (size_t j = 0; j < t->n_alts && !at->sub; j++)
                if (in_words(e->subs, t->alts[j]))
                    at->sub = t->alts[j];
            if (at->sub) {
                at->sub_at = i++;
                break;
            }
            if (!token_all_options(t))
                return false;
            if (lead && t->n_alts == 1 && in_words(lead->takes_value, t->alts[0]))
                i++;
        }
        if (!at->sub)
            at->sub = e->subs[0];
    }
    size_t start = i;
    for (; i < r->n_rest; i++) {
        const struct rules_token *t = &r->rest[i];
        if (token_is(t, "--sandbox"))
            at->sandboxed = true;
        if (token_uses_option(e, t))
            break;
        bool prev_cluster = (e->flags & LINT_OLD_CLUSTER) && i > start && i - 1 == start &&
                            r->rest[i - 1].alts[0][0] != '-';
        if (!(e->flags & LINT_NO_DASHDASH) && token_is(t, "--") &&
            !(i > start && token_may_take_value(&r->rest[i - 1], prev_cluster))) {
            at->closed = true;
            break;
        }
    }
    return true;
}

static bool
option_open(const struct lint_option *o, const struct opening *at)
{
    if (o->form == LINT_ANY)
        return true;
    if (at->closed)
        return false;
    return !(at->sandboxed && (o->form == LINT_SED_SCRIPT || (o->flags & LINT_SANDBOXABLE)));
}

/* One word of the example: the alternative that is the subcommand there,
 * else the first. */
static const char *
example_word(const struct rules_prefix_rule *r, const struct opening *at, size_t i)
{
    return i == at->sub_at ? at->sub : r->rest[i].alts[0];
}

/* `allow rule "git log" also allows "git log --output=FILE" (writes any
 * file), ...`: the options of e that r leaves open, those with the same
 * effect together. */
static void
warn_options(struct lint_run *run, const struct lint_entry *e, const struct rules_prefix_rule *r)
{
    struct opening at;
    if (!entry_open(e, r, &at))
        return;
    bool any = false, all_any = true;
    for (const struct lint_option *o = e->options; o->form; o++)
        if (option_open(o, &at)) {
            any = true;
            all_any = all_any && o->form == LINT_ANY;
        }
    if (!any)
        return;
    struct textbuf b = {0};
    lb_position(&b, r);
    textbuf_puts(&b, "allow rule \"");
    lb_rule(&b, r);
    textbuf_puts(&b, all_any ? "\" allows " : "\" also allows ");
    bool first = true;
    for (const struct lint_option *o = e->options; o->form; o++) {
        if (!option_open(o, &at))
            continue;
        if (!first)
            textbuf_puts(&b, ", ");
        first = false;
        textbuf_put(&b, "\"", 1);
        lb_word(&b, r->program);
        for (size_t i = 0; i < at.n_words; i++) {
            textbuf_put(&b, " ", 1);
            lb_word(&b, example_word(r, &at, i));
        }
        if (at.sub && at.sub_at == SIZE_MAX) {
            textbuf_put(&b, " ", 1);
            lb_word(&b, at.sub);
        } else if (at.n_words > 0 && at.n_words - 1 != at.sub_at &&
                   may_take_value(example_word(r, &at, at.n_words - 1),
                                  (e->flags & LINT_OLD_CLUSTER) && at.n_words == 1)) {
            textbuf_puts(&b, " ..."); /* the rule's last word may take the next as its value */
        }
        textbuf_put(&b, " ", 1);
        textbuf_puts(&b, o->shown);
        textbuf_put(&b, "\"", 1);
        const struct lint_option *next = o + 1;
        while (next->form && !option_open(next, &at))
            next++;
        if (!next->form || strcmp(next->effect, o->effect) != 0) {
            textbuf_puts(&b, " (");
            textbuf_puts(&b, o->effect);
            textbuf_put(&b, ")", 1);
        }
    }
    textbuf_puts(&b, PROMPT);
    emit(run, &b);
}

static int
lint_rule(void *arg, const struct rules_prefix_rule *r)
{
    struct lint_run *run = arg;
    if (r->decision != RULES_DECISION_ALLOW)
        return 0;
    const char *name = base_name(r->program);
    for (size_t i = 0; i < TABLE_LEN && !run->oom; i++) {
        const struct lint_entry *e = &table[i];
        if (!entry_names(e, name))
            continue;
        if (e->runs) {
            struct textbuf b = {0};
            lb_position(&b, r);
            textbuf_puts(&b, "allow rule for \"");
            lb_word(&b, r->program);
            textbuf_puts(&b, "\" ");
            textbuf_puts(&b, e->runs);
            emit(run, &b);
        }
        if (e->options && !run->oom)
            warn_options(run, e, r);
    }
    return run->oom ? -1 : 0;
}

int
rules_lint_policy(const struct rules_policy *p, void (*warn)(void *arg, const char *line),
                  void *arg)
{
    struct lint_run run = {.warn = warn, .arg = arg};
    int rc = rules_policy_each_rule(p, lint_rule, &run);
    seen_free(&run.seen);
    if (rc != 0 || run.oom)
        return -1;
    return run.count > INT_MAX ? INT_MAX : (int)run.count;
}
