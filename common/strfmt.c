#include "common/strfmt.h"

#include <stdio.h>

char *
vstrfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

char *
strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vstrfmt(fmt, ap);
    va_end(ap);
    return s;
}
