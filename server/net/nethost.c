/*
 * nethost: rule keys for destinations, and which addresses are local.
 */
#include "server/net/nethost.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *
nethost_normalize(const char *name, size_t len)
{
    if (len >= 2 && name[0] == '[' && name[len - 1] == ']') {
        name++;
        len -= 2;
    }
    while (len > 0 && name[len - 1] == '.')
        len--;
    if (len == 0 || len > NETHOST_NAME_MAX) {
        errno = EINVAL;
        return NULL;
    }
    char *out = malloc(len + 1);
    if (!out) {
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        /* Letters, digits, '-', '_', '.' for names; ':' for IPv6. */
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.' || c == ':';
        if (!ok) {
            free(out);
            errno = EINVAL;
            return NULL;
        }
        out[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    out[len] = '\0';
    return out;
}

static bool
v4_is_local(uint32_t a)
{
    return (a >> 24) == 0 ||                 /* 0.0.0.0/8 */
           (a >> 24) == 10 ||                /* 10/8 */
           (a >> 24) == 127 ||               /* loopback */
           (a >> 22) == (100u << 2 | 1) ||   /* 100.64/10, carrier-grade NAT */
           (a >> 16) == (169u << 8 | 254) || /* link-local */
           (a >> 20) == (172u << 4 | 1) ||   /* 172.16/12 */
           (a >> 16) == (192u << 8 | 168) || /* 192.168/16 */
           (a >> 28) >= 14;                  /* multicast, reserved, broadcast */
}

bool
nethost_addr_is_local(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return v4_is_local(ntohl(in->sin_addr.s_addr));
    }
    if (sa->sa_family != AF_INET6)
        return true;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
        uint32_t v4;
        memcpy(&v4, &a->s6_addr[12], 4);
        return v4_is_local(ntohl(v4));
    }
    return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
           IN6_IS_ADDR_SITELOCAL(a) || IN6_IS_ADDR_MULTICAST(a) ||
           (a->s6_addr[0] & 0xfe) == 0xfc; /* fc00::/7, unique local */
}

bool
nethost_is_local_name(const char *host)
{
    size_t n = strlen(host);
    if (strcmp(host, "localhost") == 0 || (n > 10 && strcmp(host + n - 10, ".localhost") == 0))
        return true;
    struct sockaddr_in in = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, host, &in.sin_addr) == 1)
        return nethost_addr_is_local((const struct sockaddr *)&in);
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET6, host, &in6.sin6_addr) == 1)
        return nethost_addr_is_local((const struct sockaddr *)&in6);
    return false;
}

/* ---- the server's own listeners ---- */

/* An address reduced to what the comparison needs: IPv4 (a mapped or
 * compatible IPv6 address counted as its IPv4 one) or IPv6, and the
 * port. */
struct own_addr {
    int family;
    unsigned char addr[16];
    uint16_t port;
};

static struct own_addr *own;
static size_t n_own;

static bool
reduce(const struct sockaddr *sa, struct own_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        out->family = AF_INET;
        memcpy(out->addr, &in->sin_addr, 4);
        out->port = ntohs(in->sin_port);
        return true;
    }
    if (sa->sa_family != AF_INET6)
        return false;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    const struct in6_addr *a = &in6->sin6_addr;
    out->port = ntohs(in6->sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
        out->family = AF_INET;
        memcpy(out->addr, &a->s6_addr[12], 4);
    } else {
        out->family = AF_INET6;
        memcpy(out->addr, a, 16);
    }
    return true;
}

/* Loopback (127.0.0.0/8, ::1) or unspecified (0.0.0.0, ::): each reaches
 * this machine's loopback listeners. */
static bool
reaches_loopback(const struct own_addr *a)
{
    static const unsigned char zero[16], one[16] = {[15] = 1};
    if (a->family == AF_INET)
        return a->addr[0] == 127 || memcmp(a->addr, zero, 4) == 0;
    return memcmp(a->addr, zero, 16) == 0 || memcmp(a->addr, one, 16) == 0;
}

static bool
unspecified(const struct own_addr *a)
{
    static const unsigned char zero[16];
    return memcmp(a->addr, zero, a->family == AF_INET ? 4 : 16) == 0;
}

int
nethost_own_add(const struct sockaddr *sa)
{
    struct own_addr a;
    if (!reduce(sa, &a))
        return -EAFNOSUPPORT;
    struct own_addr *grown = realloc(own, (n_own + 1) * sizeof(*own));
    if (!grown)
        return -ENOMEM;
    own = grown;
    own[n_own++] = a;
    return 0;
}

void
nethost_own_clear(void)
{
    free(own);
    own = NULL;
    n_own = 0;
}

bool
nethost_is_own(const struct sockaddr *sa)
{
    struct own_addr d;
    if (!reduce(sa, &d))
        return false;
    for (size_t i = 0; i < n_own; i++) {
        const struct own_addr *o = &own[i];
        if (o->port != d.port)
            continue;
        /* a listener on every address; a destination that is any
         * loopback address (or none, which the kernel takes for one) when
         * it listens on loopback; or the very address */
        if (unspecified(o) || unspecified(&d) || (reaches_loopback(o) && reaches_loopback(&d)) ||
            (o->family == d.family && memcmp(o->addr, d.addr, o->family == AF_INET ? 4 : 16) == 0))
            return true;
    }
    return false;
}
