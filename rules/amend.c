/*
 * rules amend: read the old file under a directory lock, write old bytes +
 * new line to a temporary sibling, fsync, rename, fsync the directory.
 */
#include "rules/amend.h"

#include "common/macros.h"
#include "common/write_all.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct abuf {
    char *data;
    size_t len, cap;
};

static int
ab_put(struct abuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Appends s as a JSON string literal (what Codex writes, so files amended
 * by either tool look the same and deduplicate against each other). */
static int
ab_json_string(struct abuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    int rc = ab_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && rc == 0; p++) {
        char esc[7] = "\\u00";
        switch (*p) {
        case '"':
            rc = ab_put(b, "\\\"", 2);
            break;
        case '\\':
            rc = ab_put(b, "\\\\", 2);
            break;
        case '\n':
            rc = ab_put(b, "\\n", 2);
            break;
        case '\r':
            rc = ab_put(b, "\\r", 2);
            break;
        case '\t':
            rc = ab_put(b, "\\t", 2);
            break;
        case '\b':
            rc = ab_put(b, "\\b", 2);
            break;
        case '\f':
            rc = ab_put(b, "\\f", 2);
            break;
        default:
            if (*p < 0x20) {
                esc[4] = hex[*p >> 4];
                esc[5] = hex[*p & 15];
                rc = ab_put(b, esc, 6);
            } else {
                rc = ab_put(b, (const char *)p, 1);
            }
        }
    }
    return rc < 0 ? rc : ab_put(b, "\"", 1);
}

char *
rules_amend_rule_line(const char *const *prefix, size_t n)
{
    if (n == 0)
        return NULL;
    struct abuf b = {0};
    int rc = ab_put(&b, "prefix_rule(pattern=[", 21);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i)
            rc = ab_put(&b, ", ", 2);
        if (rc == 0)
            rc = ab_json_string(&b, prefix[i]);
    }
    if (rc == 0)
        rc = ab_put(&b, "], decision=\"allow\")", 20);
    if (rc < 0) {
        free(b.data);
        return NULL;
    }
    return b.data;
}

__attribute__((format(printf, 3, 4))) static int
fail(int rc, char **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err, fmt, ap) < 0)
        *err = NULL;
    va_end(ap);
    return rc;
}

/* mkdir -p: creates each missing component of dir. */
static int
make_dirs(const char *dir)
{
    char *copy = strdup(dir);
    if (!copy)
        return -ENOMEM;
    int rc = 0;
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(copy, 0777) < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    free(copy);
    return rc;
}

/* Reads the whole file at fd into b (b may be partly filled on error). */
static int
read_all(int fd, struct abuf *b)
{
    char chunk[65536];
    for (;;) {
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            return 0;
        if (ab_put(b, chunk, (size_t)got) < 0)
            return -ENOMEM;
    }
}

static bool
has_line(const char *text, size_t len, const char *line)
{
    size_t n = strlen(line);
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t l = end - i;
        /* A CRLF file's lines end in "\r" before the "\n". */
        if (l > 0 && text[end - 1] == '\r')
            l--;
        if (l == n && memcmp(text + i, line, n) == 0)
            return true;
        i = end + 1;
    }
    return false;
}

/* The file that really gets replaced: the target of a symlink at path. */
static char *
resolve_target(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return realpath(path, NULL);
    return strdup(path);
}

struct amend_job {
    const char *path; /* the real file */
    char *dir;
    char *tmp;
    int dirfd;
    struct abuf old;
    mode_t mode;  /* of the existing file */
    bool existed; /* else the new file gets 0666 less the umask */
};

/* Reads the current file (missing is empty) and the mode to keep. */
static int
read_current(struct amend_job *job, char **err)
{
    int fd = open(job->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0)
        return fail(-errno, err, "rules: cannot open %s: %s", job->path, strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && !S_ISREG(st.st_mode))
        rc = -EINVAL;
    if (rc == 0)
        rc = read_all(fd, &job->old);
    job->mode = st.st_mode & 07777;
    job->existed = true;
    close(fd);
    if (rc == -EINVAL)
        return fail(rc, err, "rules: %s is not a regular file", job->path);
    if (rc < 0)
        return fail(rc, err, "rules: cannot read %s: %s", job->path, strerror(-rc));
    return 0;
}

/*
 * Creates job->tmp, a new file beside the target.  Not mkostemp: its 0600
 * would need the umask to widen, and reading the umask means changing it,
 * which races with other threads.  open(O_EXCL, 0666) lets the kernel
 * apply the umask; a name already taken is retried.  Returns an fd or
 * -errno.
 */
static int
create_temp(struct amend_job *job)
{
    static unsigned counter;
    const char *base = strrchr(job->path, '/');
    base = base ? base + 1 : job->path;
    for (int attempt = 0; attempt < 100; attempt++) {
        free(job->tmp);
        unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        if (asprintf(&job->tmp, "%s/.%s.%ld.%u.tmp", job->dir, base, (long)getpid(), n) < 0) {
            job->tmp = NULL;
            return -ENOMEM;
        }
        int fd = open(job->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
    }
    return -EEXIST;
}

/* Writes the temporary file, makes it durable, and renames it in place. */
static int
replace_file(struct amend_job *job, const char *line, char **err)
{
    int fd = create_temp(job);
    if (fd < 0) {
        free(job->tmp);
        job->tmp = NULL;
        return fail(fd, err, "rules: cannot create a file in %s: %s", job->dir, strerror(-fd));
    }
    int rc = write_all(fd, job->old.data ? job->old.data : "", job->old.len);
    if (rc == 0 && job->old.len > 0 && job->old.data[job->old.len - 1] != '\n')
        rc = write_all(fd, "\n", 1);
    if (rc == 0)
        rc = write_all(fd, line, strlen(line));
    if (rc == 0)
        rc = write_all(fd, "\n", 1);
    if (rc == 0 && job->existed && fchmod(fd, job->mode) < 0)
        rc = -errno;
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(job->tmp, job->path) < 0)
        rc = -errno;
    if (rc < 0) {
        unlink(job->tmp);
        return fail(rc, err, "rules: cannot write %s: %s", job->path, strerror(-rc));
    }
    free(job->tmp);
    job->tmp = NULL;
    if (fsync(job->dirfd) < 0)
        return fail(-errno, err, "rules: cannot sync directory %s: %s", job->dir, strerror(errno));
    return 0;
}

static int
amend_locked(struct amend_job *job, const char *line, char **err)
{
    int rc = read_current(job, err);
    if (rc < 0)
        return rc;
    if (has_line(job->old.data ? job->old.data : "", job->old.len, line))
        return 0;
    return replace_file(job, line, err);
}

int
rules_amend_allow_prefix(const char *path, const char *const *prefix, size_t n, char **err)
{
    *err = NULL;
    if (n == 0)
        return fail(-EINVAL, err, "rules: prefix rule requires at least one token");
    if (!path || !*path)
        return fail(-EINVAL, err, "rules: no rules file to amend");
    char *line = rules_amend_rule_line(prefix, n);
    char *real = resolve_target(path);
    int real_errno = errno;
    char *dcopy = real ? strdup(real) : NULL;
    struct amend_job job = {.path = real, .dirfd = -1};
    int rc = 0;
    if (!real) {
        rc = fail(-real_errno, err, "rules: cannot resolve %s: %s", path, strerror(real_errno));
        goto out;
    }
    if (!line || !dcopy) {
        rc = fail(-ENOMEM, err, "rules: out of memory");
        goto out;
    }
    job.dir = strdup(dirname(dcopy));
    if (!job.dir) {
        rc = fail(-ENOMEM, err, "rules: out of memory");
        goto out;
    }
    rc = make_dirs(job.dir);
    if (rc < 0) {
        rc = fail(rc, err, "rules: cannot create directory %s: %s", job.dir, strerror(-rc));
        goto out;
    }
    job.dirfd = open(job.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (job.dirfd < 0) {
        rc = fail(-errno, err, "rules: cannot open directory %s: %s", job.dir, strerror(errno));
        goto out;
    }
    while ((rc = flock(job.dirfd, LOCK_EX)) < 0 && errno == EINTR)
        ;
    if (rc < 0) {
        rc = fail(-errno, err, "rules: cannot lock directory %s: %s", job.dir, strerror(errno));
        goto out;
    }
    rc = amend_locked(&job, line, err);
out:
    if (job.dirfd >= 0)
        close(job.dirfd); /* also drops the lock */
    free(job.old.data);
    free(job.dir);
    free(job.tmp);
    free(dcopy);
    free(real);
    free(line);
    return rc;
}

/* A subcommand or an option, as rules_amend_plain_words keeps them. */
static bool
is_plain_word(const char *w)
{
    size_t dashes = w[0] == '-' ? (w[1] == '-' ? 2 : 1) : 0;
    const char *p = w + dashes;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || strlen(w) > 40)
        return false;
    for (; *p; p++) {
        bool alnum =
            (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!alnum && *p != '_' && *p != '-')
            return false;
    }
    return true;
}

/* Programs whose arguments name the files they change or delete: "always
 * allow" for them is the command line the person saw, never a prefix of
 * it (an allowed `rm -rf` would remove any directory). */
static const char *const exact_programs[] = {
    "rm",      "rmdir", "unlink",   "shred",  "mv",      "cp",     "ln",    "install",
    "rsync",   "dd",    "truncate", "tee",    "chmod",   "chown",  "chgrp", "chattr",
    "setfacl", "touch", "mkdir",    "mknod",  "mkfifo",  "patch",  "split", "csplit",
    "sponge",  "wipe",  "srm",      "scp",    "gzip",    "gunzip", "bzip2", "xz",
    "unxz",    "zstd",  "unzstd",   "rename", "prename", "find",   "sed",   "perl",
};

bool
rules_amend_exact_program(const char *program)
{
    const char *slash = strrchr(program, '/');
    const char *name = slash ? slash + 1 : program;
    for (size_t i = 0; i < ARRAY_SIZE(exact_programs); i++) {
        if (strcmp(exact_programs[i], name) == 0)
            return true;
    }
    return false;
}

size_t
rules_amend_proposed_words(const char *program, const char *const *args, size_t nargs)
{
    if (rules_amend_exact_program(program)) {
        size_t n = 0;
        while (n < nargs && args[n])
            n++;
        return n;
    }
    return rules_amend_plain_words(args, nargs);
}

size_t
rules_amend_plain_words(const char *const *args, size_t nargs)
{
    size_t n = 0;
    while (n < nargs && args[n] && is_plain_word(args[n]))
        n++;
    return n;
}

char *
rules_amend_answers_file(const char *const *paths, size_t n, const char *default_dir)
{
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        bool is_dir = stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode);
        bool missing_default = !is_dir && default_dir && strcmp(paths[i], default_dir) == 0;
        char *file = NULL;
        if ((is_dir || missing_default) && asprintf(&file, "%s/default.rules", paths[i]) < 0)
            return NULL;
        if (file)
            return file;
    }
    return NULL;
}
