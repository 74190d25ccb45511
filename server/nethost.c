/*
 * nethost: rule keys for destinations, and which addresses are local.
 */
#include "server/nethost.h"

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

bool
nethost_is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
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
