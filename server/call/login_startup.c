#include "server/call/login_startup.h"

#include "common/strfmt.h"
#include "common/strv.h"
#include "sandbox/policy/path_list.h"
#include "server/call/login_shells_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- startup files ---- */

struct path_set {
    char **v;
    size_t n, cap;
    bool oom;
};

/* Adds p (taken) unless it is there or the list is full. */
static void
path_set_take(struct path_set *s, char *p)
{
    if (!p) {
        s->oom = true;
        return;
    }
    if (s->n >= LOGIN_SNAPSHOT_MAX_FILES || path_list_has(s->v, s->n, p)) {
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
scan_sources(struct path_set *s, const char *text, size_t len, const char *home)
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
            path_set_take(s, p);
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
add_dir_scripts(struct path_set *s, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct path_set found = {0};
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".sh") == 0)
            path_set_take(&found, strfmt("%s%s", dir, e->d_name));
    }
    closedir(d);
    if (found.n > 1)
        qsort(found.v, found.n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < found.n; i++)
        path_set_take(s, found.v[i]);
    free(found.v);
    if (found.oom)
        s->oom = true;
}

char **
login_snapshot_startup_files(const struct login_snapshot_kind *k, const char *home)
{
    struct path_set s = {0};
    /* zsh reads its personal files from $ZDOTDIR when the server's
     * environment (which the shells inherit) sets it */
    const char *zdotdir = k->use == USE_ZDOTDIR ? getenv("ZDOTDIR") : NULL;
    for (size_t i = 0; k->startup[i]; i++) {
        const char *f = k->startup[i];
        if (strncmp(f, "~/", 2) == 0) {
            if (home && home[0] == '/')
                path_set_take(&s, strfmt("%s/%s", home, f + 2));
            if (zdotdir && zdotdir[0] == '/')
                path_set_take(&s, strfmt("%s/%s", zdotdir, f + 2));
            continue;
        }
        size_t n = strlen(f);
        if (f[n - 1] == '/') {
            path_set_take(&s, strndup(f, n - 1));
            add_dir_scripts(&s, f);
            continue;
        }
        path_set_take(&s, strdup(f));
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
        strv_free(s.v);
        if (s.oom)
            return NULL;
        return calloc(1, sizeof(char *));
    }
    return s.v;
}

/* ---- fingerprints ---- */

void
login_fingerprint_release(struct fingerprint *f)
{
    strv_free(f->files);
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

int
login_fingerprint_take(struct fingerprint *f, const struct login_snapshot_kind *k, const char *home)
{
    memset(f, 0, sizeof(*f));
    f->files = login_snapshot_startup_files(k, home);
    if (!f->files)
        return -1;
    while (f->files[f->n])
        f->n++;
    f->marks = calloc(f->n ? f->n : 1, sizeof(*f->marks));
    if (!f->marks) {
        login_fingerprint_release(f);
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
bool
login_fingerprint_holds(const struct fingerprint *f)
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
