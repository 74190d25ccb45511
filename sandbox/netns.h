/*
 * netns: the network namespace a call's sandbox gets when its network is
 * reached only through the server's proxy (docs/network.md).
 *
 * The namespace holds nothing but its loopback interface; the helper
 * listens on 127.0.0.1 in it and hands the listening socket to the server
 * (--net-proxy-fd), whose proxy serves it from outside: a connection made
 * in the sandbox to that address is a connection to the proxy, and no
 * other address leads anywhere.  Knows nothing of MCP or libuv.
 */
#ifndef EXECGATE_SANDBOX_NETNS_H
#define EXECGATE_SANDBOX_NETNS_H

/*
 * Moves the calling process into a new network namespace (it needs
 * CAP_NET_ADMIN and CAP_SYS_ADMIN over its user namespace: call after
 * sandbox_ns_unshare), brings its loopback up and listens on 127.0.0.1
 * on a port the kernel chooses.  Returns the listening socket
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
