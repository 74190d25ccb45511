/*
 * lint table: the entries (lint_table.h).  A list of known cases, not a
 * proof that anything else is safe.
 */
#include "rules/lint_table.h"

#include "common/macros.h"
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

#define RUN        "runs any command"
#define WRITE      "writes any file"
#define WRITEDIR   "writes files in any directory"
#define TARWRITE   "writes the archive -f names, any file"
#define SCRIPT     "runs a script that can run commands and write files"
#define TREE       "runs code from the working tree when escalated"
#define TAREXTRACT "writes files wherever the archive's names and the links in the directory lead"
#define GIVEN                                                                                      \
    "runs any command it is given, or that its input names, when escalated" LINT_USE_PROMPT
#define EVERY(prog) OPT(ANY, prog, NULL, "...", "runs commands its arguments or input name")

const struct lint_entry lint_table[] = {
    /* git: everything it reads from .git, then its options. */
    {
        .programs = WORDS("git"),
        .flags = LINT_LEADING,
        .runs = TREE " (hooks, and core.fsmonitor, core.pager, filters and aliases in "
                     ".git/config)" LINT_USE_PROMPT,
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
     .runs = TREE " (the repository's .git/config, hooks and the tools they name)" LINT_USE_PROMPT},

    /* Build tools and package managers: their build files are code. */
    {.programs = WORDS("make", "gmake"),
     .runs = TREE " (the Makefile's recipes and $(shell ...))" LINT_USE_PROMPT},
    {.programs = WORDS("cmake", "ninja", "meson", "just", "rake"),
     .runs = TREE " (its build file: CMakeLists.txt, build.ninja, meson.build, justfile, "
                  "Rakefile)" LINT_USE_PROMPT},
    {.programs = WORDS("npm", "npx", "pnpm", "yarn"),
     .runs =
         TREE " (package.json scripts, install scripts of dependencies, .npmrc)" LINT_USE_PROMPT},
    {.programs = WORDS("cargo"),
     .runs = TREE " (build.rs, procedural macros, tests, .cargo/config.toml)" LINT_USE_PROMPT},
    {.programs = WORDS("go"),
     .runs =
         TREE " (go run, go test, go generate, cgo, toolchains named in go.mod)" LINT_USE_PROMPT},
    {.programs = WORDS("mvn", "mvnw", "gradle", "gradlew"),
     .runs =
         TREE " (build plugins and scripts, .mvn/jvm.config, the Gradle wrapper)" LINT_USE_PROMPT},
    {.programs = WORDS("bundle"), .runs = TREE " (the Gemfile)" LINT_USE_PROMPT},

    /* Interpreters. */
    {.programs = WORDS("python"),
     .flags = LINT_VERSIONED | LINT_RUNS_GIVEN,
     .runs = TREE " (the scripts it is given, and modules of the current directory, which are "
                  "imported before installed ones)" LINT_USE_PROMPT},
    {.programs = WORDS("pytest", "py.test"),
     .runs = TREE " (conftest.py, the tests, plugins its configuration names)" LINT_USE_PROMPT},
    {.programs = WORDS("pip"),
     .flags = LINT_VERSIONED,
     .runs = TREE
     " (setup.py and build backends of local packages, requirements files)" LINT_USE_PROMPT},
    {.programs = WORDS("uv", "uvx", "poetry", "pdm", "hatch", "tox", "nox"),
     .runs =
         TREE " (pyproject.toml build backends and scripts, tox.ini, noxfile.py)" LINT_USE_PROMPT},
    {.programs = WORDS("node", "deno", "bun"),
     .flags = LINT_RUNS_GIVEN,
     .runs = TREE " (the scripts it is given, node_modules, package.json scripts)" LINT_USE_PROMPT},
    {.programs = WORDS("perl", "ruby", "php"),
     .flags = LINT_VERSIONED | LINT_RUNS_GIVEN,
     .runs = TREE " (the scripts it is given)" LINT_USE_PROMPT},

    /* Programs that run whatever they are given. */
    {.programs = WORDS("sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "csh", "tcsh"),
     .flags = LINT_RUNS_GIVEN,
     .runs =
         "runs any command it is given when escalated (a script, or a -c string)" LINT_USE_PROMPT},
    {.programs = WORDS("env", "xargs", "nice", "nohup", "timeout", "stdbuf", "ionice", "chrt",
                       "taskset", "setsid", "time", "watch", "flock", "unbuffer", "busybox"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any program named in its arguments when escalated" LINT_USE_PROMPT
             " or write rules for the programs it would run"},
    {.programs = WORDS("sudo", "doas", "pkexec", "su"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any program as another user, root by default, when escalated" LINT_USE_PROMPT},

    /* Programs whose every use may run what the command gives them. */
    {.programs = WORDS("vim", "vi", "ex", "view", "nvim", "vimdiff", "rvim", "evim", "gvim"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs any command it is given when escalated (-c, +COMMAND, -S, -es reading "
             "commands from its input, modelines)" LINT_USE_PROMPT,
     .options = OPTIONS(EVERY("vim"))},
    {.programs = WORDS("ed", "red"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs any command its input names when escalated (!COMMAND, w FILE)" LINT_USE_PROMPT,
     .options = OPTIONS(EVERY("ed"))},
    {.programs = WORDS("emacs", "emacsclient"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs any code it is given when escalated (--eval, -l, --batch)" LINT_USE_PROMPT,
     .options = OPTIONS(EVERY("emacs"))},
    {.programs = WORDS("less", "more", "most"),
     .flags = LINT_RUNS_GIVEN | LINT_EVERY_USE,
     .runs = "runs commands when escalated (LESSOPEN, a lesskey file, !COMMAND, +COMMAND) and "
             "writes a log file (-o)" LINT_USE_PROMPT,
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
     .runs = TREE " (the scripts it is given)" LINT_USE_PROMPT,
     .options = OPTIONS(EVERY("the interpreter"))},
    {.programs = WORDS("awk", "gawk", "mawk", "nawk", "busybox-awk"),
     .flags = LINT_RUNS_GIVEN,
     .runs = "runs any command its program text names when escalated (system(), \"cmd\" | "
             "getline, print > FILE)" LINT_USE_PROMPT,
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
        .runs = "runs any program named by -exec, -execdir, -ok or -okdir when "
                "escalated" LINT_USE_PROMPT,
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

const size_t lint_table_len = ARRAY_SIZE(lint_table);
