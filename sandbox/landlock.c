/*
 * landlock: rulesets through the raw system calls.  The system headers may
 * predate the running kernel, so the ABI constants this module needs are
 * defined here (values fixed by the kernel's UAPI).
 */
#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule       445
#define SYS_landlock_restrict_self  446
#endif

#define LL_CREATE_RULESET_VERSION 1u
#define LL_RULE_PATH_BENEATH      1

#define FS_EXECUTE     (1ull << 0)
#define FS_WRITE_FILE  (1ull << 1)
#define FS_READ_FILE   (1ull << 2)
#define FS_READ_DIR    (1ull << 3)
#define FS_REMOVE_DIR  (1ull << 4)
#define FS_REMOVE_FILE (1ull << 5)
#define FS_MAKE_CHAR   (1ull << 6)
#define FS_MAKE_DIR    (1ull << 7)
#define FS_MAKE_REG    (1ull << 8)
#define FS_MAKE_SOCK   (1ull << 9)
#define FS_MAKE_FIFO   (1ull << 10)
#define FS_MAKE_BLOCK  (1ull << 11)
#define FS_MAKE_SYM    (1ull << 12)
#define FS_REFER       (1ull << 13) /* ABI 2 */
#define FS_TRUNCATE    (1ull << 14) /* ABI 3 */
#define FS_IOCTL_DEV   (1ull << 15) /* ABI 5 */

#define NET_BIND_TCP    (1ull << 0) /* ABI 4 */
#define NET_CONNECT_TCP (1ull << 1)

#define SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define SCOPE_SIGNAL        (1ull << 1)

/* Rights that apply to a file itself (the rest only make sense on a
 * directory, and the kernel refuses them on a file). */
#define FS_FILE_RIGHTS (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV)
#define FS_READ_RIGHTS (FS_EXECUTE | FS_READ_FILE | FS_READ_DIR)

/* As the kernel's struct landlock_ruleset_attr, up to ABI 6; its size
 * argument tells the kernel how much of it we fill. */
struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct __attribute__((packed)) ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
};

struct sandbox_ll {
    int fd;
    int abi;
    uint64_t fs;     /* handled filesystem rights */
    uint64_t net;    /* handled network rights */
    uint64_t scoped; /* scopes in force */
    const char *missing[4];
    size_t nmissing;
};

int
sandbox_ll_abi(void)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    if (abi < 0)
        return 0;
    const char *max = getenv("EXECGATE_SANDBOX_MAX_ABI");
    if (max != NULL && *max != '\0') {
        char *end;
        long m = strtol(max, &end, 10);
        if (*end == '\0' && m >= 0 && m < abi)
            abi = m;
    }
    return (int)abi;
}

static uint64_t
fs_rights_for_abi(int abi)
{
    uint64_t r = (FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
    if (abi >= 2)
        r |= FS_REFER;
    if (abi >= 3)
        r |= FS_TRUNCATE;
    if (abi >= 5)
        r |= FS_IOCTL_DEV;
    return r;
}

static void
note_missing(struct sandbox_ll *ll, const char *what)
{
    if (ll->nmissing < sizeof ll->missing / sizeof ll->missing[0])
        ll->missing[ll->nmissing++] = what;
}

struct sandbox_ll *
sandbox_ll_new(int abi, bool fs, bool tcp, bool scope)
{
    struct sandbox_ll *ll = calloc(1, sizeof *ll);
    if (ll == NULL)
        return NULL;
    ll->fd = -1;
    ll->abi = abi;
    if (fs) {
        ll->fs = fs_rights_for_abi(abi);
        if (abi < 3)
            note_missing(ll, "landlock-truncate");
    }
    if (tcp && abi >= 4)
        ll->net = NET_BIND_TCP | NET_CONNECT_TCP;
    else if (tcp)
        note_missing(ll, "landlock-tcp");
    if (scope && abi >= 6)
        ll->scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL;
    else if (scope)
        note_missing(ll, "landlock-scope");

    struct ll_ruleset_attr attr = {ll->fs, ll->net, ll->scoped};
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    if (abi < 1) {
        sandbox_ll_free(ll);
        errno = EOPNOTSUPP;
        return NULL;
    }
    long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0) {
        int e = errno;
        sandbox_ll_free(ll);
        errno = e;
        return NULL;
    }
    ll->fd = (int)fd; /* the kernel makes it close-on-exec */
    return ll;
}

static uint64_t
rights_for(enum sandbox_ll_access access)
{
    switch (access) {
    case SANDBOX_LL_READ:
        return FS_READ_RIGHTS;
    case SANDBOX_LL_WRITE:
        return UINT64_MAX;
    case SANDBOX_LL_DEVICE:
        return FS_READ_RIGHTS | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV;
    }
    return 0;
}

int
sandbox_ll_allow_fd(struct sandbox_ll *ll, int fd, enum sandbox_ll_access access)
{
    if (ll->fs == 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    uint64_t allowed = rights_for(access) & ll->fs;
    if (!S_ISDIR(st.st_mode))
        allowed &= FS_FILE_RIGHTS;
    struct ll_path_beneath_attr pb = {.allowed_access = allowed, .parent_fd = fd};
    if (allowed != 0 && syscall(SYS_landlock_add_rule, ll->fd, LL_RULE_PATH_BENEATH, &pb, 0) != 0)
        return -errno;
    return 0;
}

int
sandbox_ll_allow(struct sandbox_ll *ll, const char *path, enum sandbox_ll_access access)
{
    if (ll->fs == 0)
        return 0;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = sandbox_ll_allow_fd(ll, fd, access);
    close(fd);
    return rc;
}

static const char *const fs_names[] = {
    "execute",   "write_file", "read_file", "read_dir",  "remove_dir", "remove_file",
    "make_char", "make_dir",   "make_reg",  "make_sock", "make_fifo",  "make_block",
    "make_sym",  "refer",      "truncate",  "ioctl_dev",
};

static json_t *
names_of(uint64_t bits, const char *const *names, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < n; i++) {
        if ((bits & (1ull << i)) && json_array_append_new(arr, json_string(names[i])) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static int
add_report(const struct sandbox_ll *ll, json_t *report)
{
    static const char *const net_names[] = {"bind_tcp", "connect_tcp"};
    static const char *const scope_names[] = {"abstract_unix_socket", "signal"};
    json_t *o = json_object();
    if (o == NULL)
        return -ENOMEM;
    int rc = json_object_set_new(o, "abi", json_integer(ll->abi));
    rc |= json_object_set_new(o, "fs", names_of(ll->fs, fs_names, 16));
    rc |= json_object_set_new(o, "net", names_of(ll->net, net_names, 2));
    rc |= json_object_set_new(o, "scoped", names_of(ll->scoped, scope_names, 2));
    rc |= json_object_set_new(report, "landlock", o);
    return rc == 0 ? 0 : -ENOMEM;
}

int
sandbox_ll_enforce(struct sandbox_ll *ll, json_t *report)
{
    if (syscall(SYS_landlock_restrict_self, ll->fd, 0) != 0)
        return -errno;
    return add_report(ll, report);
}

const char *
sandbox_ll_missing(const struct sandbox_ll *ll, size_t i)
{
    return i < ll->nmissing ? ll->missing[i] : NULL;
}

void
sandbox_ll_free(struct sandbox_ll *ll)
{
    if (ll == NULL)
        return;
    if (ll->fd >= 0)
        close(ll->fd);
    free(ll);
}
