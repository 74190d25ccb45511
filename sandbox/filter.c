/*
 * filter: loads the BPF program the build generated from filter-rules.c.
 */
#include "sandbox/filter.h"
#include "sandbox/filter-bpf.h"
#include "sandbox/exec_filter.h"
#include "common/macros.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROGRAM(n)                                                                                 \
    sandbox_filter_bpf_##n, ARRAY_SIZE(sandbox_filter_bpf_##n), sandbox_filter_names_##n

/* Indexed as filter-gen numbers them: 16 a network namespace of its
 * own, 8 notify sockets, 4 notify execs, 2 confine, 1 network off. */
static const struct {
    const struct sock_filter *prog;
    size_t len;
    const char *const *names;
} variants[32] = {
    [1] = {PROGRAM(1)},   [2] = {PROGRAM(2)},   [3] = {PROGRAM(3)},   [5] = {PROGRAM(5)},
    [6] = {PROGRAM(6)},   [7] = {PROGRAM(7)},   [10] = {PROGRAM(10)}, [11] = {PROGRAM(11)},
    [14] = {PROGRAM(14)}, [15] = {PROGRAM(15)}, [18] = {PROGRAM(18)}, [22] = {PROGRAM(22)},
    [26] = {PROGRAM(26)}, [30] = {PROGRAM(30)},
};

const struct sock_filter *
sandbox_filter_program(bool confine, enum sandbox_filter_net net, unsigned notify, size_t *len,
                       const char *const **names)
{
    /* [4], exec notification alone, is empty: that is exec_filter.c's;
     * sockets are notified, and a network namespace is the sandbox's own,
     * only where the sandbox confines */
    int v = (net == SANDBOX_FILTER_NET_OWN ? 16 : 0) |
            (notify & SANDBOX_FILTER_NOTIFY_SOCKETS ? 8 : 0) |
            (notify & SANDBOX_FILTER_NOTIFY_EXECS ? 4 : 0) | (confine ? 2 : 0) |
            (net == SANDBOX_FILTER_NET_UNIX ? 1 : 0);
    *len = variants[v].len;
    *names = variants[v].names;
    return variants[v].prog;
}

static int
report_filter(json_t *report, const char *const *names, enum sandbox_filter_net net)
{
    json_t *o = json_object();
    json_t *denied = json_array();
    int rc = o != NULL && denied != NULL ? 0 : -1;
    for (size_t i = 0; rc == 0 && names[i] != NULL; i++)
        rc = json_array_append_new(denied, json_string(names[i]));
    if (rc != 0) {
        json_decref(o);
        json_decref(denied);
        return -ENOMEM;
    }
    static const char *const sockets[] = {"any", "unix-only", "unix-ip-netlink"};
    rc = json_object_set_new(o, "sockets", json_string(sockets[net]));
    rc |= json_object_set_new(o, "denied", denied);
    rc |= json_object_set_new(o, "other_arch", json_string("kill"));
    rc |= json_object_set_new(report, "seccomp", o);
    return rc == 0 ? 0 : -ENOMEM;
}

/* seccomp(2) where the kernel has it (3.17+), else the prctl it replaced
 * (which cannot make a listener).  Returns 0 or the listener, or -errno. */
static int
load(const struct sock_fprog *prog, bool notify)
{
    unsigned flags = notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, prog);
    if (rc >= 0)
        return (int)rc;
    if (errno != ENOSYS || notify)
        return -errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) == 0)
        return 0;
    return -errno;
}

static int
apply(bool confine, enum sandbox_filter_net net, unsigned notify, json_t *report)
{
    size_t len;
    const char *const *names;
    const struct sock_filter *insns = sandbox_filter_program(confine, net, notify, &len, &names);
    if (insns == NULL)
        return -EINVAL;
    /* Built before loading: after it, the report only needs memory already
     * held, and a failure leaves nothing loaded. */
    json_t *scratch = json_object();
    if (scratch == NULL || report_filter(scratch, names, net) != 0) {
        json_decref(scratch);
        return -ENOMEM;
    }
    const struct sock_fprog prog = {.len = (unsigned short)len,
                                    .filter = (struct sock_filter *)insns};
    int rc = load(&prog, notify);
    if (rc >= 0 && json_object_update(report, scratch) != 0) {
        if (notify)
            close(rc);
        rc = -ENOMEM; /* loaded but unreported: the caller dies, nothing runs */
    }
    json_decref(scratch);
    return rc;
}

int
sandbox_filter_apply(bool confine, enum sandbox_filter_net net, json_t *report)
{
    return apply(confine, net, 0, report);
}

int
sandbox_filter_apply_notify(bool confine, enum sandbox_filter_net net, unsigned notify,
                            json_t *report)
{
    return notify == 0 ? -EINVAL : apply(confine, net, notify, report);
}
