#include "server/call/login_snapshot.h"

#include "common/log.h"
#include "common/strfmt.h"
#include "common/strv.h"
#include "common/write_all.h"
#include "server/call/login_shells_int.h"
#include "server/call/login_startup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* memfd_create's flag for a memfd that can never be executed (Linux
 * 6.3; older headers lack it) */
#ifdef MFD_NOEXEC_SEAL
#define LOGIN_MFD_NOEXEC_SEAL MFD_NOEXEC_SEAL
#else
#define LOGIN_MFD_NOEXEC_SEAL 0x0008U
#endif

/* ---- the store ---- */

enum entry_state { ENTRY_EMPTY, ENTRY_CAPTURING, ENTRY_READY, ENTRY_FAILED };

struct entry {
    enum entry_state state;
    char *key;
    const struct login_snapshot_kind *kind;
    int fd; /* the sealed memfd holding it, once taken; -1: none */
    struct fingerprint fp;
    uint64_t taken_ms, used_ms;
};

struct login_snapshot {
    char *dir;
    /* the directory, open and locked (flock) for the server's life: a
     * store whose lock anyone can take is one whose server is gone */
    int lock_fd;
    struct entry entries[LOGIN_SNAPSHOT_MAX_KEPT];
    struct entry *capturing; /* the one capture running, or NULL */
    char nonce[33];
    int fd_at;    /* the number login calls inherit a snapshot's memfd at */
    bool zdotdir; /* ZSH_ZDOTDIR is made */
};

/* ZSH_ZDOTDIR's .zshenv and .zlogin (login_shells_int.h). */
static const char zsh_zshenv[] = "builtin setopt no_global_rcs\n";
static const char zsh_zlogin[] = "builtin . \"$" ZSH_SNAPSHOT_VAR "\"\n";

/* Whether dir is a directory of this user's that nobody else may write
 * in: what may hold the store.  0, or an errno value (EPERM: another's, or
 * writable by others). */
static int
private_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    if (st.st_uid != geteuid() || (st.st_mode & 022))
        return EPERM;
    return 0;
}

/* Makes dir (mode 0700) when missing; 0 or an errno value. */
static int
make_dir(const char *dir)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return errno;
    return 0;
}

/* A store younger than this is never taken for a stale one: its server
 * may be between mkdtemp and flock. */
#define STALE_MIN_AGE_S 60

/* Removes ZSH_ZDOTDIR's files (all a store ever holds on disk) below the
 * store open at dfd, then ZSH_ZDOTDIR.  0, or an errno value. */
static int
remove_store_files(int dfd)
{
    int zfd = openat(dfd, ZSH_ZDOTDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (zfd >= 0) {
        static const char *const names[] = {".zshenv", ".zlogin"};
        for (size_t i = 0; i < 2; i++)
            (void)unlinkat(zfd, names[i], 0); /* ENOENT: not made */
        close(zfd);
    }
    if (unlinkat(dfd, ZSH_ZDOTDIR, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return errno;
    return 0;
}

/*
 * Removes the stores below parent that a server killed (SIGKILL, a crash)
 * left: directories execgate-login-* of this user's, older than
 * STALE_MIN_AGE_S, whose lock nobody holds.  What is not the server's in
 * one (a foreign file) keeps that directory, said in the log.  A stale
 * store holds no snapshot (those are memfds, gone with their server):
 * this keeps the directory from filling up.
 */
static void
sweep_stale(const char *parent)
{
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = pfd >= 0 ? fdopendir(pfd) : NULL;
    if (!d) {
        if (pfd >= 0)
            close(pfd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "execgate-login-", 15) != 0)
            continue;
        int dfd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            continue;
        struct stat st;
        if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || now - st.st_mtime < STALE_MIN_AGE_S ||
            flock(dfd, LOCK_EX | LOCK_NB) < 0) {
            close(dfd);
            continue;
        }
        int err = remove_store_files(dfd);
        if (!err && unlinkat(pfd, e->d_name, AT_REMOVEDIR) < 0)
            err = errno;
        if (err)
            log_warn("login snapshots: cannot remove the stale store %s/%s: %s", parent, e->d_name,
                     strerror(err));
        else
            log_info("login snapshots: removed the stale store %s/%s (its server is gone)", parent,
                     e->d_name);
        close(dfd);
    }
    closedir(d);
}

char *
login_snapshot_parent(char **err)
{
    *err = NULL;
    const char *run = getenv("XDG_RUNTIME_DIR");
    if (run && run[0] == '/') {
        int e = private_dir(run);
        if (!e)
            return strdup(run);
        log_info("login snapshots: not in XDG_RUNTIME_DIR %s: %s", run,
                 e == EPERM ? "not a private directory of this user's" : strerror(e));
    }
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char *base = NULL;
    if (state && state[0] == '/')
        base = strdup(state);
    else if (home && home[0] == '/')
        base = strfmt("%s/.local/state", home);
    else {
        *err = strdup("login snapshots: no XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME to keep them "
                      "in (never /tmp)");
        return NULL;
    }
    char *dir = base ? strfmt("%s/execgate", base) : NULL;
    int e = dir ? 0 : ENOMEM;
    if (!e && !(state && state[0] == '/')) {
        /* ~/.local first, then ~/.local/state, each made private when made */
        char *local = strfmt("%s/.local", home);
        e = local ? make_dir(local) : ENOMEM;
        free(local);
    }
    if (!e)
        e = make_dir(base);
    if (!e)
        e = make_dir(dir);
    if (!e)
        e = private_dir(dir);
    free(base);
    if (e) {
        *err = e == ENOMEM ? strdup("out of memory")
                           : strfmt("login snapshots: cannot keep them in %s: %s", dir,
                                    e == EPERM ? "not a private directory of this user's (mode "
                                                 "0700, owned by the user)"
                                               : strerror(e));
        free(dir);
        return NULL;
    }
    return dir;
}

struct login_snapshot *
login_snapshot_new(const char *parent, int fd_at, char **err)
{
    struct login_snapshot *ls = calloc(1, sizeof(*ls));
    char *tmpl = strfmt("%s/execgate-login-XXXXXX", parent);
    if (!ls || !tmpl) {
        free(ls);
        free(tmpl);
        *err = strdup("out of memory");
        return NULL;
    }
    sweep_stale(parent);
    if (!mkdtemp(tmpl)) {
        *err =
            strfmt("login snapshots: cannot make a directory in %s: %s", parent, strerror(errno));
        free(tmpl);
        free(ls);
        return NULL;
    }
    ls->lock_fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ls->lock_fd < 0 || flock(ls->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        *err = strfmt("login snapshots: cannot lock %s: %s", tmpl, strerror(errno));
        if (ls->lock_fd >= 0)
            close(ls->lock_fd);
        rmdir(tmpl);
        free(tmpl);
        free(ls);
        return NULL;
    }
    ls->dir = tmpl;
    ls->fd_at = fd_at;
    for (size_t i = 0; i < LOGIN_SNAPSHOT_MAX_KEPT; i++)
        ls->entries[i].fd = -1;
    return ls;
}

const char *
login_snapshot_dir(const struct login_snapshot *ls)
{
    return ls->dir;
}

static void
entry_clear(struct entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    free(e->key);
    login_fingerprint_release(&e->fp);
    memset(e, 0, sizeof(*e));
    e->fd = -1;
}

/* Removes ZSH_ZDOTDIR and its files, when made. */
static void
zdotdir_remove(struct login_snapshot *ls)
{
    if (!ls->zdotdir)
        return;
    static const char *const names[] = {ZSH_ZDOTDIR "/.zshenv", ZSH_ZDOTDIR "/.zlogin"};
    for (size_t i = 0; i < 2; i++) {
        char *p = strfmt("%s/%s", ls->dir, names[i]);
        if (p && unlink(p) < 0 && errno != ENOENT)
            log_warn("login snapshots: cannot remove %s: %s", p, strerror(errno));
        free(p);
    }
    char *d = strfmt("%s/" ZSH_ZDOTDIR, ls->dir);
    if (d && rmdir(d) < 0)
        log_warn("login snapshots: cannot remove %s: %s", d, strerror(errno));
    free(d);
    ls->zdotdir = false;
}

void
login_snapshot_free(struct login_snapshot *ls)
{
    if (!ls)
        return;
    for (size_t i = 0; i < LOGIN_SNAPSHOT_MAX_KEPT; i++)
        entry_clear(&ls->entries[i]);
    zdotdir_remove(ls);
    if (rmdir(ls->dir) < 0)
        log_warn("login snapshots: cannot remove %s: %s (the server's own files in it are "
                 "removed)",
                 ls->dir, strerror(errno));
    close(ls->lock_fd);
    free(ls->dir);
    free(ls);
}

static struct entry *
find_entry(struct login_snapshot *ls, const struct login_snapshot_kind *k, const char *key)
{
    for (size_t i = 0; i < LOGIN_SNAPSHOT_MAX_KEPT; i++) {
        struct entry *e = &ls->entries[i];
        if (e->key && e->kind == k && strcmp(e->key, key) == 0)
            return e;
    }
    return NULL;
}

enum login_snapshot_state
login_snapshot_get(struct login_snapshot *ls, const struct login_snapshot_kind *k, const char *key,
                   const char *home, uint64_t now_ms, int *fd)
{
    *fd = -1;
    if (!k->capture)
        return LOGIN_SNAPSHOT_FALLBACK;
    struct entry *e = find_entry(ls, k, key);
    if (e && e->state == ENTRY_CAPTURING)
        return LOGIN_SNAPSHOT_WAIT;
    bool fresh =
        e && now_ms - e->taken_ms < LOGIN_SNAPSHOT_MAX_AGE_MS && login_fingerprint_holds(&e->fp);
    if (fresh) {
        e->used_ms = now_ms;
        if (e->state == ENTRY_FAILED)
            return LOGIN_SNAPSHOT_FALLBACK;
        *fd = e->fd;
        return LOGIN_SNAPSHOT_READY;
    }
    return ls->capturing ? LOGIN_SNAPSHOT_WAIT : LOGIN_SNAPSHOT_CAPTURE;
}

/* The entry for key: its own, else an empty one, else the least recently
 * used (its file goes). */
static struct entry *
claim_entry(struct login_snapshot *ls, const struct login_snapshot_kind *k, const char *key)
{
    struct entry *e = find_entry(ls, k, key);
    if (e)
        return e;
    struct entry *lru = NULL;
    for (size_t i = 0; i < LOGIN_SNAPSHOT_MAX_KEPT; i++) {
        struct entry *x = &ls->entries[i];
        if (!x->key)
            return x;
        if (x != ls->capturing && (!lru || x->used_ms < lru->used_ms))
            lru = x;
    }
    if (lru)
        entry_clear(lru);
    return lru;
}

static int
make_nonce(char out[33])
{
    unsigned char raw[16];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

char *
login_snapshot_begin(struct login_snapshot *ls, const struct login_snapshot_kind *k,
                     const char *key, const char *home, uint64_t now_ms)
{
    if (ls->capturing || !k->capture || make_nonce(ls->nonce) < 0)
        return NULL;
    struct entry *e = claim_entry(ls, k, key);
    if (!e)
        return NULL;
    struct fingerprint fp;
    char *command = k->capture(ls->nonce);
    char *key_copy = e->key ? NULL : strdup(key);
    if (!command || (!e->key && !key_copy) || login_fingerprint_take(&fp, k, home) < 0) {
        free(command);
        free(key_copy);
        return NULL;
    }
    if (key_copy)
        e->key = key_copy;
    e->kind = k;
    login_fingerprint_release(&e->fp);
    e->fp = fp;
    e->state = ENTRY_CAPTURING;
    e->taken_ms = e->used_ms = now_ms;
    ls->capturing = e;
    return command;
}

/* ---- the capture's output ---- */

/* Finds the snapshot between the markers: the output must end with the
 * end marker's line.  *body, *body_len: the snapshot; *noise_len: what
 * came before the begin marker's line. */
static int
split_output(const char *out, size_t len, const char *nonce, const char **body, size_t *body_len,
             size_t *noise_len)
{
    char *begin = strfmt("\n" MARK_BEGIN "%s\n", nonce);
    char *end = strfmt("\n" MARK_END "%s\n", nonce);
    int rc = -1;
    if (begin && end) {
        size_t bl = strlen(begin), el = strlen(end);
        const char *b = memmem(out, len, begin, bl);
        if (b && len >= el && memcmp(out + len - el, end, el) == 0 &&
            (size_t)(b - out) + bl <= len - el + 1) {
            *noise_len = (size_t)(b - out);
            *body = b + bl;
            size_t stop = len - el + 1; /* the body keeps its last newline */
            *body_len = stop > (size_t)(*body - out) ? stop - (size_t)(*body - out) : 0;
            rc = 0;
        }
    }
    free(begin);
    free(end);
    return rc;
}

/* Writes text to path, mode 0600, made or emptied as how says (O_EXCL: a
 * new file, O_TRUNC: any); 0, or an errno value. */
static int
write_whole(const char *path, int how, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | how | O_CLOEXEC | O_NOFOLLOW, 0600);
    int err = fd < 0 ? errno : -write_all(fd, text, len);
    if (fd >= 0 && close(fd) < 0 && !err)
        err = errno;
    return err;
}

/*
 * The snapshot as a memfd nobody can change: written here, then sealed
 * (no write, no resize, no more seals), so that what a login call sources
 * is what the capture produced, byte for byte, whoever else runs as this
 * user.  First comes one line that closes the number it is inherited at
 * (fd_at) in the shell that sources it, so that the command's programs
 * do not inherit it: the shell reads the snapshot through a file of its
 * own, opened by name (/proc/self/fd/N).  Returns the fd, or -1 with *why
 * (malloc'd, NULL: out of memory).
 */
static int
make_sealed(const char *body, size_t len, int fd_at, char **why)
{
    char *head = strfmt("exec %d<&-\n", fd_at);
    if (!head) {
        *why = NULL;
        return -1;
    }
    /* never executable (Linux 6.3), which vm.memfd_noexec may require;
     * older kernels refuse the flag */
    int fd = memfd_create("execgate-login-snapshot",
                          MFD_CLOEXEC | MFD_ALLOW_SEALING | LOGIN_MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = memfd_create("execgate-login-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int err = fd < 0 ? errno : 0;
    const char *parts[2] = {head, body};
    size_t lens[2] = {strlen(head), len};
    for (int i = 0; i < 2 && !err; i++)
        err = -write_all(fd, parts[i], lens[i]);
    free(head);
    if (!err &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
        err = errno;
    if (err) {
        if (fd >= 0)
            close(fd);
        *why = strfmt("cannot keep the snapshot in a sealed memfd: %s", strerror(err));
        return -1;
    }
    return fd;
}

/* Makes ZSH_ZDOTDIR, mode 0700, with its .zshenv and .zlogin, once.
 * Returns 0, or -1 with *why (malloc'd, NULL: out of memory). */
static int
zdotdir_make(struct login_snapshot *ls, char **why)
{
    if (ls->zdotdir)
        return 0;
    char *d = strfmt("%s/" ZSH_ZDOTDIR, ls->dir);
    char *env = strfmt("%s/" ZSH_ZDOTDIR "/.zshenv", ls->dir);
    char *login = strfmt("%s/" ZSH_ZDOTDIR "/.zlogin", ls->dir);
    int rc = -1;
    *why = NULL;
    if (d && env && login) {
        int err = mkdir(d, 0700) < 0 ? errno : 0;
        const char *what = d;
        if (!err) {
            ls->zdotdir = true; /* zdotdir_remove takes away what is there */
            what = env;
            err = write_whole(env, O_EXCL, zsh_zshenv, sizeof(zsh_zshenv) - 1);
        }
        if (!err) {
            what = login;
            err = write_whole(login, O_EXCL, zsh_zlogin, sizeof(zsh_zlogin) - 1);
        }
        if (err) {
            *why = strfmt("cannot write %s: %s", what, strerror(err));
            zdotdir_remove(ls);
        } else {
            rc = 0;
        }
    }
    free(d);
    free(env);
    free(login);
    return rc;
}

int
login_snapshot_done(struct login_snapshot *ls, bool ran, const char *out, size_t len, char **noise,
                    char **why)
{
    *noise = NULL;
    *why = NULL;
    struct entry *e = ls->capturing;
    if (!e)
        return 0;
    ls->capturing = NULL;
    const char *body = NULL;
    size_t body_len = 0, noise_len = len;
    bool split = split_output(out, len, ls->nonce, &body, &body_len, &noise_len) == 0;
    if (noise_len > 0) {
        size_t n = noise_len < LOGIN_SNAPSHOT_LOG_BYTES ? noise_len : LOGIN_SNAPSHOT_LOG_BYTES;
        *noise = strfmt("%.*s%s", (int)n, out, n < noise_len ? "[...]" : "");
    }
    int fd = -1;
    if (!ran)
        *why = strdup("the login shell did not run to its end");
    else if (!split)
        *why = strdup("the login shell's output is not a snapshot (does the profile redirect "
                      "or close its output?)");
    else if (e->kind->use != USE_ZDOTDIR || zdotdir_make(ls, why) == 0)
        fd = make_sealed(body, body_len, ls->fd_at, why);
    if (fd < 0) {
        e->state = ENTRY_FAILED;
        return -1;
    }
    if (e->fd >= 0)
        close(e->fd);
    e->fd = fd;
    e->state = ENTRY_READY;
    return 0;
}

void
login_snapshot_abandon(struct login_snapshot *ls)
{
    struct entry *e = ls->capturing;
    if (!e)
        return;
    ls->capturing = NULL;
    entry_clear(e);
}

/* ---- using it ---- */

/* env (n entries and room for one more) with var ("NAME=...", taken) in
 * the place of NAME's entry, or added at the end. */
static void
env_put(char **env, size_t *n, char *var)
{
    size_t len = strcspn(var, "=") + 1;
    for (size_t i = 0; i < *n; i++) {
        if (strncmp(env[i], var, len) == 0) {
            free(env[i]);
            env[i] = var;
            return;
        }
    }
    env[(*n)++] = var;
    env[*n] = NULL;
}

int
login_snapshot_use(const struct login_snapshot *ls, const struct login_snapshot_kind *k,
                   char ***argvp, char ***envp)
{
    char **argv = *argvp, **env = *envp;
    size_t argc = strv_len(argv), envc = strv_len(env);
    if (!env || argc < 3 || strcmp(argv[argc - 2], "-lc") != 0)
        return -1;
    bool bash = k->use == USE_BASH_ENV;
    char *flag = bash ? strdup("--noprofile") : NULL;
    char *var = strfmt("%s=/proc/self/fd/%d", bash ? "BASH_ENV" : ZSH_SNAPSHOT_VAR, ls->fd_at);
    char *zdot = bash ? NULL : strfmt("ZDOTDIR=%s/" ZSH_ZDOTDIR, ls->dir);
    char **a = var && (bash ? flag != NULL : zdot != NULL)
                   ? realloc(argv, (argc + 2) * sizeof(char *))
                   : NULL;
    if (a)
        *argvp = argv = a;
    char **e = a ? realloc(env, (envc + 3) * sizeof(char *)) : NULL;
    if (!e) {
        free(flag);
        free(var);
        free(zdot);
        return -1;
    }
    *envp = env = e;
    if (bash) {
        memmove(argv + argc - 1, argv + argc - 2, 3 * sizeof(char *));
        argv[argc - 2] = flag;
    } else {
        env_put(env, &envc, zdot);
    }
    env_put(env, &envc, var);
    return 0;
}
