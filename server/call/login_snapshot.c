#include "server/call/login_snapshot.h"

#include "common/log.h"
#include "common/strfmt.h"
#include "proto/esc_env.h"

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

/* ---- shell kinds ---- */

/* How a login call sources its snapshot (login_snapshot_use). */
enum use_how {
    USE_BASH_ENV, /* bash --noprofile -lc, BASH_ENV naming the file */
    USE_ZDOTDIR,  /* zsh -lc with the store's private ZDOTDIR (ZSH_ZDOTDIR) */
};

struct login_snapshot_kind {
    const char *name;
    /* what a login shell reads: absolute, or "~/" for HOME (and, for zsh,
     * for $ZDOTDIR too); a directory ending in "/" stands for its *.sh
     * scripts (and itself: its mtime says when one is added or removed) */
    const char *const *startup;
    /* the capture's command text for marker nonce; NULL: no capture */
    char *(*capture)(const char *nonce);
    enum use_how use;
};

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
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
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

/* ---- startup files ---- */

struct strv {
    char **v;
    size_t n, cap;
    bool oom;
};

static bool
strv_has(const struct strv *s, const char *p)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->v[i], p) == 0)
            return true;
    }
    return false;
}

/* Adds p (taken) unless it is there or the list is full. */
static void
strv_take(struct strv *s, char *p)
{
    if (!p) {
        s->oom = true;
        return;
    }
    if (s->n >= LOGIN_SNAPSHOT_MAX_FILES || strv_has(s, p)) {
        free(p);
        return;
    }
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **v = realloc(s->v, cap * sizeof(*v));
        if (!v) {
            free(p);
            s->oom = true;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = p;
    s->v[s->n] = NULL;
}

void
login_snapshot_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The path a source command names, when it is literal enough to follow:
 * quotes dropped, "~/", "$HOME/" and "${HOME}/" expanded; NULL (and
 * *oom false) when it is not, or names a relative path. */
static char *
sourced_path(const char *w, size_t len, const char *home, bool *oom)
{
    char *word = strndup(w, len);
    if (!word) {
        *oom = true;
        return NULL;
    }
    /* quotes anywhere are dropped: "$HOME"/.bashrc and "$HOME/.bashrc" alike */
    size_t k = 0;
    for (size_t i = 0; word[i]; i++) {
        if (word[i] != '"' && word[i] != '\'')
            word[k++] = word[i];
    }
    word[k] = '\0';
    static const char *const home_forms[] = {"~/", "$HOME/", "${HOME}/"};
    char *out = NULL;
    for (size_t i = 0; i < 3 && !out; i++) {
        size_t n = strlen(home_forms[i]);
        if (strncmp(word, home_forms[i], n) == 0) {
            if (!home) {
                free(word);
                return NULL;
            }
            out = strfmt("%s/%s", home, word + n);
            if (!out)
                *oom = true;
        }
    }
    if (!out && word[0] == '/' && !*oom) {
        out = strdup(word);
        *oom = out == NULL;
    }
    free(word);
    if (out && (strchr(out, '$') || strchr(out, '`') || strchr(out, '*'))) {
        free(out);
        out = NULL;
    }
    return out;
}

static bool
is_sep(char c)
{
    return c == ' ' || c == '\t' || c == ';' || c == '&' || c == '|' || c == '(' || c == '{' ||
           c == '\n';
}

/* The files text sources by a literal path: `. FILE` and `source FILE` at
 * the start of a command (after a separator or `then`, `do`, `&&`...). */
static void
scan_sources(struct strv *s, const char *text, size_t len, const char *home)
{
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && !is_sep(text[i - 1]))
            continue;
        size_t skip = 0;
        if (text[i] == '.' && i + 1 < len && (text[i + 1] == ' ' || text[i + 1] == '\t'))
            skip = 1;
        else if (len - i > 7 && memcmp(text + i, "source", 6) == 0 &&
                 (text[i + 6] == ' ' || text[i + 6] == '\t'))
            skip = 6;
        if (!skip)
            continue;
        size_t a = i + skip;
        while (a < len && (text[a] == ' ' || text[a] == '\t'))
            a++;
        size_t b = a;
        /* the word: up to a blank or the end of the command ("${HOME}" is one word) */
        while (b < len && !strchr(" \t\n;&|)", text[b]))
            b++;
        if (b == a)
            continue;
        bool oom = false;
        char *p = sourced_path(text + a, b - a, home, &oom);
        if (oom)
            s->oom = true;
        else if (p)
            strv_take(s, p);
        i = b - 1;
    }
}

/* Reads what of path scan_sources needs; NULL when it cannot be read. */
static char *
read_head(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        size_t want = (size_t)st.st_size < LOGIN_SNAPSHOT_SCAN_BYTES ? (size_t)st.st_size
                                                                     : LOGIN_SNAPSHOT_SCAN_BYTES;
        buf = malloc(want + 1);
        size_t got = 0;
        while (buf && got < want) {
            ssize_t n = read(fd, buf + got, want - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (buf) {
            buf[got] = '\0';
            *len = got;
        }
    }
    close(fd);
    return buf;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir's *.sh scripts, sorted (as /etc/profile runs them). */
static void
add_dir_scripts(struct strv *s, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct strv found = {0};
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".sh") == 0)
            strv_take(&found, strfmt("%s%s", dir, e->d_name));
    }
    closedir(d);
    if (found.n > 1)
        qsort(found.v, found.n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < found.n; i++)
        strv_take(s, found.v[i]);
    free(found.v);
    if (found.oom)
        s->oom = true;
}

char **
login_snapshot_startup_files(const struct login_snapshot_kind *k, const char *home)
{
    struct strv s = {0};
    /* zsh reads its personal files from $ZDOTDIR when the server's
     * environment (which the shells inherit) sets it */
    const char *zdotdir = k->use == USE_ZDOTDIR ? getenv("ZDOTDIR") : NULL;
    for (size_t i = 0; k->startup[i]; i++) {
        const char *f = k->startup[i];
        if (strncmp(f, "~/", 2) == 0) {
            if (home && home[0] == '/')
                strv_take(&s, strfmt("%s/%s", home, f + 2));
            if (zdotdir && zdotdir[0] == '/')
                strv_take(&s, strfmt("%s/%s", zdotdir, f + 2));
            continue;
        }
        size_t n = strlen(f);
        if (f[n - 1] == '/') {
            strv_take(&s, strndup(f, n - 1));
            add_dir_scripts(&s, f);
            continue;
        }
        strv_take(&s, strdup(f));
    }
    /* what they source, and what that sources: the list grows as it is read */
    for (size_t i = 0; i < s.n && !s.oom; i++) {
        size_t len = 0;
        char *text = read_head(s.v[i], &len);
        if (text)
            scan_sources(&s, text, len, home);
        free(text);
    }
    if (s.oom || !s.v) {
        login_snapshot_strv_free(s.v);
        if (s.oom)
            return NULL;
        return calloc(1, sizeof(char *));
    }
    return s.v;
}

/* ---- fingerprints ---- */

/* What stat says of one startup file; all zero when it is missing. */
struct file_mark {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
};

struct fingerprint {
    char **files;
    struct file_mark *marks;
    size_t n;
};

static void
fingerprint_release(struct fingerprint *f)
{
    login_snapshot_strv_free(f->files);
    free(f->marks);
    memset(f, 0, sizeof(*f));
}

static void
mark_file(const char *path, struct file_mark *m)
{
    struct stat st;
    memset(m, 0, sizeof(*m));
    if (stat(path, &st) < 0)
        return;
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    m->size = st.st_size;
    m->mtime = st.st_mtim;
    m->ctime = st.st_ctim;
}

static int
fingerprint_take(struct fingerprint *f, const struct login_snapshot_kind *k, const char *home)
{
    memset(f, 0, sizeof(*f));
    f->files = login_snapshot_startup_files(k, home);
    if (!f->files)
        return -1;
    while (f->files[f->n])
        f->n++;
    f->marks = calloc(f->n ? f->n : 1, sizeof(*f->marks));
    if (!f->marks) {
        fingerprint_release(f);
        return -1;
    }
    for (size_t i = 0; i < f->n; i++)
        mark_file(f->files[i], &f->marks[i]);
    return 0;
}

static bool
same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* Whether every file f watched is as it was (a new source line changes
 * its file, which is watched). */
static bool
fingerprint_holds(const struct fingerprint *f)
{
    for (size_t i = 0; i < f->n; i++) {
        struct file_mark m;
        mark_file(f->files[i], &m);
        const struct file_mark *o = &f->marks[i];
        if (m.dev != o->dev || m.ino != o->ino || m.size != o->size ||
            !same_time(m.mtime, o->mtime) || !same_time(m.ctime, o->ctime))
            return false;
    }
    return true;
}

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

/* zsh: the private ZDOTDIR (in the store's directory) of login calls that
 * source a snapshot, and the variable naming the snapshot for its .zlogin.
 * zsh reads /etc/zsh/zshenv, then ZSH_ZDOTDIR/.zshenv, which turns
 * GLOBAL_RCS off (the snapshot holds what /etc/zsh/zprofile and
 * /etc/zsh/zlogin did); there is no .zprofile; ZSH_ZDOTDIR/.zlogin, the
 * last startup file, sources the snapshot, which sets ZDOTDIR back to the
 * login shell's (or unsets it), unsets ZSH_SNAPSHOT_VAR and ends with the
 * login shell's options (GLOBAL_RCS among them, for /etc/zsh/zlogout). */
#define ZSH_ZDOTDIR      "zsh"
#define ZSH_SNAPSHOT_VAR "EXECGATE_LOGIN_SNAPSHOT"
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
    fingerprint_release(&e->fp);
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
    bool fresh = e && now_ms - e->taken_ms < LOGIN_SNAPSHOT_MAX_AGE_MS && fingerprint_holds(&e->fp);
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
    if (!command || (!e->key && !key_copy) || fingerprint_take(&fp, k, home) < 0) {
        free(command);
        free(key_copy);
        return NULL;
    }
    if (key_copy)
        e->key = key_copy;
    e->kind = k;
    fingerprint_release(&e->fp);
    e->fp = fp;
    e->state = ENTRY_CAPTURING;
    e->taken_ms = e->used_ms = now_ms;
    ls->capturing = e;
    return command;
}

/* ---- the capture's output ---- */

#define MARK_BEGIN "EXECGATE-LOGIN-SNAPSHOT-BEGIN-"
#define MARK_END   "EXECGATE-LOGIN-SNAPSHOT-END-"

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
    int err = fd < 0 ? errno : 0;
    for (size_t done = 0; !err && done < len;) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            err = errno;
        else
            done += (size_t)n;
    }
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
    for (int i = 0; i < 2 && !err; i++) {
        for (size_t done = 0; !err && done < lens[i];) {
            ssize_t n = write(fd, parts[i] + done, lens[i] - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                err = errno;
            else
                done += (size_t)n;
        }
    }
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
    size_t argc = 0, envc = 0;
    while (argv[argc])
        argc++;
    while (env && env[envc])
        envc++;
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
    char *skip = strdup(bash_skip);
    if (!skip)
        return NULL;
    /* the server's own variables join the list */
    static const char *const own[] = {ESC_ENV_ALL};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        char *more = strfmt("%s|%s", skip, own[i]);
        free(skip);
        if (!(skip = more))
            return NULL;
    }
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
    char *skip = strdup(zsh_skip);
    if (!skip)
        return NULL;
    static const char *const own[] = {ESC_ENV_ALL};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        char *more = strfmt("%s|%s", skip, own[i]);
        free(skip);
        if (!(skip = more))
            return NULL;
    }
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
