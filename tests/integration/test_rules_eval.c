/*
 * `execgate-rules eval FILE` through its command line: exit 0 and nothing
 * on stderr when the file completes (print() goes to stderr), exit 1 with
 * exactly one "FILE:LINE:COL: message" line when it fails, exit 2 on a
 * usage error; hostile files (huge, deeply nested, endless) end with an
 * error instead of a crash or a hang.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/proc.h"
#include "tests/support/tmpdir.h"

static const char *rules_bin;
static char *dir;

struct run {
    int code;
    char *out, *err;
};

static struct run
eval_src(const char *name, const char *src)
{
    char *path = tmpdir_path(dir, name);
    if (src != NULL)
        tmpdir_write_file(path, src, 0644);
    const char *argv[] = {rules_bin, "eval", path, NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    struct run r = {proc_exit_code(&res), strdup(res.out), NULL};
    /* Replace the temporary directory by "DIR" so expectations are fixed. */
    const char *e = res.err;
    size_t dl = strlen(dir);
    char *clean = malloc(res.err_len + 1);
    size_t o = 0;
    while (*e) {
        if (strncmp(e, dir, dl) == 0) {
            memcpy(clean + o, "DIR", 3);
            o += 3;
            e += dl;
        } else {
            clean[o++] = *e++;
        }
    }
    clean[o] = '\0';
    r.err = clean;
    proc_result_free(&res);
    free(path);
    return r;
}

static void
run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static void
test_success(void **state)
{
    (void)state;
    struct run r = eval_src("ok.star", "x = [i * 2 for i in range(3)]\n"
                                       "print('x is', x)\n"
                                       "if x != [0, 2, 4]:\n"
                                       "    fail('wrong')\n");
    assert_int_equal(r.code, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "x is [0, 2, 4]\n");
    run_free(&r);
}

static void
test_failures(void **state)
{
    (void)state;
    struct {
        const char *src, *want;
    } cases[] = {
        {"def check(n):\n    if n > 2:\n        fail('n is too big:', n)\ncheck(3)\n",
         "DIR/bad.star:3:9: fail: n is too big: 3\n"},
        {"x = 'open\n", "DIR/bad.star:1:5: unterminated string: missing closing '\n"},
        {"x = {'a': [1, 2}\n", "DIR/bad.star:1:16: '}' does not match the '[' opened at 1:11\n"},
        {"len(1, 2)\n", "DIR/bad.star:1:1: len: got 2 arguments, want at most 1\n"},
        {"sorted([3], reversed = True)\n",
         "DIR/bad.star:1:1: sorted: unexpected keyword argument 'reversed'\n"},
        {"y = nope + 1\n", "DIR/bad.star:1:5: undefined: nope is not defined\n"},
        {"for i in range(1000000000):\n    x = i\n",
         "DIR/bad.star:1:10: too many steps (limit 20000000): is there an endless loop?\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct run r = eval_src("bad.star", cases[i].src);
        assert_int_equal(r.code, 1);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err, cases[i].want);
        run_free(&r);
    }
}

static void
test_usage_and_files(void **state)
{
    (void)state;
    const char *argv[] = {rules_bin, "eval", NULL};
    struct proc_result res;
    assert_int_equal(proc_run(argv, NULL, &res), 0);
    assert_int_equal(proc_exit_code(&res), 2);
    assert_string_equal(res.err, "usage: execgate-rules eval FILE\n");
    proc_result_free(&res);

    struct run r = eval_src("missing.star", NULL);
    assert_int_equal(r.code, 1);
    assert_string_equal(r.err, "execgate-rules: DIR/missing.star:1:1: cannot open: No such file "
                               "or directory\n");
    run_free(&r);

    /* A 100 MB file (sparse) is refused after reading at most the limit. */
    char *big = tmpdir_path(dir, "big.star");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 100L << 20), 0);
    close(fd);
    free(big);
    r = eval_src("big.star", NULL);
    assert_int_equal(r.code, 1);
    assert_string_equal(
        r.err, "execgate-rules: DIR/big.star:1:1: file is too large (the limit is 8 MiB)\n");
    run_free(&r);
}

static void
test_deep_nesting(void **state)
{
    (void)state;
    /* Past the brackets Codex takes: refused by the lexer, before any
     * recursion. */
    size_t n = 20000;
    char *src = malloc(2 * n + 8);
    memcpy(src, "x = ", 4);
    memset(src + 4, '(', n);
    memset(src + 4 + n, ')', n);
    strcpy(src + 4 + 2 * n, "\n");
    struct run r = eval_src("deep.star", src);
    assert_int_equal(r.code, 1);
    assert_string_equal(r.err,
                        "DIR/deep.star:1:10872: brackets nested too deeply (the limit is 10867)\n");
    run_free(&r);
    free(src);
}

int
main(void)
{
    rules_bin = getenv("EXECGATE_TEST_RULES");
    if (rules_bin == NULL) {
        fprintf(stderr, "set EXECGATE_TEST_RULES\n");
        return 1;
    }
    dir = tmpdir_new("rules-eval");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_usage_and_files),
        cmocka_unit_test(test_deep_nesting),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tmpdir_remove(dir);
    free(dir);
    return rc;
}
