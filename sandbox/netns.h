/*
 * netns: the network namespace a sandbox gets when its network is off
 * (docs/network.md).
 *
 * The namespace holds nothing but its loopback interface.  The server
 * makes one per MCP session (sandbox_netns_make, in a child of its own)
 * and keeps an fd to it; each call's helper joins it (--net-ns-fd,
 * sandbox_netns_join), so the session's commands reach each other on
 * 127.0.0.1 and nothing else.  With network rules the helper also listens
 * on 127.0.0.1 in it and hands the listening socket to the server
 * (--net-proxy-fd), whose proxy serves it from outside: a connection made
 * in the sandbox to that address is a connection to the proxy, and no
 * other address leads anywhere.  Knows nothing of MCP or libuv.
 */
#ifndef EXECGATE_SANDBOX_NETNS_H
#define EXECGATE_SANDBOX_NETNS_H

#include <stdbool.h>
#include <stdnoreturn.h>

/*
 * Moves the calling single-threaded process into a new user namespace
 * (its ids mapped to themselves; root goes without one where the kernel
 * refuses it) and a new network namespace owned by it, with loopback up.
 * Returns 0, or -errno with *what naming the step that failed.
 * $EXECGATE_SANDBOX_NO_NAMESPACES=1 fails it (sandbox_ns_unshare's knob).
 */
int sandbox_netns_make(const char **what);

/* The keeper's messages (sandbox_netns_keep), over a SOCK_SEQPACKET
 * socket: first its answer to being started, then one reply per
 * request. */
struct sandbox_netns_hello {
    int err;       /* 0: the namespace's fd comes with it; else an errno */
    char what[96]; /* the step that failed ("" on success) */
};
struct sandbox_netns_request {
    int domain, type, protocol; /* as socket(2) takes them */
};
struct sandbox_netns_reply {
    int err; /* 0: the socket comes with it; else an errno */
};

/*
 * The keeper of a session's network namespace, the helper run as
 * `execgate-sandbox --net-ns-keeper N`: makes the namespace
 * (sandbox_netns_make), sends a hello with its fd on the socket N, then
 * makes sockets there for whoever holds the other end (the server's
 * supervisor connects to a sandbox's abstract socket, or lists the Unix
 * sockets with sock_diag, from a socket of the sandbox's network
 * namespace): one per request, close-on-exec.  Only Unix sockets (stream,
 * seqpacket, datagram) and NETLINK_SOCK_DIAG are made (EPERM for the
 * rest).  Exits 0 when the other end is closed, 1 when it cannot talk.
 */
noreturn void sandbox_netns_keep(int sock);

/*
 * Joins the network namespace fd names (checked to be one), entering
 * first the user namespace that owns it unless that is the caller's own:
 * call before sandbox_ns_unshare, whose user namespace then nests in it.
 * *entered says whether it entered the owner's user namespace (the caller
 * holds every capability there from then on, joined or not).  Returns 0,
 * or -errno with *what naming the step that failed (the
 * caller may be in the owner's user namespace by then, never in the
 * network namespace).  Fails under $EXECGATE_SANDBOX_NO_NAMESPACES=1.
 */
int sandbox_netns_join(int fd, bool *entered, const char **what);

/*
 * Listens on 127.0.0.1 in the caller's network namespace, on a port the
 * kernel chooses.  Returns the listening socket (close-on-exec) with
 * *port set, or -errno with *what naming the step that failed.
 */
int sandbox_netns_listen(unsigned *port, const char **what);

/*
 * Moves the calling process into a new network namespace (it needs
 * CAP_NET_ADMIN and CAP_SYS_ADMIN over its user namespace: call after
 * sandbox_ns_unshare), brings its loopback up and listens on 127.0.0.1
 * on a port the kernel chooses (sandbox_netns_listen).  Returns the listening socket
 * (close-on-exec) with *port set, or -errno with *what naming the step
 * that failed.
 */
int sandbox_netns_enter(unsigned *port, const char **what);

/*
 * Sets the proxy variables for the command: HTTP_PROXY and HTTPS_PROXY
 * (http://127.0.0.1:PORT), ALL_PROXY (socks5h://127.0.0.1:PORT), and
 * NO_PROXY empty, each in upper and lower case, replacing inherited
 * values: with NO_PROXY naming a host, a client would try it directly and
 * reach nothing.  Returns 0 or -errno.
 */
int sandbox_netns_set_env(unsigned port);

#endif
