/*
 * cmdline: struct sandbox_cmdline to argv.
 */
#include "sandbox/policy/cmdline.h"

#include "common/strv.h"
#include "sandbox/policy/policy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slots besides the protect and hide paths and the program: the helper,
 * six options with values (--exec-notify-fd, --net-proxy-fd, --net-ns-fd,
 * --tty-fd, --command-fd, --argv0) and two without (--notify-sockets-only, --allow-degraded),
 * --policy, --cwd, --report-fd, "--" and the terminating NULL.  The
 * array is made this size first; an option added without being counted
 * here makes it grow (argv_room), never overflow. */
#define FIXED_SLOTS 23

/* An argv being filled; the first failure sticks and later adds do
 * nothing, so the builder checks once at the end. */
struct argv_builder {
    char **v; /* cap slots, those past n NULL */
    size_t n, cap;
    bool ok;
};

/* Room for one more entry and the terminating NULL: the array doubles
 * when it is full.  Returns false when out of memory. */
static bool
argv_room(struct argv_builder *b)
{
    if (b->n + 1 < b->cap)
        return true;
    size_t cap = b->cap * 2;
    char **v = cap > b->cap ? reallocarray(b->v, cap, sizeof(*v)) : NULL;
    if (v == NULL)
        return false;
    memset(v + b->cap, 0, (cap - b->cap) * sizeof(*v));
    b->v = v;
    b->cap = cap;
    return true;
}

/* Appends s, which the builder owns from now on (NULL: out of memory). */
static void
add_take(struct argv_builder *b, char *s)
{
    if (!b->ok || s == NULL || !argv_room(b)) {
        free(s);
        b->ok = false;
        return;
    }
    b->v[b->n++] = s;
}

static void
add_copy(struct argv_builder *b, const char *s)
{
    add_take(b, b->ok ? strdup(s) : NULL);
}

/* Appends option and its fd number. */
static void
add_fd_option(struct argv_builder *b, const char *option, int fd)
{
    char *num = NULL;
    add_copy(b, option);
    if (b->ok && asprintf(&num, "%d", fd) < 0)
        num = NULL;
    add_take(b, num);
}

/* The options before --policy: the server's additions, then the flags
 * and the protected paths. */
static void
add_leading_options(struct argv_builder *b, const struct sandbox_cmdline *c)
{
    if (c->exec_notify_fd >= 0)
        add_fd_option(b, SANDBOX_OPT_EXEC_NOTIFY_FD, c->exec_notify_fd);
    if (c->exec_notify_fd >= 0 && c->notify_sockets_only)
        add_copy(b, SANDBOX_OPT_SOCKETS_ONLY);
    if (c->net_proxy_fd > 0)
        add_fd_option(b, SANDBOX_OPT_NET_PROXY_FD, c->net_proxy_fd);
    if (c->net_ns_fd > 0)
        add_fd_option(b, SANDBOX_OPT_NET_NS_FD, c->net_ns_fd);
    if (c->tty_fd > 0)
        add_fd_option(b, SANDBOX_OPT_TTY_FD, c->tty_fd);
    if (c->command_fd > 0)
        add_fd_option(b, SANDBOX_OPT_COMMAND_FD, c->command_fd);
    if (c->argv0 != NULL) {
        add_copy(b, SANDBOX_OPT_ARGV0);
        add_copy(b, c->argv0);
    }
    if (c->allow_degraded)
        add_copy(b, SANDBOX_OPT_ALLOW_DEGRADED);
    for (size_t k = 0; k < c->n_protect; k++) {
        add_copy(b, SANDBOX_OPT_PROTECT);
        add_copy(b, c->protect[k]);
    }
    for (size_t k = 0; k < c->n_hide; k++) {
        add_copy(b, SANDBOX_OPT_HIDE);
        add_copy(b, c->hide[k]);
    }
}

char **
sandbox_cmdline_argv(const struct sandbox_cmdline *c)
{
    size_t nprog = 0;
    while (c->program[nprog] != NULL)
        nprog++;
    /* two slots per protect or hide path (calloc checks the multiplication) */
    size_t room = (SIZE_MAX - FIXED_SLOTS - nprog) / 2;
    if (c->n_protect > room || c->n_hide > room - c->n_protect) {
        errno = ENOMEM;
        return NULL;
    }
    size_t paths = c->n_protect + c->n_hide;
    size_t cap = FIXED_SLOTS + 2 * paths + nprog;
    struct argv_builder b = {.v = calloc(cap, sizeof(char *)), .cap = cap};
    b.ok = b.v != NULL;
    add_copy(&b, c->helper);
    add_leading_options(&b, c);
    add_copy(&b, SANDBOX_OPT_POLICY);
    add_take(&b, b.ok ? sandbox_policy_to_json(c->policy) : NULL);
    add_copy(&b, SANDBOX_OPT_CWD);
    add_copy(&b, c->cwd);
    if (c->report_fd >= 0)
        add_fd_option(&b, SANDBOX_OPT_REPORT_FD, c->report_fd);
    add_copy(&b, "--");
    for (size_t k = 0; k < nprog; k++)
        add_copy(&b, c->program[k]);
    if (!b.ok) {
        strv_free(b.v); /* NULL-terminated: calloc'd, filled in order */
        return NULL;
    }
    return b.v;
}
