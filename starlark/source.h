/*
 * star source: reading a Starlark file into memory, refusing files larger
 * than STAR_MAX_FILE_BYTES instead of reading them whole.
 */
#ifndef EXECGATE_STARLARK_SOURCE_H
#define EXECGATE_STARLARK_SOURCE_H

#include <stddef.h>

/*
 * Reads the file at path.  Returns a malloc'd buffer (NUL-terminated; *len
 * excludes the NUL), or NULL with *err set to a malloc'd
 * "PATH:1:1: reason" line (caller frees either).  A missing file's errno
 * is left in errno.
 */
char *star_source_read(const char *path, size_t *len, char **err);

#endif
