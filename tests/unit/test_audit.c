/* audit: whole lines only, even when the disk (here a file size limit)
 * takes only part of a record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/decide/audit.h"
#include "tests/support/tmpdir.h"

/* Writes records of about 200 bytes under a file size limit of 1000
 * bytes, in a child (the limit is per process); returns the log's text. */
static char *
write_over_the_limit(const char *path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        char *err = NULL;
        struct audit *a = audit_open(path, &err);
        if (!a)
            _exit(3);
        struct rlimit lim = {1000, 1000};
        if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
            _exit(4);
        char filler[160];
        memset(filler, 'x', sizeof(filler) - 1);
        filler[sizeof(filler) - 1] = '\0';
        for (int i = 0; i < 10; i++)
            audit_write(a, json_pack("{s:i, s:s}", "n", i, "filler", filler));
        audit_close(a);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    return tmpdir_read_file(path, NULL);
}

static void
test_no_half_record(void **state)
{
    (void)state;
    char *dir = tmpdir_new("audit");
    char *path = tmpdir_path(dir, "audit.jsonl");
    char *text = write_over_the_limit(path);
    size_t len = strlen(text);
    /* some records fit; the one that did not is gone entirely */
    assert_true(len > 0 && len <= 1000);
    assert_int_equal(text[len - 1], '\n');
    int lines = 0;
    for (char *line = text; *line; lines++) {
        char *end = strchr(line, '\n');
        assert_non_null(end);
        json_t *rec = json_loadb(line, (size_t)(end - line), 0, NULL);
        assert_non_null(rec); /* every line a whole record */
        assert_int_equal(json_integer_value(json_object_get(rec, "n")), lines);
        json_decref(rec);
        line = end + 1;
    }
    assert_true(lines >= 3 && lines < 10);
    free(text);
    free(path);
    tmpdir_remove(dir);
    free(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_half_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
