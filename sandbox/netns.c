/*
 * netns: a network namespace with only loopback, and a listener in it.
 */
#include "sandbox/netns.h"
#include "common/macros.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* A new namespace's loopback exists but is down. */
static int
loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int rc = 0;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        rc = -errno;
    } else {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
            rc = -errno;
    }
    close(s);
    return rc;
}

int
sandbox_netns_enter(unsigned *port, const char **what)
{
    if (unshare(CLONE_NEWNET) != 0) {
        *what = "unshare(CLONE_NEWNET)";
        return -errno;
    }
    int rc = loopback_up();
    if (rc < 0) {
        *what = "bringing the loopback interface up";
        return rc;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *what = "socket";
        return -errno;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        rc = -errno;
        close(fd);
        *what = "listening on 127.0.0.1";
        return rc;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

int
sandbox_netns_set_env(unsigned port)
{
    char http[64], socks[64];
    snprintf(http, sizeof http, "http://127.0.0.1:%u", port);
    snprintf(socks, sizeof socks, "socks5h://127.0.0.1:%u", port);
    static const char *const names[][2] = {{"HTTP_PROXY", "http_proxy"},
                                           {"HTTPS_PROXY", "https_proxy"},
                                           {"ALL_PROXY", "all_proxy"},
                                           {"NO_PROXY", "no_proxy"}};
    const char *values[] = {http, http, socks, ""};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        for (size_t j = 0; j < 2; j++)
            if (setenv(names[i][j], values[i], 1) != 0)
                return -errno;
    return 0;
}
