/*
 * call_cgroup_fs: reading and writing the small text files of cgroupfs and
 * /proc for call_cgroup (the probe and each call's cgroup).  Control files
 * are short and rewritten by the kernel on every read, so each is read
 * whole from offset 0; every fd is close-on-exec.  No libuv.
 */
#ifndef EXECGATE_SERVER_CALL_CGROUP_FS_H
#define EXECGATE_SERVER_CALL_CGROUP_FS_H

#include <stdbool.h>
#include <stdint.h>

/* dir/name, or dir itself when name is empty; NULL when out of memory. */
char *cgfs_path_join(const char *dir, const char *name);

/* Reads fd from offset 0 to its end into *out (NUL-terminated, caller
 * frees).  0 or -errno. */
int cgfs_read_fd(int fd, char **out);

/* dir/file opened with flags, close-on-exec: the fd, or -errno. */
int cgfs_open_at(const char *dir, const char *file, int flags);

/* The whole of path, or of dir/file, into *out (caller frees).  0 or
 * -errno. */
int cgfs_read_path(const char *path, char **out);
int cgfs_read_at(const char *dir, const char *file, char **out);

/* Writes text to dir/file in one write.  0 or -errno (-EIO when short). */
int cgfs_write_at(const char *dir, const char *file, const char *text);

/* Whether dir/file exists. */
bool cgfs_exists_at(const char *dir, const char *file);

/* Whether word is one of the items of list, separated by any of seps. */
bool cgfs_listed(const char *list, const char *word, const char *seps);

/* The next line of *text, NUL-terminated in place; NULL at the end. */
char *cgfs_next_line(char **text);

/* One line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH" (cgroup v2's is
 * "0::PATH"; a path may hold ':'), split in place into its fields.
 * Returns false for a line without them. */
struct cgfs_proc_line {
    const char *id, *controllers, *path;
};
bool cgfs_proc_line(char *line, struct cgfs_proc_line *out);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t cgfs_now_ms(void);

#endif
