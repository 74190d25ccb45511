/*
 * nethost: the names and addresses the network proxy decides on.
 *
 * A destination as a client names it (a host in CONNECT, a SOCKS5
 * request or a URL) becomes the key the network rules are written with:
 * lower case, without the brackets of an IPv6 literal and without a
 * trailing dot.  And an address the proxy is about to connect to is
 * classed as public or local (loopback, private, link-local and the
 * like), which a rule must name exactly.  Knows nothing of libuv or MCP.
 */
#ifndef EXECGATE_SERVER_NETHOST_H
#define EXECGATE_SERVER_NETHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* The longest host name the proxy accepts (DNS's limit). */
#define NETHOST_NAME_MAX 253

/*
 * The rule key for the host name[0..len): lower case, one pair of
 * enclosing brackets and trailing dots removed.  Returns a malloc'd
 * string, or NULL (errno EINVAL) when the name is empty, longer than
 * NETHOST_NAME_MAX, or holds a byte no host name or IP literal has
 * (controls, space, '/', '@', '%', ...), or (ENOMEM) out of memory.
 */
char *nethost_normalize(const char *name, size_t len);

/*
 * True when host (normalised) names the local machine or a private
 * network by itself: an IP literal nethost_addr_is_local calls local, or
 * "localhost" and names under ".localhost".
 */
bool nethost_is_local_name(const char *host);

/*
 * True when the address (AF_INET or AF_INET6) is not a public one:
 * unspecified, loopback, RFC 1918 private, carrier-grade NAT, link-local,
 * IPv6 unique-local, multicast, or an IPv4-mapped IPv6 address of any of
 * these.  Other families count as local.
 */
bool nethost_addr_is_local(const struct sockaddr *sa);

/*
 * The TCP addresses this process listens on (the MCP listeners, --listen),
 * which the network proxy never connects to, whatever the rules: a
 * command would reach the server that decides on it.  Process-wide, as
 * the listeners are.  nethost_own_add records one (0, or a negative
 * errno: -ENOMEM, -EAFNOSUPPORT for a family other than IPv4 and IPv6).
 */
int nethost_own_add(const struct sockaddr *sa);

/*
 * True when a connection to sa could reach one of them: the same port
 * and the same address, or any loopback address (127.0.0.0/8, ::1, an
 * IPv4-mapped one) or the unspecified one (0.0.0.0, ::) for a listener on
 * loopback, or any address for a listener on the unspecified one.
 */
bool nethost_is_own(const struct sockaddr *sa);

/* Forgets them all (tests). */
void nethost_own_clear(void);

#endif
