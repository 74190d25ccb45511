#include "starlark/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

char *
star_errf(const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}
