/*
 * protect_arg: the syntax of a --protect path.
 */
#include "sandbox/protect_arg.h"
#include "common/path_dot.h"

#include <stddef.h>
#include <string.h>

const char *
sandbox_protect_arg_error(const char *path)
{
    if (path[0] == '\0')
        return "empty path";
    if (path[0] != '/')
        return "not an absolute path";
    for (const char *c = path; *c != '\0';) {
        c += strspn(c, "/");
        size_t len = strcspn(c, "/");
        if (path_dot(c, len) != PATH_DOT_NONE)
            return "has a \".\" or \"..\" component";
        c += len;
    }
    return NULL;
}
