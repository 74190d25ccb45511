#include "tests/support/test_user.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
test_user_create(struct test_user *u)
{
    memset(u, 0, sizeof(*u));
    struct passwd *pw = NULL;
    for (int i = 0; i < 50 && !(pw = getpwnam(TEST_USER)); i++) {
        const char *argv[] = {
            "/usr/sbin/useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
            TEST_USER,           NULL};
        struct proc_result res;
        if (proc_run(argv, NULL, &res) == 0) {
            if (proc_exit_code(&res) != 0)
                fprintf(stderr, "useradd: %s", res.err);
            proc_result_free(&res);
        }
        if (!(pw = getpwnam(TEST_USER))) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (!pw) {
        fprintf(stderr, "cannot create the user " TEST_USER "\n");
        exit(1);
    }
    u->uid = pw->pw_uid;
    u->gid = pw->pw_gid;
    if (asprintf(&u->prefix_uid, "--reuid=%u", (unsigned)u->uid) < 0 ||
        asprintf(&u->prefix_gid, "--regid=%u", (unsigned)u->gid) < 0)
        exit(1);
    const char *prefix[] = {"/usr/bin/setpriv", u->prefix_uid, u->prefix_gid,
                            "--clear-groups",   "--",          NULL};
    memcpy(u->prefix, prefix, sizeof prefix);
}

int
test_user_run(const struct test_user *u, const char *const *argv, struct proc_result *res)
{
    const char *full[16];
    size_t n = 0;
    for (size_t i = 0; u->prefix[i]; i++)
        full[n++] = u->prefix[i];
    for (size_t i = 0; argv[i] && n < 15; i++)
        full[n++] = argv[i];
    full[n] = NULL;
    if (proc_run(full, NULL, res) != 0) {
        fprintf(stderr, "cannot run %s\n", full[0]);
        exit(1);
    }
    return proc_exit_code(res);
}

int
test_user_can_serve(const struct test_user *u, const char *server)
{
    const char *names[] = {"EXECGATE_TEST_SANDBOX", "EXECGATE_TEST_WRAPPER", "EXECGATE_TEST_BASH"};
    for (size_t i = 0; i < 3; i++) {
        if (!getenv(names[i])) {
            fprintf(stderr, "%s is not set\n", names[i]);
            exit(1);
        }
    }
    const char *argv[] = {
        "/bin/sh",
        "-c",
        "for f; do [ -r \"$f\" ] && [ -x \"$f\" ] || { echo \"$f\"; exit 1; }; done",
        "sh",
        server,
        getenv(names[0]),
        getenv(names[1]),
        getenv(names[2]),
        NULL};
    struct proc_result res;
    if (test_user_run(u, argv, &res) != 0) {
        printf("the build tree is not readable by " TEST_USER " (%s): no unprivileged run\n",
               res.out);
        proc_result_free(&res);
        return 77;
    }
    proc_result_free(&res);
    const char *probe[] = {getenv("EXECGATE_TEST_SANDBOX"),
                           "--policy",
                           "{\"type\":\"read-only\",\"sandboxCwd\":\"/\"}",
                           "--cwd",
                           "/",
                           "--",
                           "/bin/true",
                           NULL};
    int code = test_user_run(u, probe, &res);
    if (code == 125 && strstr(res.err, "namespace")) {
        printf("unprivileged user namespaces are refused here (%s): no unprivileged run\n",
               res.err);
        proc_result_free(&res);
        return 77;
    }
    if (code != 0) {
        fprintf(stderr, "probe: the sandbox helper as " TEST_USER " exits %d: %s\n", code, res.err);
        exit(1);
    }
    proc_result_free(&res);
    return 0;
}

void
test_user_release(struct test_user *u)
{
    free(u->prefix_uid);
    free(u->prefix_gid);
    memset(u, 0, sizeof(*u));
}
