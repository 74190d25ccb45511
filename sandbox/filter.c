/*
 * filter: loads the BPF program the build generated from filter-rules.c.
 */
#include "filter.h"
#include "filter-bpf.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    const struct sock_filter *prog;
    size_t len;
    const char *const *names;
} variants[4] = {
    {NULL, 0, NULL},
    {sandbox_filter_bpf_1, COUNT(sandbox_filter_bpf_1), sandbox_filter_names_1},
    {sandbox_filter_bpf_2, COUNT(sandbox_filter_bpf_2), sandbox_filter_names_2},
    {sandbox_filter_bpf_3, COUNT(sandbox_filter_bpf_3), sandbox_filter_names_3},
};

const struct sock_filter *
sandbox_filter_program(bool confine, bool restrict_network, size_t *len, const char *const **names)
{
    int v = (confine ? 2 : 0) | (restrict_network ? 1 : 0);
    *len = variants[v].len;
    *names = variants[v].names;
    return variants[v].prog;
}

static int
report_filter(json_t *report, const char *const *names, bool restrict_network)
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
    rc = json_object_set_new(o, "sockets", json_string(restrict_network ? "unix-only" : "any"));
    rc |= json_object_set_new(o, "denied", denied);
    rc |= json_object_set_new(o, "other_arch", json_string("kill"));
    rc |= json_object_set_new(report, "seccomp", o);
    return rc == 0 ? 0 : -ENOMEM;
}

/* seccomp(2) where the kernel has it (3.17+), else the prctl it replaced. */
static int
load(const struct sock_fprog *prog)
{
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == 0)
        return 0;
    if (errno != ENOSYS)
        return -errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) == 0)
        return 0;
    return -errno;
}

int
sandbox_filter_apply(bool confine, bool restrict_network, json_t *report)
{
    size_t len;
    const char *const *names;
    const struct sock_filter *insns =
        sandbox_filter_program(confine, restrict_network, &len, &names);
    if (insns == NULL)
        return -EINVAL;
    /* Built before loading: after it, the report only needs memory already
     * held, and a failure leaves nothing loaded. */
    json_t *scratch = json_object();
    if (scratch == NULL || report_filter(scratch, names, restrict_network) != 0) {
        json_decref(scratch);
        return -ENOMEM;
    }
    const struct sock_fprog prog = {.len = (unsigned short)len,
                                    .filter = (struct sock_filter *)insns};
    int rc = load(&prog);
    if (rc == 0 && json_object_update(report, scratch) != 0)
        rc = -ENOMEM; /* loaded but unreported: the caller dies, nothing runs */
    json_decref(scratch);
    return rc;
}
