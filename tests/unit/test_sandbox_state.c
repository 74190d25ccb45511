/*
 * sandbox_state: the sandbox a client hands over, from a tools/call's
 * _meta or an update, resolved into a sandboxPolicy object and its cwd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/call/sandbox_state.h"
#include "tests/support/alloc_fail.h"

#define PROFILE_RO                                                                                 \
    "{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":[{\"path\":"       \
    "{\"type\":\"special\",\"value\":{\"kind\":\"root\"}},\"access\":\"read\"}]}}"

/* from_meta on meta (JSON text): its result, and the policy's type and the
 * cwd or the message, into *what (malloc'd). */
static int
from_meta(const char *meta, char **what)
{
    json_t *m = meta ? json_loads(meta, JSON_DECODE_ANY, NULL) : NULL;
    assert_true(meta == NULL || m != NULL);
    json_t *policy = NULL;
    char *cwd = NULL, *err = NULL;
    int rc = sandbox_state_from_meta(m, "/work", &policy, &cwd, NULL, &err);
    if (rc == 1) {
        assert_null(err);
        assert_true(
            asprintf(what, "%s %s", json_string_value(json_object_get(policy, "type")), cwd) > 0);
    } else if (rc < 0) {
        assert_non_null(err);
        *what = err;
        err = NULL;
    } else {
        assert_null(err);
        *what = strdup("none");
    }
    json_decref(policy);
    free(cwd);
    json_decref(m);
    return rc;
}

static void
expect(const char *meta, int rc, const char *what)
{
    char *got = NULL;
    assert_int_equal(from_meta(meta, &got), rc);
    if (strstr(got, what) == NULL)
        fail_msg("%s: got \"%s\", want \"%s\"", meta ? meta : "(no _meta)", got, what);
    free(got);
}

static void
test_meta(void **state)
{
    (void)state;
    /* no state: the session's applies */
    expect(NULL, 0, "none");
    expect("{}", 0, "none");
    expect("{\"progressToken\":1}", 0, "none");
    expect("{\"codex/sandbox-state\":null}", 0, "none");
    expect("\"not an object\"", 0, "none");
    /* either key, or both alike; the cwd a file URL, a path, or the workdir */
    expect("{\"codex/sandbox-state\":{\"permissionProfile\":" PROFILE_RO
           ",\"sandboxCwd\":\"file:///w%20x\"}}",
           1, "read-only /w x");
    expect("{\"codex/sandbox-state-meta\":{\"permissionProfile\":{\"type\":\"disabled\"},"
           "\"sandboxCwd\":\"/plain\"}}",
           1, "danger-full-access /plain");
    expect("{\"codex/sandbox-state\":{\"permissionProfile\":{\"type\":\"disabled\"}},"
           "\"codex/sandbox-state-meta\":{\"permissionProfile\":{\"type\":\"disabled\"}}}",
           1, "danger-full-access /work");
    /* the older form in _meta; with both forms the sandboxPolicy */
    expect("{\"codex/sandbox-state\":{\"sandboxPolicy\":{\"type\":\"workspace-write\"}}}", 1,
           "workspace-write /work");
    expect("{\"codex/sandbox-state\":{\"sandboxPolicy\":{\"type\":\"read-only\"},"
           "\"permissionProfile\":{}}}",
           1, "read-only /work");
    /* refused, naming the key and the field */
    expect("{\"codex/sandbox-state\":{\"permissionProfile\":{\"type\":\"disabled\"}},"
           "\"codex/sandbox-state-meta\":{\"permissionProfile\":{\"type\":\"external\"}}}",
           -1, "differ");
    expect("{\"codex/sandbox-state-meta\":{}}", -1,
           "_meta[\"codex/sandbox-state-meta\"]: permissionProfile: required");
    expect("{\"codex/sandbox-state\":5}", -1, "must be an object");
    expect("{\"codex/sandbox-state\":{\"permissionProfile\":{\"type\":\"disabled\"},"
           "\"sandboxCwd\":7}}",
           -1, "sandboxCwd");
    expect("{\"codex/sandbox-state\":{\"permissionProfile\":{\"type\":\"disabled\"},"
           "\"sandboxCwd\":\"file://elsewhere/x\"}}",
           -1, "not a local file URL");
    expect("{\"codex/sandbox-state\":{\"sandboxPolicy\":\"read-only\"}}", -1,
           "sandboxPolicy: must be an object");
    expect("{\"codex/sandbox-state\":{\"sandboxPolicy\":{\"type\":\"nope\"}}}", -1,
           "unknown type \"nope\"");
}

/* ---- allocation failures ---- */

static void
meta_round(void *arg)
{
    json_t *m = json_loads(arg, 0, NULL);
    if (m == NULL) {
        assert_true(alloc_fail_injected());
        return;
    }
    json_t *policy = NULL;
    char *cwd = NULL, *err = NULL;
    int rc = sandbox_state_from_meta(m, "/work", &policy, &cwd, NULL, &err);
    if (rc == 1) {
        assert_non_null(policy);
        assert_non_null(cwd);
    } else {
        assert_true(alloc_fail_injected() || err != NULL);
        assert_null(policy);
        assert_null(cwd);
    }
    json_decref(policy);
    free(cwd);
    free(err);
    json_decref(m);
}

static void
test_allocation_failures(void **state)
{
    (void)state;
    const char *metas[] = {
        "{\"codex/sandbox-state\":{\"permissionProfile\":" PROFILE_RO
        ",\"sandboxCwd\":\"file:///w%20x\"},\"codex/sandbox-state-meta\":{\"permissionProfile\":"
        "" PROFILE_RO ",\"sandboxCwd\":\"file:///w%20x\"}}",
        "{\"codex/sandbox-state\":{\"sandboxPolicy\":{\"type\":\"workspace-write\"}}}",
        "{\"codex/sandbox-state\":{\"permissionProfile\":{\"type\":\"disabled\"}},"
        "\"codex/sandbox-state-meta\":{\"permissionProfile\":{\"type\":\"external\"}}}",
    };
    json_set_alloc_funcs(malloc, free);
    for (size_t i = 0; i < sizeof metas / sizeof metas[0]; i++)
        assert_true(alloc_fail_sweep(meta_round, (void *)metas[i]) > 3);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
