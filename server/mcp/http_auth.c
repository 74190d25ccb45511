#include "server/mcp/http_auth.h"

#include "common/log.h"
#include "common/strfmt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* A loopback origin: http or https, to localhost, 127.0.0.0/8 or [::1],
 * any port. */
bool
http_auth_origin_loopback(const char *origin)
{
    const char *p = NULL;
    if (strncasecmp(origin, "http://", 7) == 0)
        p = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        p = origin + 8;
    if (!p)
        return false;
    size_t host_len;
    char host[64];
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (!end)
            return false;
        host_len = (size_t)(end - p - 1);
        if (host_len >= sizeof(host))
            return false;
        memcpy(host, p + 1, host_len);
        host[host_len] = '\0';
        p = end + 1;
        struct in6_addr a6;
        if (inet_pton(AF_INET6, host, &a6) != 1 || !IN6_IS_ADDR_LOOPBACK(&a6))
            return false;
    } else {
        host_len = strcspn(p, ":/");
        if (host_len == 0 || host_len >= sizeof(host))
            return false;
        memcpy(host, p, host_len);
        host[host_len] = '\0';
        p += host_len;
        struct in_addr a4;
        bool ok = strcasecmp(host, "localhost") == 0 ||
                  (inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127);
        if (!ok)
            return false;
    }
    if (*p == ':') {
        p++;
        if (!*p)
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0' || strcmp(p, "/") == 0;
}

/* Compares in time independent of where they differ. */
static bool
token_matches(const char *given, size_t given_len, const char *token)
{
    size_t len = strlen(token);
    unsigned char diff = given_len != len;
    for (size_t i = 0; i < len; i++)
        diff |= (unsigned char)(token[i] ^ (i < given_len ? given[i] : 0));
    return diff == 0;
}

/* Creates path (mode 0600, never replacing a file) with a new token. */
static int
create_token(const char *path, char **err)
{
    unsigned char raw[HTTP_AUTH_TOKEN_BYTES];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        *err = strfmt("--token-file %s: no random bytes for a token: %s", path, strerror(errno));
        return -1;
    }
    char text[2 * HTTP_AUTH_TOKEN_BYTES + 2];
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    text[2 * HTTP_AUTH_TOKEN_BYTES] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        *err = strfmt("--token-file %s: cannot create it: %s", path, strerror(errno));
        return -1;
    }
    size_t len = 2 * HTTP_AUTH_TOKEN_BYTES + 1;
    ssize_t n = write(fd, text, len);
    int e = errno;
    if (close(fd) < 0 && n == (ssize_t)len) {
        n = -1;
        e = errno;
    }
    if (n != (ssize_t)len) {
        *err = strfmt("--token-file %s: cannot write it: %s", path,
                      n < 0 ? strerror(e) : "short write");
        unlink(path);
        return -1;
    }
    log_info("http: made a new token in %s", path);
    return 0;
}

/* The token in path (created when missing): its first line, blanks
 * trimmed.  NULL with *err. */
char *
http_auth_load_token(const char *path, char **err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) {
        if (create_token(path, err) < 0)
            return NULL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) {
        *err = strfmt("--token-file %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) < 0) {
        *err = strfmt("--token-file %s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        *err = strfmt("--token-file %s: not a regular file", path);
    } else if (st.st_mode & 077) {
        *err = strfmt("--token-file %s: others may read it (mode %03o): make it 0600", path,
                      (unsigned)(st.st_mode & 0777));
    } else if ((size_t)st.st_size > HTTP_AUTH_MAX_TOKEN_FILE) {
        *err = strfmt("--token-file %s: larger than %u bytes: not a token", path,
                      HTTP_AUTH_MAX_TOKEN_FILE);
    } else if (!(buf = calloc(1, (size_t)st.st_size + 1))) {
        *err = strfmt("out of memory");
    } else {
        ssize_t n = read(fd, buf, (size_t)st.st_size);
        if (n < 0) {
            *err = strfmt("--token-file %s: %s", path, strerror(errno));
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[strcspn(buf, "\r\n")] = '\0';
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    size_t skip = strspn(buf, " \t");
    memmove(buf, buf + skip, n - skip + 1);
    if (strlen(buf) < 16) {
        *err = strfmt("--token-file %s: the token (its first line) is shorter than 16 characters",
                      path);
        free(buf);
        return NULL;
    }
    return buf;
}

bool
http_auth_bearer(const char *authorization, const char *token)
{
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    const char *given = authorization + 7;
    while (*given == ' ')
        given++;
    return token_matches(given, strlen(given), token);
}
