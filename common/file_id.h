/*
 * file_id: whether two looks at a file saw the same file.
 *
 * A file is its (device, inode) pair, never its name: a name can be
 * repointed between two looks, the pair cannot (while an fd holds the
 * file, its inode number is not reused).
 */
#ifndef EXECGATE_COMMON_FILE_ID_H
#define EXECGATE_COMMON_FILE_ID_H

#include <stdbool.h>
#include <sys/stat.h>

/* Whether a and b (from stat, fstat or fstatat) are of the same file. */
static inline bool
file_id_same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether fds a and b hold the same file; false when either cannot be
 * looked at (a closed fd is the same as nothing). */
static inline bool
file_id_same_fd(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && file_id_same(&sa, &sb);
}

#endif
