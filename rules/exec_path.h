/*
 * exec_path: what an exec's path really names, resolved one component at
 * a time the way the kernel does, with every symbolic link met on the way
 * written down.
 *
 * The sandboxed command chooses the path and may plant links anywhere it
 * can write, so the decision (decide.c) must see each name a program goes
 * by and where each of those names lives: a link the sandbox could have
 * made or repointed must never vouch for what runs outside it.  realpath(3)
 * answers only the last question and forgets the links.
 */
#ifndef EXECGATE_RULES_EXEC_PATH_H
#define EXECGATE_RULES_EXEC_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Links followed before giving up (the kernel's limit). */
#define EXEC_PATH_MAX_LINKS 40

/* One symbolic link met during the walk. */
struct exec_path_link {
    char *path;   /* the link itself, as an absolute path with no link before it */
    bool program; /* it stood for the last component: the program goes by its name */
};

struct exec_path {
    char *absolute; /* the path as given, made absolute against cwd (not normalised) */
    struct exec_path_link *links;
    size_t n_links;
    char *canonical; /* every link followed, "." and ".." gone; NULL: see error */
    int error;       /* why canonical is NULL (ENOENT, ENOTDIR, ELOOP, EACCES...), else 0 */
    struct stat st;  /* the canonical file's, when canonical is set */
};

/*
 * Walks path (relative ones start at cwd, which must be absolute) into
 * *out, which the caller releases with exec_path_release whatever the
 * result.  A path that does not resolve is not a failure: out->canonical
 * is then NULL and out->error says why.  Returns 0, or -ENOMEM.
 */
int exec_path_walk(const char *path, const char *cwd, struct exec_path *out);

/* dir and name joined with one '/' (none added when dir ends in one), as
 * a new string; NULL when out of memory. */
char *exec_path_join(const char *dir, const char *name);

/* Frees what exec_path_walk stored; safe on a zeroed struct. */
void exec_path_release(struct exec_path *p);

/*
 * The file a shell finds for a command name without a '/': the first
 * regular, executable file of that name in the directories of $PATH (an
 * empty entry is the current directory; unset PATH is
 * /usr/local/bin:/usr/bin:/bin), as posix_spawnp and Bash do.  Malloc'd,
 * or NULL when there is none (or out of memory).
 */
char *exec_path_search(const char *name);

/* How deep #! lines are followed (the kernel stops at 4 too). */
#define EXEC_PATH_MAX_INTERPRETERS 4

/* The #! interpreters of a script: the names it also goes by. */
struct exec_interpreters {
    struct exec_path walks[EXEC_PATH_MAX_INTERPRETERS]; /* each walked as the program is */
    const char *names[EXEC_PATH_MAX_INTERPRETERS];      /* canonical, else absolute (walks') */
    size_t n;
    bool script; /* the program itself starts with "#!" */
};

/*
 * Reads the "#!" line of the file walk resolved to, then of its
 * interpreter, and so on (EXEC_PATH_MAX_INTERPRETERS deep), walking each
 * interpreter's path from cwd into *in (release it with
 * exec_interpreters_release whatever the result).  Never blocks: only a
 * regular file is opened, never a FIFO or a device.  Returns 0 (an
 * unreadable file just ends the chain), or -ENOMEM.
 */
int exec_path_interpreters(const struct exec_path *walk, const char *cwd,
                           struct exec_interpreters *in);

/* Frees what exec_path_interpreters stored; safe on a zeroed struct. */
void exec_interpreters_release(struct exec_interpreters *in);

/*
 * The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 PROG
 * ARGS`) is an interpreter too: it runs PROG's code without an exec of
 * PROG.  Whether file (a canonical path, so every link to the loader is
 * followed first) is a loader, by its last component: glibc's ld-*.so*,
 * ld64.so*, ld.so and musl's ld-musl-*.so*.  A renamed copy is not
 * recognised (as a renamed copy of any program is not).
 */
bool exec_path_is_loader(const char *file);

/*
 * The index in argv of the program a loader's command line runs, past the
 * loader's own options (`--library-path DIR`, `--preload LIST`, `--argv0
 * NAME`, `--audit LIST`, `--inhibit-rpath LIST`, the hwcaps lists, flags
 * such as `--inhibit-cache`, and `--`); 0 when there is none.
 */
size_t exec_path_loader_program(const char *const *argv, size_t argc);

/*
 * Opens (O_PATH, close-on-exec) what path names for the process pid, as
 * its exec would: a relative path from start (its cwd or dirfd), an
 * absolute one from root (its root), both directories the caller opened
 * through /proc/PID.  Each component is opened without following links;
 * a link's text is followed from the process's root, never above it (as
 * the kernel does for the process), except two kinds that the kernel
 * resolves for the reader: "self" and "thread-self" at the top of a
 * procfs become that process's own ids in that procfs's pid namespace,
 * and the per-process links below it (fd/N, cwd, root, exe) are opened
 * through, which jumps to the object itself (a deleted file, a memfd).
 * Returns the fd, or -1 with errno (ENOENT when the process is not
 * visible in the procfs its path names).
 */
int exec_path_open_as(pid_t pid, int root, int start, const char *path);

#endif
