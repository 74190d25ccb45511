/*
 * tmpdir: scratch directories and small file helpers for tests.
 * Failures abort the test: a test without its scratch space is broken.
 */
#ifndef EXECGATE_TESTS_TMPDIR_H
#define EXECGATE_TESTS_TMPDIR_H

#include <stddef.h>

/* Creates a fresh directory under $TMPDIR (or /tmp); caller frees the
 * path, which is canonical (no links). */
char *tmpdir_new(const char *tag);

/* The same under base. */
char *tmpdir_new_in(const char *base, const char *tag);

/* Removes path and everything below it; a missing path is fine. */
void tmpdir_remove(const char *path);

/* Returns the joined path dir/name; caller frees. */
char *tmpdir_path(const char *dir, const char *name);

/* Whole file as a NUL-terminated string (len without the NUL), or NULL with
 * errno set when it cannot be read. Caller frees. */
char *tmpdir_read_file(const char *path, size_t *len);

/* Writes data to path (created with mode), replacing it. Aborts on error. */
void tmpdir_write_file(const char *path, const char *data, int mode);

/* A cmocka group teardown for a scratch tree: removes the directory
 * *state names (set by the group setup, a path from tmpdir_new) and frees
 * the path. Returns 0. */
int tmpdir_teardown(void **state);

/* Makes the directory dir/rel (mode 0755). Aborts on error. */
void tmpdir_make_dir(const char *dir, const char *rel);

/* Makes dir/rel a symbolic link to target, taken as is (a relative target
 * stays relative). Aborts on error. */
void tmpdir_make_link(const char *target, const char *dir, const char *rel);

#endif
